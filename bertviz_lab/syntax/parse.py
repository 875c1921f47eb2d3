"""A live dependency parse of a typed sentence, when spaCy and an English pipeline happen to be
installed (optional; never required)."""
from __future__ import annotations

import importlib.util

from ..treebank import Sentence

SPACY_MODELS = ("en_core_web_sm", "en_core_web_md", "en_core_web_lg", "en_core_web_trf")


def spacy_model_name() -> str | None:
    """The first installed English spaCy pipeline, or None."""
    if importlib.util.find_spec("spacy") is None:
        return None
    return next((name for name in SPACY_MODELS if importlib.util.find_spec(name) is not None), None)


def spacy_parse(text: str) -> Sentence | None:
    """The first sentence of ``text`` as a Sentence with spaCy's heads and relations, or None."""
    name = spacy_model_name()
    if name is None:
        return None
    import spacy

    doc = spacy.load(name)(text)
    sent = next(iter(doc.sents))
    words = [t.text for t in sent]
    heads = [0 if t.head.i == t.i else t.head.i - sent.start + 1 for t in sent]
    return Sentence(words, heads, [t.dep_.lower() for t in sent], [t.pos_ for t in sent], sent.text)
