"""Corpus search's controller: exBERT's "find similar tokens" for a token
of the last analysis, over the sample treebank indexed once per model, device and kind."""
from __future__ import annotations

import threading
from typing import Any

import pandas as pd

from ..figures.syntax import markdown_text
from ..lab import InputError, Lab
from ..neighbours import KINDS, TokenIndex, build_index
from ..resources import SAMPLE_TREEBANK
from ..tasks.search import SearchRequest, search
from ..tasks.validation import whole
from ..treebank import read_conllu
from .page import Page
from .state import Session

SEARCH_COLUMNS = ["rank", "similarity", "token", "POS", "relation", "in its sentence"]
SEARCH_HINT = ("Choose a token of the analysed input and press *Find similar tokens*: the treebank's tokens whose "
               "vectors after the chosen layer are nearest (cosine), with their part of speech and relation.")
CORPUS = "the sample treebank (66 English sentences, UD-style labels)"


class SearchController:
    def __init__(self, page: Page) -> None:
        self.page, self.ui = page, page.ui
        self.indexes: dict = {}  # (model, device, kind) -> TokenIndex over the sample treebank, built on first use
        self.index_lock = threading.Lock()

    def corpus_index(self, lab: Lab, kind: str) -> TokenIndex:
        """The sample treebank's index for this model, built on first use (under a second on CPU)."""
        key = (lab.checkpoint_id, str(lab.device), kind)
        with self.index_lock:
            if key not in self.indexes:
                self.indexes[key] = build_index(lab, read_conllu(SAMPLE_TREEBANK), kind)
            return self.indexes[key]

    def search_tokens(self, session: Session, position: Any, layer: float, head: float, kind: str = "embeddings",
                      heads: str = "all heads") -> dict:
        ui = self.ui
        snap = session.snapshot()
        a = snap.analysis
        if a is None:
            return {ui.search_message: "⚠️ Press Run first: the search starts from a token of the analysed input."}
        try:
            kind = kind if kind in KINDS else "embeddings"
            lab = self.page.lab_of(session)
            snap.bound_to(lab)  # the model was not switched after the analysis was read
            layer_number = whole(layer, "layer", 1, lab.n_layers)
            chosen = None if kind == "embeddings" or heads != "the chosen head" else [whole(head, "head", 1, lab.n_heads) - 1]
            if position in (None, ""):
                raise InputError("choose a token of the analysed input first")
            record = search(SearchRequest(a.text, position=position, layer=layer_number,
                                          heads=tuple(chosen) if chosen else None, k=15),
                            lab, self.corpus_index(lab, kind), encoded=a.encoded())
        except InputError as error:
            return {ui.search_message: f"⚠️ {error}"}
        position, found = record.position, record.neighbours
        scope = "" if chosen is None else f", head {chosen[0] + 1} only"
        message = (f"Nearest to **{markdown_text(a.tokens[position])}** (position {position}) after layer {layer_number} "
                   f"({kind}{scope}) among {record.corpus_tokens:,} tokens of {CORPUS}: inner product of unit "
                   f"vectors, as exBERT searches. Weights: {markdown_text(record.model)}.")
        table = pd.DataFrame([(n.rank, n.score, n.token, n.upos, n.deprel, n.context) for n in found],
                             columns=SEARCH_COLUMNS)
        return {ui.search_message: message, ui.search_table: table}
