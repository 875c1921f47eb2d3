"""Faithfulness: how well each explanation method's ranking of context tokens predicts what hiding them does to
a masked word (AOPC, ERASER's comprehensiveness and sufficiency, a random control), over sentences.

The command line's ``faithfulness`` and the page's faithfulness check send a ``FaithfulnessRequest``; which lines
run when none are given (the shipped held-out lines) and how the record names them live here once."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..engines import LOCAL, Engine
from ..interventions.faithfulness import FaithfulnessResult, FaithfulnessSettings, faithfulness
from ..lab import Lab
from ..resources import DEFAULT_MLM_HEAD
from ..sentences import heldout_lines, read_lines

SHIPPED_LINES = DEFAULT_MLM_HEAD / "heldout.txt"


@dataclass(frozen=True)
class FaithfulnessRequest:
    """Lines from ``text_file`` (one sentence per line), else the shipped held-out lines; how the check runs."""

    text_file: str | None = None
    settings: FaithfulnessSettings = field(default_factory=FaithfulnessSettings)
    resamples: int = 1000  # bootstrap resamples of the intervals
    engine: Engine = LOCAL  # where the sentences run (local or Ray): the same records either way

    def lines(self) -> list[str]:
        return read_lines(self.text_file) if self.text_file else heldout_lines()


@dataclass(frozen=True)
class FaithfulnessRecord:
    result: FaithfulnessResult
    request: FaithfulnessRequest

    def to_json(self) -> dict:
        r = self.request
        return {"k": r.settings.k_max, "text_file": str(r.text_file or SHIPPED_LINES),
                **self.result.to_json(resamples=r.resamples, seed=r.settings.seed)}


def faithfulness_check(request: FaithfulnessRequest, lab: Lab,
                       progress: Callable[[int, int], None] | None = None) -> FaithfulnessRecord:
    """Every ranking scored on the request's lines (``progress(done, total)`` per sentence)."""
    return FaithfulnessRecord(faithfulness(lab, request.lines(), request.settings, progress=progress,
                                                    engine=request.engine), request)
