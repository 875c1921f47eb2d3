"""Syntax of a sentence a person types: an offline parser's arcs (converted to UD heads, marked as a
parser's, not gold) and every head's agreement with them in both of Clark et al.'s directions.

The parse is the lab's third use (which heads track syntax) on any sentence, not only a treebank's;
its trust is the conversion's measured agreement with gold EWT trees (``syntax/parser_agreement.py``),
carried in every record.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lab import InputError, InputTooLong, Lab, checked_text
from ..syntax.live_parser import ParserInfo, parse_text, parser_info
from ..syntax.parser_agreement import agreement_note, shipped_agreement
from ..syntax.scoring import sentence_word_attention
from ..syntax.sentence_agreement import agreement_rows, head_agreement
from ..treebank import Sentence


@dataclass(frozen=True)
class SentenceSyntaxRequest:
    text: str

    def __post_init__(self) -> None:
        checked_text(self.text, "text")


@dataclass
class SentenceSyntax:
    """The converted parse, the sentence's word-level attention, and each head's agreement with the parse."""

    sentence: Sentence
    parser: ParserInfo
    word_attn: np.ndarray  # (layers, heads, words, words)
    shares: dict[str, np.ndarray]  # direction -> (layers, heads) share of the parse's arcs recovered
    arcs: int
    checkpoint: str

    def best(self, direction: str) -> tuple[int, int, float]:
        """The head (0-based layer, head) that recovers most arcs in ``direction``, and its share."""
        share = self.shares[direction]
        layer, head = np.unravel_index(int(share.argmax()), share.shape)
        return int(layer), int(head), float(share[layer, head])

    def parse_json(self) -> dict[str, Any]:
        s = self.sentence
        measured = shipped_agreement()
        return {"words": s.words, "heads": s.heads, "relations": s.relations, "upos": s.upos,
                "parser": {**self.parser.to_json(), "gold": False,
                           "agreement_with_gold": measured["summary"]["uas"] if measured else None,
                           "agreement_note": agreement_note(measured)}}

    def agreement_json(self) -> dict[str, Any]:
        best = {d: dict(zip(("layer", "head", "share"), (lambda b: (b[0] + 1, b[1] + 1, round(b[2], 4)))(self.best(d))))
                for d in self.shares}
        return {"checkpoint": self.checkpoint, "arcs": self.arcs, "directions": list(self.shares),
                "of": "the parser's arcs (not gold)", "best": best, "heads": agreement_rows(self.shares)}

    def to_json(self) -> dict[str, Any]:
        return {"parse": self.parse_json(), "head_agreement": self.agreement_json()}


def sentence_syntax(request: SentenceSyntaxRequest, lab: Lab) -> SentenceSyntax:
    """Parse ``request.text`` (ParserUnavailable when no parser is installed) and score every head on it."""
    sentence = parse_text(request.text)
    if not sentence.words:
        raise InputError("the parser found no words in this text")
    try:
        word_attn, _ = sentence_word_attention(lab, sentence)  # (layers, heads, words, words)
    except InputTooLong as error:
        raise InputError(f"the sentence is {error.n_tokens} tokens long as the parser splits it, more than the "
                         f"model's {error.maximum}; shorten it") from None
    shares, arcs = head_agreement(sentence, word_attn)
    return SentenceSyntax(sentence, parser_info(), word_attn, shares, arcs, lab.checkpoint_info().describe())
