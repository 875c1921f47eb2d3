"""The Positions lesson as one request (issue 58): two to four position-scheme twins, one sentence, one layer and head.

Every check is here once: the twins are named ``twin-<scheme>`` and present in the twins folder, two to four of them,
the sentence is text the tokenizer takes, layer and head are whole numbers within the twins' size. The record holds
each twin's view (``mlm/twin_lesson.py``), the twins' held-out measures for the length demonstration (written by
``benchmarks/bench_twins.py`` into the twins folder), and the conclusion sentences generated from the intervals.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..bert.loading.twin_checkpoints import twin_names, twins_folder
from ..lab import InputError, Lab, checked_text
from ..mlm.twin_lesson import TwinView, twin_view
from .validation import whole

MEASURES = "measures.json"  # in the twins folder: bench_twins.py's table, read by the length demonstration


@dataclass(frozen=True)
class LessonRequest:
    twins: tuple[str, ...]
    text: str
    layer: int = 1
    head: int = 1
    shuffles: int = 20  # seeded orders of the shuffle demonstration: its interval is over these

    def __post_init__(self) -> None:
        available = twin_names()
        if not available:
            raise InputError(f"no position-scheme twins in {twins_folder()}: reinstall bertviz-lab, or point "
                             "$BERTVIZ_LAB_TWINS at a folder of exported twins")
        chosen = tuple(dict.fromkeys(self.twins or ()))
        unknown = [t for t in chosen if t not in available]
        if unknown:
            raise InputError(f"no twin called {', '.join(map(repr, unknown))}; the twins are {', '.join(available)}")
        if not 2 <= len(chosen) <= 4:
            raise InputError(f"choose two to four twins to set side by side (got {len(chosen)})")
        object.__setattr__(self, "twins", chosen)
        checked_text(self.text, "the sentence")
        object.__setattr__(self, "layer", whole(self.layer, "layer", 1, 1000))
        object.__setattr__(self, "head", whole(self.head, "head", 1, 1000))
        object.__setattr__(self, "shuffles", whole(self.shuffles, "shuffles", 5, 200))


@dataclass
class Lesson:
    request: LessonRequest
    views: list[TwinView]
    measures: dict[str, Any] = field(default_factory=dict)  # twin -> {"top1": {"1x": {...}, ...}, ...}

    def conclusions(self) -> list[str]:
        return [view.shuffle.conclusion(view.twin) for view in self.views]

    def to_json(self) -> dict[str, Any]:
        return {"twins": list(self.request.twins), "text": self.request.text, "layer": self.request.layer,
                "head": self.request.head, "tokens": self.views[0].analysis.tokens,
                "shuffle": {v.twin: {"masked_positions": v.shuffle.positions, "top_before": v.shuffle.top_before,
                                     "js": v.shuffle.interval, "top1_kept": v.shuffle.top_kept} for v in self.views},
                "distance_by_layer": {v.twin: [round(float(x), 4) for x in v.distance] for v in self.views},
                "conclusions": self.conclusions()}


def held_out_measures() -> dict[str, Any]:
    """Twin name -> its held-out measures (``bench_twins.py --write-measures``), or {} when none were written."""
    path = twins_folder() / MEASURES
    return json.loads(path.read_text(encoding="utf-8")).get("twins", {}) if path.is_file() else {}


def positions_lesson(request: LessonRequest, load_lab: Callable[[str], Lab]) -> Lesson:
    labs = [load_lab(twin) for twin in request.twins]
    layers, heads = labs[0].n_layers, labs[0].n_heads
    if request.layer > layers or request.head > heads:
        raise InputError(f"the twins have {layers} layers of {heads} heads; choose a layer from 1 to {layers} and a "
                         f"head from 1 to {heads}")
    views = [twin_view(lab, request.text, request.layer, request.head, request.shuffles) for lab in labs]
    return Lesson(request, views, held_out_measures())
