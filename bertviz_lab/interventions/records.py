"""Each intervention question the command line asks, answered as one JSON-ready record that names
the weights it came from: a compare, a sweep or a patching run over one input or a sentence set,
and the position-embedding similarity. The command line only chooses and prints; notebooks and
scripts get the same records from here.

Why records live here and not in the command line: what a sweep over a set averages, which
reference an ablation draws from and what a patching run reports are facts of the method, and a
second caller must not re-derive them."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..engines import LOCAL, Engine
from ..lab import InputError, Lab
from ..naming import head_name
from ..sentences import read_lines
from ..treebank import SAMPLE_TREEBANK, sentence_texts
from .resample import ResamplePool
from .sets import SetSettings, ablation_set, directional_set, patching_set, read_pairs
from .sweeps import (
    ablation_sweep,
    directional_sweep,
    mean_head_outputs,
    patching_sweep,
    position_controls,
    position_similarity,
    sample_mean_outputs,
)

Progress = Callable[[int, int], None]
SWEEP_KINDS = ("directional", "ablation", "positions")
SET_SWEEP_KINDS = ("directional", "ablation")


@dataclass(frozen=True)
class Ablation:
    """What replaces an ablated head's output: zeros, its mean over reference lines, or its output
    on a reference line drawn (seeded) position by position (the sample treebank's sentences unless
    a reference file or one resample text is given)."""

    mode: str = "zero"  # zero | mean | resample
    reference_file: Path | None = None
    resample_text: str | None = None
    seed: int = 0


@dataclass(frozen=True)
class Sweep:
    """One sweep's question: its kind and the options of the input it runs on."""

    kind: str
    pair: str | None = None
    mask: tuple[int, ...] = ()
    sinks: str = "symmetric"
    seed: int = 0
    shift: int = 10
    ablation: Ablation = field(default_factory=Ablation)


def weights_of(lab: Lab) -> str:
    """The weights a record came from, as every table and record names them."""
    return lab.checkpoint_info().describe()


def top_heads(values, k: int = 5) -> list[dict]:
    """The ``k`` heads with the largest values of a (layers, heads) array, named 1-based ("3-5")."""
    table = np.asarray(values, dtype=np.float64)  # (layers, heads)
    order = np.argsort(-table, axis=None, kind="stable")[:k]
    return [{"head": head_name(*(int(x) for x in np.unravel_index(i, table.shape))), "value": float(table.flat[i])}
            for i in order]


def ablation_reference(lab: Lab, ablation: Ablation):
    """The reference head outputs an ablation mode needs (None for zero ablation)."""
    if ablation.mode == "zero":
        return None
    lines = read_lines(ablation.reference_file) if ablation.reference_file else None
    if ablation.mode == "resample":
        pool = [ablation.resample_text] if ablation.resample_text else lines if lines is not None else sentence_texts()
        return ResamplePool(lab, pool, seed=ablation.seed)
    return mean_head_outputs(lab, lines) if lines is not None else sample_mean_outputs(lab)


def sentence_set(text_file: Path | None = None, conllu: Path | None = None) -> list[str]:
    """A sentence set's lines: a text file (one per line), a CoNLL-U file's sentences, or the
    shipped sample treebank's sentences when neither is given."""
    return read_lines(text_file) if text_file is not None else sentence_texts(conllu or SAMPLE_TREEBANK)


def sweep_record(lab: Lab, text: str, sweep: Sweep) -> dict:
    """A sweep over one input: directional conditions per masked position, every head ablated
    alone, or every positional intervention with its controls."""
    if sweep.kind not in SWEEP_KINDS:
        raise InputError(f"unknown sweep {sweep.kind!r}; choose one of {', '.join(SWEEP_KINDS)}")
    head = {"model": weights_of(lab), "kind": sweep.kind}
    if sweep.kind == "directional":
        rows = directional_sweep(lab, text, pair=sweep.pair, mask_positions=sweep.mask, sinks=sweep.sinks,
                                 seed=sweep.seed)
        return {**head, "sinks": sweep.sinks, "rows": [r.__dict__ for r in rows]}
    if sweep.kind == "ablation":
        importance = ablation_sweep(lab, text, pair=sweep.pair, mask_positions=sweep.mask,
                                    reference=ablation_reference(lab, sweep.ablation))
        return {**head, "ablation": sweep.ablation.mode, "drop_in_log_probability": importance.drops.tolist(),
                "scored": importance.scored, "layers": lab.n_layers, "heads": lab.n_heads,
                "top_heads": top_heads(importance.drops)}
    return {**head, "rows": position_controls(lab, text, pair=sweep.pair, mask_positions=sweep.mask,
                                              shift=sweep.shift, seed=sweep.seed)}


def sweep_set_record(lab: Lab, lines: Sequence[str], sweep: Sweep, max_sentences: int | None = 500,
                     progress: Progress | None = None, engine: Engine = LOCAL) -> dict:
    """A directional or ablation sweep over a sentence set, one seeded masked gold word per line (each a unit
    on ``engine``)."""
    if sweep.kind not in SET_SWEEP_KINDS:
        raise InputError("a sweep over a sentence set is directional or ablation (for positions, compare each "
                         "positional intervention over the set)")
    head = {"model": weights_of(lab), "kind": sweep.kind, "scored": "gold"}
    if sweep.kind == "directional":
        effects = directional_set(lab, lines, sinks=sweep.sinks, progress=progress,
                                  settings=SetSettings(seed=sweep.seed, max_sentences=max_sentences, engine=engine))
        return {**head, "sinks": sweep.sinks, **effects.to_json()}
    result = ablation_set(lab, lines, ablation_reference(lab, sweep.ablation), progress=progress,
                          settings=SetSettings(seed=sweep.seed, max_sentences=max_sentences, engine=engine))
    return {**head, "ablation": sweep.ablation.mode, **result.to_json()}


def patch_record(lab: Lab, target: str, donor: str, correct: str, wrong: str) -> dict:
    """Activation patching on one minimal pair: each head's output and each layer's residual at the
    [MASK] from the donor input into the target; change in the logit difference correct - wrong."""
    result = patching_sweep(lab, target, donor, correct, wrong)
    return {"model": weights_of(lab), "correct": correct, "wrong": wrong,
            "baseline_logit_difference": result.baseline, "donor_logit_difference": result.donor,
            "heads": result.heads.tolist(), "residual": result.residual.tolist(), "top_heads": top_heads(result.heads)}


def patch_set_record(lab: Lab, pairs_file: Path, progress: Progress | None = None, engine: Engine = LOCAL) -> dict:
    """Activation patching over the minimal pairs of a file (target | donor | correct | wrong per
    line): the mean change per head and per layer's residual, with 95% intervals (each pair a unit on ``engine``)."""
    heads, residual = patching_set(lab, read_pairs(pairs_file), progress=progress, engine=engine)
    return {"model": weights_of(lab), "pairs": heads.n, "heads": heads.to_json(), "residual": residual.to_json(),
            "top_heads": top_heads(heads.mean)}


def positions_record(lab: Lab, n: int) -> dict:
    """Cosine similarity of the first n learned position embeddings, and of the sinusoidal ones."""
    learned, sinusoid = position_similarity(lab, n)
    return {"model": weights_of(lab), "n": n, "learned": learned.round(5).tolist(),
            "sinusoidal": sinusoid.round(5).tolist(),  # (n, n) each
            "neighbour_similarity": {"learned": float(np.diagonal(learned, 1).mean()),
                                     "sinusoidal": float(np.diagonal(sinusoid, 1).mean())}}
