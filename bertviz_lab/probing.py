"""Run an input twice — baseline and probed — and measure what changed; plus the sweeps
(directional context over masked positions, single-head ablation over all heads)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .analysis import Analysis, Encoded, InputError, Lab
from .interventions import (Probe, ProbeError, batched_ablation_edits, cosine_matrix, directional_bias,
                            js_divergence, probe_inputs, relative_offset_profile, scaled_sinusoidal)

Progress = Callable[[float, str], None]


@dataclass
class PredictionChange:
    position: int
    token: str  # the token in the input at this position (before any masking)
    baseline_top: str
    baseline_probability: float
    probed_probability: float  # of the baseline's top token
    probed_top: str
    probed_top_probability: float

    @property
    def change(self) -> float:
        return self.probed_probability - self.baseline_probability


@dataclass
class Comparison:
    probe: Probe
    baseline: Analysis
    probed: Analysis  # attention re-indexed to the baseline's token order
    js: np.ndarray  # (layers, heads) Jensen-Shannon divergence, nats
    changes: list[PredictionChange] = field(default_factory=list)
    offsets_before: np.ndarray | None = None  # (layers, heads, 11) mean attention at offsets -5..+5
    offsets_after: np.ndarray | None = None
    note: str = ""

    def to_json(self) -> dict:
        return {
            "probe": self.probe.describe(), "tokens": self.baseline.tokens,
            "js_divergence": self.js.tolist(),
            "prediction_changes": [{**c.__dict__, "change": c.change} for c in self.changes],
            "offsets": list(range(-5, 6)),
            "offset_profile_before": None if self.offsets_before is None else self.offsets_before.tolist(),
            "offset_profile_after": None if self.offsets_after is None else self.offsets_after.tolist(),
            "note": self.note,
        }


def _probability(analysis: Analysis, position: int, token: str, lab: Lab) -> float:
    if analysis.mlm_probabilities is None:
        return float("nan")
    rows = [p.position for p in analysis.mlm]
    if position not in rows:
        return float("nan")
    return float(analysis.mlm_probabilities[rows.index(position), lab.tokenizer.token_to_id(token)])


def _reorder(analysis: Analysis, order: list[int]) -> Analysis:
    """Map an analysis of shuffled input back to the original token order."""
    inverse = np.argsort(order)
    analysis.attention = analysis.attention[..., inverse, :][..., :, inverse]
    for name in ("tokens", "token_ids", "segment_ids", "word_ids", "offsets"):
        values = getattr(analysis, name)
        setattr(analysis, name, [values[i] for i in inverse])
    for p in analysis.mlm:
        p.position = int(order[p.position])
    return analysis


def compare(lab: Lab, text: str, probe: Probe, pair: str | None = None, mask_positions: Sequence[int] = (),
            top_k: int = 5) -> Comparison:
    """Baseline vs probed run of one input. ``mask_positions`` are masked in both runs."""
    predict_at = list(probe.positions) if probe.kind == "mask-tokens" else []
    base = lab.analyze(text, pair=pair, top_k=top_k, mask_positions=mask_positions, positions=predict_at,
                       truncate=True, keep_probabilities=True)
    inputs = probe_inputs(probe, lab.model, base.tokens)
    masks = sorted(set(mask_positions) | set(inputs.mask_positions))
    if inputs.token_order is not None:
        order = inputs.token_order
        enc = Encoded([base.tokens[i] for i in order], [base.token_ids[i] for i in order], base.segment_ids,
                      [base.word_ids[i] for i in order], [base.offsets[i] for i in order], len(order))
        inverse = [int(i) for i in np.argsort(order)]
        probed = lab.analyze(text, pair=pair, top_k=top_k, encoded=enc, keep_probabilities=True,
                             positions=[inverse[p.position] for p in base.mlm])
        probed = _reorder(probed, order)
    else:
        probed = lab.analyze(text, pair=pair, top_k=top_k, mask_positions=masks, positions=predict_at,
                             truncate=True, attention_bias=inputs.attention_bias, position_ids=inputs.position_ids,
                             edits=inputs.edits or None, keep_probabilities=True)
    changes = []
    probed_by_pos = {p.position: p for p in probed.mlm}
    for p in base.mlm:
        top = p.predictions[0]
        after = probed_by_pos.get(p.position)
        if after is None:
            continue
        changes.append(PredictionChange(p.position, p.original or lab.tokenizer.id_to_token(base.token_ids[p.position]),
                                        top.token, top.probability, _probability(probed, p.position, top.token, lab),
                                        after.predictions[0].token, after.predictions[0].probability))
    return Comparison(probe, base, probed, js_divergence(base.attention, probed.attention), changes,
                      relative_offset_profile(base.attention), relative_offset_profile(probed.attention),
                      note="" if lab.model.has_mlm_head else "this checkpoint has no MLM head: only attention changes")


@dataclass
class DirectionalRow:
    position: int
    token: str
    baseline_top: str
    both: float
    left_only: float
    right_only: float


def directional_sweep(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = ()) -> list[DirectionalRow]:
    """For every masked position: probability of the full-context top-1 token when the model sees
    both sides, only the left context, only the right context (masks on every layer)."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so the directional sweep cannot score predictions")
    base = lab.analyze(text, pair=pair, mask_positions=mask_positions, truncate=True, keep_probabilities=True)
    if not base.mlm:
        raise InputError("mask at least one token (type [MASK] or pick tokens) to run the directional sweep")
    runs = {d: lab.analyze(text, pair=pair, mask_positions=mask_positions, truncate=True, keep_probabilities=True,
                           attention_bias=directional_bias(len(base.tokens), d)) for d in ("left-only", "right-only")}
    rows = []
    for p in base.mlm:
        top = p.predictions[0]
        rows.append(DirectionalRow(p.position, p.original or p.token, top.token, top.probability,
                                   _probability(runs["left-only"], p.position, top.token, lab),
                                   _probability(runs["right-only"], p.position, top.token, lab)))
    return rows


def ablation_sweep(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = (),
                   batched: bool = True, chunk: int = 72, progress: Progress | None = None) -> np.ndarray:
    """Drop in log-probability of the baseline's top token (mean over masked positions) when each
    head alone is zeroed: (layers, heads). Positive = the head helped this prediction."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so head importance for predictions cannot be measured")
    base = lab.analyze(text, pair=pair, mask_positions=mask_positions, truncate=True)
    if not base.mlm:
        raise InputError("mask at least one token (type [MASK] or pick tokens) to run the ablation sweep")
    positions = [p.position for p in base.mlm]
    targets = torch.tensor([lab.tokenizer.token_to_id(p.predictions[0].token) for p in base.mlm])
    enc = Encoded(base.tokens, base.token_ids, base.segment_ids, base.word_ids, base.offsets, len(base.tokens))
    layers, heads = lab.n_layers, lab.n_heads
    rows: list[tuple[int, int] | None] = [None] + [(l, h) for l in range(layers) for h in range(heads)]
    logp = torch.empty(len(rows))
    size = chunk if batched else 1
    for start in range(0, len(rows), size):
        part = rows[start:start + size]
        tensors = lab.batch_tensors([enc] * len(part))
        select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
        select[:, positions] = True
        edits = batched_ablation_edits(layers, heads, part, lab.device)
        out, _ = lab.run(tensors, capture=(), edits=edits, mlm_positions=select)
        scores = torch.log_softmax(out.mlm_logits.float(), -1).view(len(part), len(positions), -1)  # (rows, masked, vocab)
        picked = scores.gather(2, targets.to(scores.device)[None, :, None].expand(len(part), -1, 1))[..., 0]
        logp[start:start + len(part)] = picked.mean(1).cpu()
        if progress is not None:
            progress(min(1.0, (start + len(part)) / len(rows)), f"ablated {start + len(part) - 1} of {len(rows) - 1} heads")
    return (logp[0] - logp[1:]).view(layers, heads).numpy()


def position_similarity(lab: Lab, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity of the first n learned position embeddings, and of the sinusoidal ones."""
    limit = lab.model.config.max_position_embeddings
    if not 2 <= n <= limit:
        raise ProbeError(f"choose between 2 and {limit} positions")
    learned = lab.model.bert.embeddings.position_embeddings.weight[:n].detach().cpu()
    return cosine_matrix(learned), cosine_matrix(scaled_sinusoidal(lab.model, n))


__all__ = ["Comparison", "DirectionalRow", "PredictionChange", "ablation_sweep", "compare", "directional_sweep",
           "position_similarity", "math"]
