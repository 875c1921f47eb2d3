"""Interventions over a set of sentences, with intervals: one masked word per line (seeded, the
gold word known), the effect averaged over sentences with a 95% percentile bootstrap interval
over sentences. A single sentence shows what happens; a set with an interval supports a claim."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from ..conclusions import verdict
from ..engines import LOCAL, Engine, run_units
from ..lab import InputError, Lab
from ..naming import head_name
from ..sentences import masked_items, truncated_count
from .resample import ResamplePool, reference_for
from .sweeps import CONDITIONS, ablation_drops, condition_bias

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SetSettings:
    """How a sentence set is drawn and summarised: the seed of the masked words (and of the
    controls), at most ``max_sentences`` lines, and the bootstrap's resamples. Every ``*_set`` function
    takes one (``settings=``; None: these defaults, 500 sentences for the directional set). ``engine``: where
    the sentences run (``engines.py``: local or Ray), each a unit with its seed inside it, so the records and
    intervals are the same on either."""

    seed: int = 0
    max_sentences: int | None = 200
    resamples: int = 1000
    engine: Engine = LOCAL


@dataclass
class Effect:
    """A mean over sentences with its 95% bootstrap interval (scalars, or arrays such as (layers, heads))."""

    mean: np.ndarray | float
    ci_low: np.ndarray | float
    ci_high: np.ndarray | float
    n: int

    def to_json(self) -> dict:
        """The one way an effect is written out: JSON (the command line) and table rows (the app)."""
        def plain(value):
            return value.tolist() if hasattr(value, "tolist") else float(value)

        return {"mean": plain(self.mean), "ci_low": plain(self.ci_low), "ci_high": plain(self.ci_high), "n": self.n}


@dataclass
class Difference:
    """A paired difference ``a - b`` over the same sentences, with its interval and the conclusion
    the interval supports (``conclusions.verdict``): what a comparison prints, never hand-written."""

    a: str
    b: str
    effect: Effect

    def verdict(self) -> str:
        return verdict(float(self.effect.ci_low), float(self.effect.ci_high), self.a, self.b)

    def to_json(self) -> dict:
        e = self.effect.to_json()
        return {"a": self.a, "b": self.b, "difference": e["mean"], "difference_ci": [e["ci_low"], e["ci_high"]],
                "n": e["n"], "verdict": self.verdict()}


def paired_difference(values: dict[str, np.ndarray], a: str, b: str, resamples: int, seed: int) -> Difference:
    """``a - b`` per sentence, then its mean with a bootstrap interval over sentences."""
    return Difference(a, b, mean_interval(values[a] - values[b], resamples, seed))


@dataclass
class DirectionalSet:
    """Mean P(gold) per condition, and the paired differences the directional claims rest on."""

    effects: dict[str, Effect]
    differences: list[Difference]
    truncated: int = 0  # lines cut to SET_MAX_TOKENS

    def to_json(self) -> dict:
        return {"p_gold": {c: e.to_json() for c, e in self.effects.items()},
                "differences": [d.to_json() for d in self.differences], "truncated_lines": self.truncated}


DIRECTIONAL_CLAIMS = (("left-only", "left-only-control"), ("right-only", "right-only-control"),
                      ("left-only", "right-only"))


def effects_table(effects: dict[str, Effect], name: str = "measure", mean: str = "mean") -> list[dict]:
    """Rows of named scalar effects: {name: key, mean: ..., ci_low, ci_high, n}."""
    rows = []
    for key, effect in effects.items():
        row = effect.to_json()
        rows.append({name: key, mean: row.pop("mean"), **row})
    return rows


def mean_interval(values: np.ndarray, resamples: int = 1000, seed: int = 0) -> Effect:
    """Mean over the first axis (sentences) with a percentile bootstrap interval over sentences."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if not n:
        raise InputError("no sentence to average over")
    if not resamples:  # no interval asked for: it collapses onto the mean
        return Effect(values.mean(0), values.mean(0), values.mean(0), n)
    draws = values[np.random.default_rng(seed).integers(0, n, size=(resamples, n))].mean(1)
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return Effect(values.mean(0), low, high, n)


def items_of(lab: Lab, lines: Sequence[str], seed: int, max_sentences: int | None):
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so effects on masked words cannot be measured")
    items = masked_items(lab, lines, seed, max_sentences)
    if not items:
        raise InputError("no line has a whole word to mask")
    return items


def directional_unit(lab: Lab, unit: tuple, sinks: str) -> np.ndarray:
    """P(gold) of one masked sentence, ``unit`` = (enc, position, gold, seed of its random controls), under
    every condition (both sides, left, right, their controls) in one batch: (conditions,)."""
    enc, position, gold, seed = unit
    n = len(enc.ids)
    biases = [condition_bias(enc.tokens, c, sinks, seed) for c in CONDITIONS]
    bias = torch.stack([torch.zeros((1, n, n)) if b is None else b[0].expand(1, n, n) for b in biases])
    tensors = lab.batch_tensors([enc] * len(CONDITIONS))
    select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
    select[:, position] = True
    out, _ = lab.run(tensors, capture=(), attention_bias=bias.to(lab.device), mlm_positions=select)
    return torch.softmax(out.mlm_logits.float(), -1)[:, gold].cpu().numpy()


def directional_set(lab: Lab, lines: Sequence[str], sinks: str = "symmetric", progress: Progress | None = None,
                    settings: SetSettings | None = None) -> DirectionalSet:
    """Mean P(gold) with both sides, left only, right only and the matched random controls, and the
    paired differences (each directional mask minus its control; left minus right) with intervals
    (``settings``: None is 500 sentences)."""
    chosen = settings or SetSettings(max_sentences=500)
    seed, max_sentences, resamples = chosen.seed, chosen.max_sentences, chosen.resamples
    items = items_of(lab, lines, seed, max_sentences)
    units = [(enc, position, gold, seed + row) for row, (enc, position, gold) in enumerate(items)]
    values = np.stack(run_units(lab, partial(directional_unit, sinks=sinks), units, chosen.engine, progress))
    by_condition = {c: values[:, i] for i, c in enumerate(CONDITIONS)}
    return DirectionalSet({c: mean_interval(v, resamples, seed) for c, v in by_condition.items()},
                          [paired_difference(by_condition, a, b, resamples, seed) for a, b in DIRECTIONAL_CLAIMS],
                          truncated_count(items))


@dataclass
class HeldOutHead:
    """The head with the largest mean effect on one seeded half of the sentences (``selected_on``
    of them), and its effect measured on the other half only: the best of many heads, quoted with an
    interval that was not used to pick it."""

    layer: int  # 0-based
    head: int  # 0-based
    effect: Effect  # on the other half
    selected_on: int

    def to_json(self) -> dict:
        return {"head": head_name(self.layer, self.head), "selected_on": self.selected_on,
                "heldout": self.effect.to_json()}


def heldout_best_head(values: np.ndarray, resamples: int = 1000, seed: int = 0,
                      fraction: float = 0.5) -> HeldOutHead | None:
    """``values`` (sentences, layers, heads): choose on a seeded ``fraction`` of the sentences, report
    on the rest (None with fewer than two sentences)."""
    n = len(values)
    if n < 2:
        return None
    order = np.random.default_rng(seed).permutation(n)
    cut = min(n - 1, max(1, int(round(fraction * n))))
    select, report = order[:cut], order[cut:]
    layer, head = np.unravel_index(int(np.argmax(values[select].mean(0))), values.shape[1:])
    return HeldOutHead(int(layer), int(head), mean_interval(values[report][:, layer, head], resamples, seed), cut)


@dataclass
class AblationSet:
    """Mean drop in log P(gold) per head (layers, heads) over the sentences, with intervals, and the
    most important head chosen and measured on separate halves."""

    effect: Effect
    most_important: HeldOutHead | None
    truncated: int = 0  # lines cut to SET_MAX_TOKENS

    def to_json(self) -> dict:
        return {"drop_in_log_probability": self.effect.to_json(),
                "most_important_head": self.most_important.to_json() if self.most_important else None,
                "truncated_lines": self.truncated}


@dataclass
class CompareSet:
    """Any intervention's effects over a sentence set (mean JS divergence, change in P(gold))."""

    effects: dict[str, Effect]
    truncated: int = 0  # lines cut to SET_MAX_TOKENS

    def to_json(self) -> dict:
        return {**{name: e.to_json() for name, e in self.effects.items()}, "truncated_lines": self.truncated}


def on_cpu(tensor: torch.Tensor | None) -> torch.Tensor | None:
    return tensor.cpu() if tensor is not None else None


def ablation_unit(lab: Lab, unit: tuple) -> np.ndarray:
    """Drop in log P(gold) per head of one masked sentence, ``unit`` = (enc, position, gold, what replaces an
    ablated head: None, a mean output or a pool's draw): (layers, heads)."""
    enc, position, gold, reference = unit
    return ablation_drops(lab, enc, [position], [gold], reference.to(lab.device) if reference is not None else None)


def ablation_set(lab: Lab, lines: Sequence[str], reference: torch.Tensor | ResamplePool | None = None,
                 progress: Progress | None = None, settings: SetSettings | None = None) -> AblationSet:
    """Drop in log P(gold) per head when it alone is ablated, over sentences with one masked word each."""
    chosen = settings or SetSettings()
    seed, max_sentences, resamples = chosen.seed, chosen.max_sentences, chosen.resamples
    items = items_of(lab, lines, seed, max_sentences)
    units = [(enc, position, gold, on_cpu(reference_for(reference, enc, draw=row)))
             for row, (enc, position, gold) in enumerate(items)]
    drops = np.stack(run_units(lab, ablation_unit, units, chosen.engine, progress))  # (sentences, layers, heads)
    return AblationSet(mean_interval(drops, resamples, seed), heldout_best_head(drops, resamples, seed),
                       truncated_count(items))


MEASURES = ("mean JS (nats)", "change in P(gold)")


def compare_unit(lab: Lab, unit: tuple, intervention) -> tuple[float, float]:
    """One masked sentence, ``unit`` = (enc, position, gold), under ``intervention``: (mean JS divergence of
    attention in nats, change in P(gold) at the masked word)."""
    from .compare import compare, probability_of

    enc, position, gold = unit
    c = compare(lab, "", intervention, encoded=enc)
    token = lab.tokenizer.id_to_token(gold)
    return (float(c.js.mean()),
            probability_of(c.intervened, position, token, lab) - probability_of(c.baseline, position, token, lab))


def compare_values(lab: Lab, items, intervention, progress: Progress | None = None,
                   engine: Engine = LOCAL) -> dict[str, np.ndarray]:
    """Per sentence, for one intervention: mean JS divergence of attention (nats) and the change in
    P(gold) at its masked word: {measure: (sentences,)}."""
    pairs = np.array(run_units(lab, partial(compare_unit, intervention=intervention), list(items), engine,
                               progress)).reshape(len(items), 2)  # (sentences, measures)
    js, change = pairs[:, 0], pairs[:, 1]
    return dict(zip(MEASURES, (js, change)))


def compare_set(lab: Lab, lines: Sequence[str], intervention, progress: Progress | None = None,
                settings: SetSettings | None = None) -> CompareSet:
    """Any intervention over sentences (one seeded masked word each, the gold word known): the mean
    JS divergence of attention (nats) and the mean change in P(gold), each with its interval."""
    chosen = settings or SetSettings()
    seed, max_sentences, resamples = chosen.seed, chosen.max_sentences, chosen.resamples
    items = items_of(lab, lines, seed, max_sentences)
    values = compare_values(lab, items, intervention, progress, chosen.engine)
    return CompareSet({m: mean_interval(v, resamples, seed) for m, v in values.items()}, truncated_count(items))


@dataclass
class InterventionAndControl:
    """An intervention and its control on the same sentences: each one's effects and, per measure,
    the paired difference intervention - control with the sentence its interval supports."""

    intervention: CompareSet
    control: CompareSet
    differences: list[Difference]

    def to_json(self) -> dict:
        return {"intervention": self.intervention.to_json(), "control": self.control.to_json(),
                "differences": [d.to_json() for d in self.differences]}


def intervention_and_control(lab: Lab, lines: Sequence[str], intervention, control,
                             settings: SetSettings | None = None) -> InterventionAndControl:
    """``intervention`` and ``control`` over the same masked sentences, compared sentence by sentence."""
    chosen = settings or SetSettings()
    seed, resamples = chosen.seed, chosen.resamples
    items = items_of(lab, lines, seed, chosen.max_sentences)
    a, b = (compare_values(lab, items, intervention, engine=chosen.engine),
            compare_values(lab, items, control, engine=chosen.engine))
    cut = truncated_count(items)
    differences = [Difference(f"{intervention.describe()} ({m})", f"{control.describe()} ({m})",
                              mean_interval(a[m] - b[m], resamples, seed)) for m in MEASURES]
    return InterventionAndControl(CompareSet({m: mean_interval(v, resamples, seed) for m, v in a.items()}, cut),
                                  CompareSet({m: mean_interval(v, resamples, seed) for m, v in b.items()}, cut),
                                  differences)


def patching_unit(lab: Lab, pair: tuple[str, str, str, str]) -> tuple[np.ndarray, np.ndarray]:
    """One minimal pair (target, donor, correct, wrong) patched: the change in the logit difference per head
    (layers, heads) and per layer's residual stream (layers,)."""
    from .sweeps import patching_sweep

    result = patching_sweep(lab, *pair)
    return result.heads, result.residual


def patching_set(lab: Lab, pairs: Sequence[tuple[str, str, str, str]], resamples: int = 1000, seed: int = 0,
                 progress: Progress | None = None, engine: Engine = LOCAL) -> tuple[Effect, Effect]:
    """Activation patching over minimal pairs (target, donor, correct, wrong): the mean change in
    the logit difference per head (layers, heads) and per layer's residual stream, with intervals."""
    if not pairs:
        raise InputError("no minimal pair to patch")
    results = run_units(lab, patching_unit, list(pairs), engine, progress)
    heads, residual = [h for h, _ in results], [r for _, r in results]
    return mean_interval(np.stack(heads), resamples, seed), mean_interval(np.stack(residual), resamples, seed)


def read_pairs(path: str) -> list[tuple[str, str, str, str]]:
    """Minimal pairs, one per line: ``target | donor | correct | wrong`` (tab or " | " separated)."""
    from pathlib import Path

    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text (byte {error.start} cannot be decoded)") from None
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in (line.split("\t") if "\t" in line else line.split(" | "))]
        if len(parts) != 4:
            raise InputError(f"{path}:{number}: expected 4 fields (target | donor | correct | wrong), "
                             f"found {len(parts)}")
        pairs.append(tuple(parts))
    return pairs
