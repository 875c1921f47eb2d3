"""Run an input twice — baseline and with an intervention — and measure what changed: attention
divergence per head, offset profiles, and the masked-word predictions of both runs."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..attention import js_divergence, relative_offset_profile
from ..bert.sources.flow import row_normalised
from ..lab import Analysis, Encoded, Lab, Readout
from .kinds import Intervention


@dataclass
class PredictionChange:
    position: int
    token: str  # the token in the input at this position (before any masking)
    baseline_top: str
    baseline_probability: float
    intervened_probability: float  # of the baseline's top token
    intervened_top: str
    intervened_top_probability: float

    @property
    def change(self) -> float:
        return self.intervened_probability - self.baseline_probability


@dataclass
class Comparison:
    intervention: Intervention
    baseline: Analysis
    intervened: Analysis  # the run with the intervention; attention re-indexed to the baseline's token order
    js: np.ndarray  # (layers, heads) Jensen-Shannon divergence, nats
    changes: list[PredictionChange] = field(default_factory=list)
    offsets_before: np.ndarray | None = None  # (layers, heads, 11) mean attention at offsets -5..+5
    offsets_after: np.ndarray | None = None
    note: str = ""

    def to_json(self) -> dict:
        return {
            "intervention": self.intervention.describe(), "tokens": self.baseline.tokens,
            "js_divergence": self.js.tolist(),
            "prediction_changes": [{**c.__dict__, "change": c.change} for c in self.changes],
            "offsets": list(range(-5, 6)),
            "offset_profile_before": None if self.offsets_before is None else self.offsets_before.tolist(),
            "offset_profile_after": None if self.offsets_after is None else self.offsets_after.tolist(),
            "note": self.note,
        }


def probability_of(analysis: Analysis, position: int, token: str, lab: Lab) -> float:
    if analysis.mlm_probabilities is None:
        return float("nan")
    rows = [p.position for p in analysis.mlm]
    if position not in rows:
        return float("nan")
    return float(analysis.mlm_probabilities[rows.index(position), lab.tokenizer.token_to_id(token)])


def _reorder(analysis: Analysis, order: list[int]) -> Analysis:
    """A copy of an analysis of shuffled input, mapped back to the original token order."""
    inverse = np.argsort(order)
    per_token = {name: [getattr(analysis, name)[i] for i in inverse]
                 for name in ("tokens", "token_ids", "segment_ids", "word_ids", "offsets")}
    return replace(analysis, attention=analysis.attention[..., inverse, :][..., :, inverse],
                   mlm=[replace(p, position=int(order[p.position])) for p in analysis.mlm], **per_token)


def compare(lab: Lab, text: str, intervention: Intervention, pair: str | None = None, encoded: Encoded | None = None,
            readout: Readout | None = None) -> Comparison:
    """Baseline vs intervened run of one input (``text``, or an already ``encoded`` one). ``readout``: the positions
    masked in both runs (``masks``), the top-k listed and the source compared (softmax attention or another registered
    source; for sources whose rows do not sum to 1 the JS divergence is taken between rows renormalised to sum to 1);
    where to predict and whether to keep the distributions are the comparison's own."""
    readout = readout or Readout()
    mask_positions, top_k, source = readout.masks, readout.top_k, readout.source
    predict_at = intervention.targets
    encoded = encoded if encoded is not None else lab.encode(text, pair, truncate=True)
    base = lab.analyze_encoded(encoded, text, pair, Readout(mask_positions, top_k, source, predict_at, True))
    inputs = intervention.inputs_for(lab.model, base.tokens, base.word_ids)
    masks = sorted(set(mask_positions) | set(inputs.mask_positions))
    if inputs.token_order is not None:
        order = inputs.token_order
        enc = Encoded([base.tokens[i] for i in order], [base.token_ids[i] for i in order], base.segment_ids,
                      [base.word_ids[i] for i in order], [base.offsets[i] for i in order], len(order))
        inverse = [int(i) for i in np.argsort(order)]
        intervened = lab.analyze_encoded(enc, text, pair, Readout((), top_k, source, [inverse[p.position] for p in base.mlm],
                                                                  True))
        intervened = _reorder(intervened, order)
    else:
        intervened = lab.analyze_encoded(encoded, text, pair, Readout(masks, top_k, source, predict_at, True),
                                         changes=inputs.changes())
    changes = []
    intervened_by_pos = {p.position: p for p in intervened.mlm}
    for p in base.mlm:
        top = p.predictions[0]
        after = intervened_by_pos.get(p.position)
        if after is None:
            continue
        changes.append(PredictionChange(p.position, p.original or lab.tokenizer.id_to_token(base.token_ids[p.position]),
                                        top.token, top.probability, probability_of(intervened, p.position, top.token, lab),
                                        after.predictions[0].token, after.predictions[0].probability))
    as_rows = (lambda a: a) if source == "attention" else row_normalised
    return Comparison(intervention, base, intervened, js_divergence(as_rows(base.attention), as_rows(intervened.attention)),
                      changes,
                      relative_offset_profile(base.attention), relative_offset_profile(intervened.attention),
                      note="" if lab.model.has_mlm_head else "this checkpoint has no MLM head: only attention changes")
