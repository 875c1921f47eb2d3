"""Why the model said what it said, on one analysed input: the one rule every door follows.

With a [MASK] in the input, the top prediction at each masked position (``which="first"``: the first only, what the
page and the MCP door show) is attributed to its context tokens: erasure, gradient x input, integrated gradients,
DecompX, and each attention source's agreement with erasure and faithfulness on this input
(``interventions/attribution.py``). A sequence classifier with nothing masked explains a class's logit instead (the
predicted class, or ``label``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..interventions.attribution import Attribution, ClassAttribution, explain, explain_class
from ..lab import Analysis, InputError, Lab

WHICH = ("first", "all")


@dataclass(frozen=True)
class ExplainRequest:
    which: str = "first"  # the masked positions explained: the first, or all
    label: str | None = None  # a classifier's class to explain (default: the predicted one)

    def __post_init__(self) -> None:
        if self.which not in WHICH:
            raise InputError(f"explain {self.which!r}? choose one of {', '.join(WHICH)}")


@dataclass
class Explanation:
    """The masked words' attributions, or a classifier's class's."""

    words: list[Attribution] = field(default_factory=list)
    of_class: ClassAttribution | None = None

    @property
    def first(self) -> Attribution | ClassAttribution:
        return self.of_class if self.of_class is not None else self.words[0]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.words:
            out["explain"] = [a.to_json() for a in self.words]
        if self.of_class is not None:
            out["explain_class"] = self.of_class.to_json()
        return out


def explain_analysis(lab: Lab, analysis: Analysis, request: ExplainRequest = ExplainRequest()) -> Explanation:
    """The explanation of ``analysis`` (run on ``lab``) the request asks for."""
    if analysis.classes and (not analysis.mlm or request.label is not None):
        return Explanation(of_class=explain_class(lab, analysis, label=request.label))
    if not analysis.mlm:
        raise InputError("mask a token first: the attribution explains a masked-word prediction"
                         + (" (or a classifier's class)" if analysis.classes else ""))
    chosen = analysis if request.which == "all" else replace(analysis, mlm=analysis.mlm[:1])
    return Explanation(words=explain(lab, chosen))
