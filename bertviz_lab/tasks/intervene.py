"""Intervene: one intervention on one input against its baseline, or over a sentence set with intervals.

The doors (the command line's ``compare``, the page's Interventions tab) send an ``InterventionSpec`` as their
controls give it; its numbers are checked here once (whole numbers within the model's range), the intervention is
built here once, and the rule for picked tokens lives here once: an intervention that targets tokens (mask, hide)
takes them as its targets, any other masks them in both runs. A set refuses an intervention that needs picked
tokens, in one sentence, from every door."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engines import LOCAL, Engine
from ..interventions import REGISTRY, compare, make_intervention
from ..interventions.compare import Comparison
from ..interventions.kinds import Intervention
from ..interventions.records import weights_of
from ..interventions.sets import Progress, SetSettings, compare_set
from ..lab import InputError, Lab, Readout
from .validation import positions, whole

Reference = Callable[[], Any]  # made only when the ablation needs it: mean head outputs or a resample pool


@dataclass(frozen=True)
class InterventionSpec:
    """The chosen intervention and its settings, as a door's controls give them (numbers may be floats or text)."""

    kind: str
    heads: str = ""  # ablate-heads: 1-based "layer-head" list, e.g. "3-5,6-1"
    shift: Any = 0  # shift-positions / rotate-positions: k
    seed: Any = 0  # shuffles and controls
    sinks: str = "symmetric"  # left-only / right-only: may every query see [CLS] and [SEP]
    unit: str = "words"  # shuffle-words: words or tokens
    ablation: str = "zero"  # zero | mean | resample

    @property
    def targets_picked_tokens(self) -> bool:
        return self.kind in REGISTRY and REGISTRY[self.kind].targets_picked_tokens

    def build(self, lab: Lab, targets: Sequence[int] = (), reference: Reference | None = None) -> Intervention:
        """The intervention for ``lab``, its numbers checked; ``targets`` are the tokens mask and hide act on."""
        return make_intervention(
            self.kind, (lab.n_layers, lab.n_heads), positions=list(targets),
            shift=whole(self.shift or 0, "shift k", 0, lab.max_tokens),
            seed=whole(self.seed or 0, "the shuffle seed", 0, 2**32 - 1), sinks=self.sinks, unit=self.unit,
            mode=self.ablation, reference=reference or (lambda: None), heads=self.heads)


@dataclass(frozen=True)
class InterveneRequest:
    """One input, baseline against intervened. ``picked``: the tokens the person chose (targets of mask and hide,
    else masked in both runs); ``mask``: tokens masked in both runs whatever the intervention."""

    text: str
    spec: InterventionSpec
    pair: str | None = None
    picked: tuple[int, ...] = ()
    mask: tuple[int, ...] = ()
    top_k: Any = 5
    source: str = "attention"  # the kind of token-to-token weight compared (attention, norm, ...)


@dataclass(frozen=True)
class InterveneRecord:
    comparison: Comparison
    intervention: Intervention
    model: str  # the weights it came from

    def to_json(self) -> dict:
        c = self.comparison
        return {"model": self.model, **c.to_json(), "mean_js_divergence": float(c.js.mean())}


def intervene(request: InterveneRequest, lab: Lab, reference: Reference | None = None) -> InterveneRecord:
    """Baseline and intervened runs of ``request.text`` on ``lab``."""
    picked = positions(list(request.picked))
    targets = picked if request.spec.targets_picked_tokens else []
    masked = [*positions(list(request.mask)), *([] if request.spec.targets_picked_tokens else picked)]
    intervention = request.spec.build(lab, targets, reference)
    c = compare(lab, request.text, intervention, pair=request.pair or None,
                readout=Readout(masked, whole(request.top_k, "top-k", 1, 50), request.source))
    return InterveneRecord(c, intervention, weights_of(lab))


@dataclass(frozen=True)
class InterveneSetRequest:
    """One intervention over a sentence set, one seeded masked gold word per line."""

    lines: tuple[str, ...]
    spec: InterventionSpec
    seed: int = 0
    max_sentences: int | None = 500
    engine: Engine = LOCAL  # where the sentences run (local or Ray): the same records either way


@dataclass(frozen=True)
class InterveneSetRecord:
    effects: Any  # interventions.sets.SetEffects: mean effects with 95 % intervals
    intervention: Intervention
    model: str

    def to_json(self) -> dict:
        return {"model": self.model, "intervention": self.intervention.describe(), "scored": "gold",
                **self.effects.to_json()}


def intervene_set(request: InterveneSetRequest, lab: Lab, reference: Reference | None = None,
                  progress: Progress | None = None) -> InterveneSetRecord:
    """The intervention over the set; one that needs picked tokens is refused (a set has none)."""
    if request.spec.targets_picked_tokens:
        raise InputError("mask and hide interventions need picked tokens; over a set, choose another intervention")
    intervention = request.spec.build(lab, (), reference)
    effects = compare_set(lab, list(request.lines), intervention, progress,
                          SetSettings(seed=request.seed, max_sentences=request.max_sentences,
                                      engine=request.engine))
    return InterveneSetRecord(effects, intervention, weights_of(lab))
