"""Search: the corpus tokens nearest to one token of a sentence at one layer, as exBERT's "find similar tokens".

The command line's ``search`` (a saved index) and the page's corpus search (the sample treebank's index) send a
``SearchRequest``; the query token is checked here once (a token of the input, not [CLS] or [SEP], a layer the
index has), so a position past the input is one sentence from every door, never an IndexError."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..lab import Encoded, InputError, Lab
from ..naming import SPECIAL_TOKENS
from ..neighbours import Neighbour, TokenIndex, check_same_weights, nearest, query_vector
from .validation import whole


@dataclass(frozen=True)
class SearchRequest:
    """A token of ``text``, by its text (its first occurrence, compared lower-cased) or its position (0 = [CLS]),
    searched at ``layer`` (0 = the embeddings; None: the index's last) over ``heads`` (0-based; None: all)."""

    text: str
    token: str | None = None
    position: Any = None
    layer: Any = None
    heads: tuple[int, ...] | None = None
    k: int = 10


@dataclass(frozen=True)
class SearchRecord:
    model: str  # the weights the index and the query come from
    kind: str  # embeddings or contexts
    layer: int
    position: int
    token: str
    corpus_tokens: int  # how many tokens the index holds
    neighbours: list[Neighbour]

    def to_json(self) -> dict:
        return {"model": self.model, "kind": self.kind, "layer": self.layer, "position": self.position,
                "token": self.token, "neighbours": [asdict(n) for n in self.neighbours]}


def query_position(tokens: list[str], token: str | None, position: Any) -> int:
    """Where the query token is, checked: a word piece of the input, not a special token."""
    if (token is None) == (position in (None, "")):
        raise InputError("name the token to search for, or its position (one of the two)")
    if token is not None:
        matches = [i for i, t in enumerate(tokens) if t.lower() == token.lower()]
        if not matches:
            raise InputError(f"{token!r} is not one of the tokens {tokens}")
        chosen = matches[0]
    else:
        chosen = whole(position, "the token", 0, len(tokens) - 1)
    if tokens[chosen] in SPECIAL_TOKENS:
        raise InputError("choose a word piece, not [CLS] or [SEP] (they are not indexed)")
    return chosen


def search(request: SearchRequest, lab: Lab, index: TokenIndex, encoded: Encoded | None = None) -> SearchRecord:
    """The ``request.k`` indexed tokens nearest to the query token (``encoded``: the input as already analysed,
    with its masks, instead of ``request.text`` encoded anew)."""
    check_same_weights(lab, index)
    encoded = encoded or lab.encode(request.text, truncate=True)
    tokens = list(encoded.tokens)
    position = query_position(tokens, request.token, request.position)
    layer = index.layers if request.layer is None else whole(request.layer, "layer", 0, index.layers)
    vector = query_vector(lab, request.text, position, layer, index.kind, encoded=encoded)
    found = nearest(index, vector, layer, request.k, request.heads)
    return SearchRecord(index.model, index.kind, layer, position, tokens[position], int(index.vectors.shape[1]), found)
