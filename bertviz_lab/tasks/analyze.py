"""One input through the model: attention (or another source), masked words, next-sentence and class probabilities,
and on request the MLM lens, each head's queries and keys, and an explanation — the one way every door asks.

Every setting is checked here once (the text, ``top_k`` within the door's cap, the source's name); an input longer
than the model's maximum is cut only when ``truncate`` says so, else refused in one sentence that says how to go on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..attention.sources import get_source, with_source
from ..lab import Analysis, InputError, InputTooLong, Lab, Readout, checked_text
from .explain import ExplainRequest, Explanation, explain_analysis
from .sentence_syntax import SentenceSyntax, SentenceSyntaxRequest, sentence_syntax
from .validation import whole

TOP_K_CAP = 50  # what the page and the MCP door allow (the command line passes its own cap: none)


@dataclass(frozen=True)
class AnalyzeRequest:
    text: str
    pair: str | None = None
    masks: tuple[int, ...] = ()  # token positions replaced by [MASK]
    predict_at: tuple[int, ...] = ()  # also predict here
    top_k: int = 5
    top_k_cap: int | None = TOP_K_CAP
    truncate: bool = False
    source: str = "attention"
    lens: bool = False
    qk: bool = False
    explain: ExplainRequest | None = None
    parse: bool = False  # also the offline parser's arcs and every head's agreement with them (sentence_syntax.py)

    def __post_init__(self) -> None:
        checked_text(self.text, "text")  # an empty one is refused by Lab.encode, in the one sentence every door shows
        if self.pair is not None:
            checked_text(self.pair, "pair")
            if self.parse:
                raise InputError("the parse reads one text, not a pair: leave out the second segment to parse it")
        object.__setattr__(self, "top_k", whole(self.top_k, "top-k", 1, self.top_k_cap or 10**9))
        get_source(self.source)


@dataclass
class AnalyzeRecord:
    """The analysis and what the request added to it."""

    analysis: Analysis
    explanation: Explanation | None = None
    lens: list = field(default_factory=list)
    queries_and_keys: tuple | None = None  # (layers, heads, tokens, head_dim) each
    syntax: SentenceSyntax | None = None

    def to_json(self, attention: bool = True) -> dict[str, Any]:
        out = self.analysis.to_json(attention=attention)
        if self.explanation is not None:
            out.update(self.explanation.to_json())
        if self.lens:
            out["lens"] = [p.to_json() for p in self.lens]
        if self.queries_and_keys is not None:
            queries, keys = self.queries_and_keys
            out.update(queries=queries.round(6).tolist(), keys=keys.round(6).tolist())
        if self.syntax is not None:
            out.update(self.syntax.to_json())
        return out


def analyze(request: AnalyzeRequest, lab: Lab) -> AnalyzeRecord:
    try:
        result = lab.analyze_encoded(lab.encode(request.text, request.pair or None, truncate=request.truncate),
                                     request.text, request.pair or None,
                                     Readout(masks=request.masks, top_k=request.top_k, predict_at=request.predict_at))
    except InputTooLong as error:
        raise InputError(f"the input is {error.n_tokens} tokens long, more than the model maximum of "
                         f"{error.maximum}; shorten it, or ask for it to be cut (--truncate)") from None
    record = AnalyzeRecord(result)
    if request.explain is not None:  # on the softmax-attention analysis, before any other source replaces it
        record.explanation = explain_analysis(lab, result, request.explain)
    if request.source != "attention":
        record.analysis = with_source(lab, result, request.source)
    if request.lens:
        from ..lens import mlm_lens

        record.lens = mlm_lens(lab, result, request.top_k)
    if request.qk:
        from ..lens import queries_and_keys

        record.queries_and_keys = queries_and_keys(lab, result)
    if request.parse:
        record.syntax = sentence_syntax(SentenceSyntaxRequest(request.text), lab)
    return record
