"""Sweeps: one question asked of many interventions at once — the directional-context sweep
over masked positions, single-head ablation over every head (batched), and the similarity of
learned vs sinusoidal position embeddings."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..attention import cosine_matrix
from ..attention.metrics import js_divergence
from ..bert import layer_hook
from ..bert.encoder.hook_table import every_layer
from ..bert.positions.relative import relative_position_bucket
from ..bert.positions.rotary import wavelengths
from ..lab import Analysis, Encoded, ForwardChanges, InputError, Lab, Readout, checked_text
from ..treebank import sentence_texts
from .compare import compare, probability_of
from .edits import batched_ablation_edits, learned_positions, scaled_sinusoidal
from .kinds import (
    NO_POSITION_TERMS,
    NO_RELATIVE_BIAS,
    InterventionError,
    has_absolute_positions,
    has_relative_bias,
    has_rotary_positions,
    make_intervention,
    need_absolute_positions,
    need_rotary_positions,
    position_term_hooks,
)
from .resample import ResamplePool, head_outputs, reference_for

Progress = Callable[[float, str], None]


CONDITIONS = ("both", "left-only", "right-only", "left-only-control", "right-only-control")


@dataclass
class DirectionalRow:
    position: int
    token: str  # the word at this position before masking ([MASK] when it was typed)
    baseline_top: str
    both: float
    left_only: float
    right_only: float
    left_control: float = float("nan")  # as many random keys hidden as left-only hides
    right_control: float = float("nan")
    target: str = ""  # the token scored: the gold word when known, else the full-context top-1
    scored: str = "top-1"  # "gold" or "top-1"


def condition_bias(tokens: Sequence[str], condition: str, sinks: str, seed: int) -> torch.Tensor | None:
    if condition == "both":
        return None
    options = {"sinks": sinks, "seed": seed} if condition.endswith("control") else {"sinks": sinks}
    return make_intervention(condition, **options).inputs(None, tokens).attention_bias


def directional_sweep(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = (),
                      sinks: str = "symmetric", seed: int = 0) -> list[DirectionalRow]:
    """For every masked position: probability of the gold word (when the user masked a known word;
    else the full-context top-1) when every layer sees both sides, only the left context, only the
    right context, and the matched random controls (symmetric sinks by default)."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so the directional sweep cannot score predictions")
    enc = lab.encode(text, pair, truncate=True)
    base = lab.analyze_encoded(enc, text, pair, Readout(masks=mask_positions, keep_probabilities=True))
    if not base.mlm:
        raise InputError("mask at least one token (type [MASK] or pick tokens) to run the directional sweep")
    runs = {c: lab.analyze_encoded(enc, text, pair, Readout(masks=mask_positions, keep_probabilities=True),
                                   changes=ForwardChanges(attention_bias=condition_bias(base.tokens, c, sinks, seed)))
            for c in CONDITIONS[1:]}
    rows = []
    for p in base.mlm:
        target = p.original or p.predictions[0].token
        value = {c: probability_of(runs[c], p.position, target, lab) for c in CONDITIONS[1:]}
        rows.append(DirectionalRow(p.position, p.original or p.token, p.predictions[0].token,
                                   probability_of(base, p.position, target, lab), value["left-only"],
                                   value["right-only"], value["left-only-control"], value["right-only-control"],
                                   target, "gold" if p.original else "top-1"))
    return rows


def mean_head_outputs(lab: Lab, texts: Sequence[str], batch_size: int = 32) -> torch.Tensor:
    """Each head's mean output over the word tokens of a reference set: (layers, heads, d_head)."""
    total, count = None, 0
    encoded = [lab.encode(t, truncate=True) for t in texts if t.strip()]
    for start in range(0, len(encoded), batch_size):
        batch = encoded[start:start + batch_size]
        tensors = lab.batch_tensors(batch)
        _, cache = lab.run(tensors, capture=(every_layer("context"),), compute_mlm=False)
        real = tensors["attention_mask"].bool() & ~torch.isin(tensors["input_ids"], torch.tensor(
            sorted(lab.special_ids), device=lab.device))  # (batch, positions): word tokens only
        sums = torch.stack([(cache[layer_hook(layer, "context")] * real[:, None, :, None]).sum((0, 2))
                            for layer in range(lab.n_layers)]).float().cpu()  # (layers, heads, d_head)
        total = sums if total is None else total + sums
        count += int(real.sum())
    if not count:
        raise InputError("the reference set has no words to average head outputs over")
    return total / count


def sample_mean_outputs(lab: Lab) -> torch.Tensor:
    """Every head's mean output over the shipped sample treebank's sentences: the mean-ablation
    reference the app and the command line use unless given another set."""
    return mean_head_outputs(lab, sentence_texts())


def scored_tokens(lab: Lab, base: Analysis) -> tuple[list[int], str]:
    """Token ids scored at each masked position: the gold words when the user masked known words,
    otherwise the full-context top-1 predictions; and which of the two."""
    if all(p.original for p in base.mlm):
        return [lab.tokenizer.token_to_id(p.original) for p in base.mlm], "gold"
    return [lab.tokenizer.token_to_id(p.predictions[0].token) for p in base.mlm], "top-1"


@dataclass(frozen=True)
class AblationRun:
    """How the heads are ablated: ``chunk`` ablated heads per batched forward (one at a time unless
    ``batched``), a ``progress`` callback, and ``measure`` mapping the (rows, masked, vocab)
    log-probabilities to one number per row (default: the targets' mean log-probability)."""

    batched: bool = True
    chunk: int = 72
    progress: Progress | None = None
    measure: Callable[[torch.Tensor], torch.Tensor] | None = None


def ablation_drops(lab: Lab, enc: Encoded, positions: Sequence[int], targets: Sequence[int],
                   reference: torch.Tensor | None = None, run: AblationRun | None = None) -> np.ndarray:
    """Drop in the mean log-probability of ``targets`` at ``positions`` when each head alone is
    replaced (zero, or ``reference`` outputs): (layers, heads), run as ``run`` says."""
    options = run or AblationRun()
    batched, chunk, progress, measure = options.batched, options.chunk, options.progress, options.measure
    layers, heads = lab.n_layers, lab.n_heads
    rows: list[tuple[int, int] | None] = [None] + [(l, h) for l in range(layers) for h in range(heads)]
    value = torch.empty(len(rows))
    target = torch.tensor(list(targets))
    size = chunk if batched else 1
    for start in range(0, len(rows), size):
        part = rows[start:start + size]
        tensors = lab.batch_tensors([enc] * len(part))
        select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
        select[:, list(positions)] = True
        edits = batched_ablation_edits(layers, heads, part, lab.device, reference)
        out, _ = lab.run(tensors, capture=(), edits=edits, mlm_positions=select)
        scores = torch.log_softmax(out.mlm_logits.float(), -1).view(len(part), len(positions), -1)  # (rows, masked, vocab)
        if measure is None:
            picked = scores.gather(2, target.to(scores.device)[None, :, None].expand(len(part), -1, 1))[..., 0]
            value[start:start + len(part)] = picked.mean(1).cpu()
        else:
            value[start:start + len(part)] = measure(scores).cpu()
        if progress is not None:
            progress(min(1.0, (start + len(part)) / len(rows)), f"ablated {start + len(part) - 1} of {len(rows) - 1} heads")
    return (value[0] - value[1:]).view(layers, heads).numpy()


@dataclass
class HeadImportance:
    """``drops``: (layers, heads) drop in log-probability of the scored words when each head alone is
    ablated; ``scored``: "gold" (the user masked known words) or "top-1" (see ``scored_tokens``)."""

    drops: np.ndarray
    scored: str


def ablation_sweep(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = (),
                   reference: torch.Tensor | ResamplePool | None = None, run: AblationRun | None = None
                   ) -> HeadImportance:
    """Drop in log-probability of the gold word (when the user masked known words; else of the
    baseline's top-1; see ``scored_tokens``), mean over masked positions, when each head alone is
    zeroed — or replaced by ``reference`` outputs (mean or resample ablation): (layers, heads).
    Positive = the head helped this prediction."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so head importance for predictions cannot be measured")
    base = lab.analyze(text, pair, masks=mask_positions, truncate=True)
    if not base.mlm:
        raise InputError("mask at least one token (type [MASK] or pick tokens) to run the ablation sweep")
    targets, scored = scored_tokens(lab, base)
    enc = base.encoded()
    drops = ablation_drops(lab, enc, [p.position for p in base.mlm], targets, reference_for(reference, enc), run)
    return HeadImportance(drops, scored)


@dataclass
class Patching:
    """Change in the logit difference (correct - wrong) at the target's [MASK] when one head's output
    (every position) or one layer's residual stream at the [MASK] comes from the donor input."""

    heads: np.ndarray  # (layers, heads)
    residual: np.ndarray  # (layers,)
    baseline: float  # logit difference in the target run
    donor: float  # logit difference in the donor run

def patching_sweep(lab: Lab, target: str, donor: str, correct: str, wrong: str) -> Patching:
    """Activation patching on a minimal pair (e.g. "The keys to the cabinet [MASK] on the table." vs
    "The key to the cabinet [MASK] on the table.", correct "are", wrong "is"): each head's output and each
    layer's residual stream at the [MASK] is taken from the ``donor`` run in turn."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so logit differences cannot be measured")
    enc_t, enc_d = lab.encode(target), lab.encode(donor)
    if len(enc_t.ids) != len(enc_d.ids):
        raise InputError(f"the two inputs must have the same number of tokens ({len(enc_t.ids)} vs {len(enc_d.ids)})")
    masks = [i for i, t in enumerate(enc_t.ids) if t == lab.mask_id]
    if len(masks) != 1 or enc_d.ids[masks[0]] != lab.mask_id:
        raise InputError("write exactly one [MASK], at the same position in both inputs")
    ids = [lab.tokenizer.token_to_id(checked_text(w, "the word")) for w in (correct, wrong)]
    missing = [(role, w) for role, w, i in zip(("correct", "wrong"), (correct, wrong), ids) if i is None]
    if missing:  # name only the word that is not one token, and what it becomes
        said = "; ".join(f"the {role} word {w!r} is not one token of the vocabulary (it is read as "
                         f"{' '.join(lab.tokenizer.encode(w, add_special_tokens=False).tokens) or 'nothing'})"
                         for role, w in missing)
        raise InputError(f"{said}: choose a word that is one token")
    position = masks[0]

    def difference(scores: torch.Tensor) -> torch.Tensor:  # (rows, 1, vocab) log-probabilities
        return scores[:, 0, ids[0]] - scores[:, 0, ids[1]]

    heads = -ablation_drops(lab, enc_t, [position], [ids[0]], head_outputs(lab, enc_d), AblationRun(measure=difference))
    _, cache = lab.run(lab.batch_tensors([enc_d]), capture=(every_layer("out"),), compute_mlm=False)
    rows = lab.n_layers + 1
    edits = {}
    for layer in range(lab.n_layers):
        patched = cache[layer_hook(layer, "out")][0, position]

        def edit(hidden: torch.Tensor, _name: str, layer=layer, patched=patched) -> torch.Tensor:
            hidden = hidden.clone()  # (rows, positions, d_model): row layer + 1 patches this layer
            hidden[layer + 1, position] = patched
            return hidden

        edits[layer_hook(layer, "out")] = edit
    tensors = lab.batch_tensors([enc_t] * rows)
    select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
    select[:, position] = True
    out, _ = lab.run(tensors, capture=(), edits=edits, mlm_positions=select)
    diffs = difference(torch.log_softmax(out.mlm_logits.float(), -1)[:, None, :]).cpu().numpy()
    out_d, _ = lab.run(lab.batch_tensors([enc_d]), capture=(), mlm_positions=select[:1])
    donor_diff = float(difference(torch.log_softmax(out_d.mlm_logits.float(), -1)[:, None, :])[0])
    return Patching(heads, diffs[1:] - diffs[0], float(diffs[0]), donor_diff)


POSITION_KINDS = ("zero-positions", "sinusoidal-positions", "random-positions", "shift-positions", "shuffle-positions")
RELATIVE_BIAS_KINDS = ("zero-relative-bias", "zero-relative-bias-control")  # only where the model has the bias
POSITION_TERM_KINDS = ("zero-position-terms", "zero-position-terms-control")  # DeBERTa's c2p and p2c
ROTARY_KINDS = ("rotate-positions", "disable-rotary", "disable-rotary-control")  # ModernBERT's rotary positions


def position_kinds(lab: Lab) -> tuple[str, ...]:
    """The positional interventions (each next to its control) that apply to this model's position scheme."""
    return ((POSITION_KINDS if has_absolute_positions(lab.model) else ())
            + (RELATIVE_BIAS_KINDS if has_relative_bias(lab.model) else ())
            + (POSITION_TERM_KINDS if position_term_hooks(lab.model) else ())
            + (ROTARY_KINDS if has_rotary_positions(lab.model) else ()))


@dataclass(frozen=True)
class RotaryBands:
    """ModernBERT's rotary frequency bands: coordinate pair c (c and c + d_head / 2) of every head turns by
    2 pi / wavelength per token, wavelength = 2 pi theta^(2c / d_head) tokens (Su et al. 2021), with the global
    layers' theta and the local layers'. Short wavelengths tell neighbours apart; bands far longer than the input
    (or, in a local layer, than its window) barely turn across it and act as position-free channels."""

    global_theta: float
    local_theta: float
    half_window: int  # a local layer sees keys at most this many tokens away
    global_layers: list[int]  # 1-based
    local_layers: list[int]  # 1-based
    global_wavelengths: np.ndarray  # (d_head / 2,) tokens per full turn of each pair
    local_wavelengths: np.ndarray  # (d_head / 2,)

    def rows(self) -> list[dict]:
        """One row per band (1-based pair), the table the inspector shows."""
        return [{"band": c + 1, "global wavelength (tokens)": float(g), "local wavelength (tokens)": float(lo)}
                for c, (g, lo) in enumerate(zip(self.global_wavelengths, self.local_wavelengths))]


def rotary_bands(lab: Lab) -> RotaryBands:
    """The position inspector's rotary geometry: each frequency band's wavelength in tokens, for global and local
    layers; refused (InterventionError) for a model without rotary positions."""
    need_rotary_positions(lab.model)
    spec, d_head = lab.model.scheme("rotary").spec, lab.model.config.head_dim
    layers = range(len(spec.types))
    return RotaryBands(spec.global_theta, spec.local_theta, spec.half_window,
                       [i + 1 for i in layers if spec.is_global(i)], [i + 1 for i in layers if not spec.is_global(i)],
                       wavelengths(spec.global_theta, d_head).numpy(), wavelengths(spec.local_theta, d_head).numpy())


def masked_word_shift(lab: Lab, c) -> tuple[float, float]:
    """(JS divergence in nats between the masked-word distributions before and after, averaged over the masked
    positions; mean rank after of the gold word, 1 = first). The gold word is the token that stood at a picked
    position, or the baseline's top word at a typed [MASK], which has none. NaN without masked positions."""
    before, after = c.baseline.mlm_probabilities, c.intervened.mlm_probabilities  # (masked, vocab) each
    if before is None or after is None or not len(c.changes):
        return float("nan"), float("nan")
    js = float(js_divergence(before[None], after[None]).mean())
    ranks = []
    for row, change in enumerate(c.changes):
        gold = change.token if change.token != lab.tokenizer.id_to_token(lab.mask_id) else change.baseline_top
        gold_id = lab.tokenizer.token_to_id(gold)
        if gold_id is not None:
            ranks.append(1 + int((after[row] > after[row, gold_id]).sum()))
    return js, float(np.mean(ranks)) if ranks else float("nan")


def position_controls(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = (),
                      shift: int = 10, seed: int = 0) -> list[dict]:
    """Every positional intervention with its controls on the same input, side by side: the mean JS divergence
    of attention, and at the masked positions the mean change in P(baseline top-1), the JS divergence of the
    masked-word distribution and the rank of the gold word after (measures that tell the interventions apart
    where P(top-1) moves alike)."""
    rows = []
    for kind in position_kinds(lab):
        c = compare(lab, text, make_intervention(kind, shift=shift, seed=seed), pair=pair,
                    readout=Readout(masks=mask_positions))
        change = float(np.mean([x.change for x in c.changes])) if c.changes else float("nan")
        js, rank = masked_word_shift(lab, c)
        rows.append({"intervention": c.intervention.describe(), "mean JS (nats)": float(c.js.mean()),
                     "change in P(top-1)": change, "masked-word JS (nats)": js, "gold word's rank after": rank})
    return rows


def position_similarity(lab: Lab, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity of the first n learned position embeddings, and of the sinusoidal ones."""
    limit = lab.model.config.max_tokens
    if not 2 <= n <= limit:
        raise InterventionError(f"choose between 2 and {limit} positions")
    need_absolute_positions(lab.model)
    learned = learned_positions(lab.model, n).cpu()
    return cosine_matrix(learned), cosine_matrix(scaled_sinusoidal(lab.model, n))


@dataclass
class RelativeEmbeddingSimilarity:
    """DeBERTa's relative-position embeddings (one table every layer reads, after the encoder's LayerNorm) as
    the position inspector draws them: the cosine similarity of the rows n tokens use, each row labelled by
    its bucketed offset (query − key, transformers' ``build_relative_position``)."""

    cosine: np.ndarray  # (rows, rows)
    labels: list[str]


def relative_embedding_similarity(lab: Lab, n: int) -> RelativeEmbeddingSimilarity:
    scheme = lab.model.scheme("disentangled")
    positions = scheme.pass_state(lab.model, torch.arange(n)[None], None, n, torch.float32) if scheme else None
    if positions is None:
        raise InterventionError(NO_POSITION_TERMS)
    span = scheme.spec.span
    rows = sorted(set(positions.c2p_index.flatten().tolist()))  # the table rows these n tokens read
    with torch.no_grad():
        table = positions.table[rows].float().cpu()  # (rows, d_model)
    return RelativeEmbeddingSimilarity(cosine_matrix(table), [f"{row - span:+d}" if row != span else "0" for row in rows])


def offset_range(offsets: Sequence[int]) -> str:
    """A bucket's offsets (key - query) as a label: "0", "+3", "-11..-8"."""
    low, high = min(offsets), max(offsets)
    signed = [f"{o:+d}" if o else "0" for o in (low, high)]
    return signed[0] if low == high else f"{signed[0]}..{signed[1]}"


@dataclass
class RelativeBiasTable:
    """MPNet's relative-position bias as the position inspector draws it: ``values`` (heads, buckets), the
    buckets ordered by offset (key - query) from the farthest earlier key to the farthest later one, each
    bucket's ``offsets`` (the key - query offsets this model's inputs can put in it) and their ``labels``."""

    values: np.ndarray  # (heads, buckets)
    offsets: list[list[int]]
    labels: list[str]
    buckets: list[int]  # the table row of each column


def relative_bias_table(lab: Lab) -> RelativeBiasTable:
    """The learned bias per head and offset bucket (one table for every layer); buckets no offset of an input
    this model takes can reach (T5's "0 away, later" bucket) are left out."""
    if not has_relative_bias(lab.model):
        raise InterventionError(NO_RELATIVE_BIAS)
    weight = lab.model.get_submodule("bert.encoder.relative_attention_bias").weight.detach().float().cpu()  # (buckets, heads)
    limit = lab.model.config.max_tokens
    offsets = torch.arange(-(limit - 1), limit)  # every key - query an input of this model can have
    bucket_of = relative_position_bucket(offsets).tolist()
    members: dict[int, list[int]] = {}
    for offset, bucket in zip(offsets.tolist(), bucket_of):
        members.setdefault(bucket, []).append(offset)
    order = sorted(members, key=lambda b: float(np.mean(members[b])))
    return RelativeBiasTable(weight[order].T.numpy(), [members[b] for b in order],
                             [offset_range(members[b]) for b in order], order)
