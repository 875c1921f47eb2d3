"""A live dependency parse of a typed sentence, when spaCy and an English pipeline happen to be
installed (optional; never required); and the sentences a corpus index is built from, treebank
sentences or plain lines labelled by that parse when it is there."""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from ..resources import SAMPLE_TREEBANK
from ..sentences import read_lines
from ..treebank import Sentence, read_conllu

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


def plain_sentences(lines: Sequence[str]) -> list[Sentence]:
    """Lines as Sentences: parsed by spaCy when a pipeline is installed (its POS and relations label
    the tokens), otherwise split at spaces with "_" labels; empty lines are dropped."""
    parse = spacy_model_name() is not None
    out = []
    for line in lines:
        parsed = spacy_parse(line) if parse else None
        words = line.split()
        out.append(parsed or Sentence(words, [0] * len(words), ["_"] * len(words), ["_"] * len(words), line))
    return [s for s in out if s.words]


def corpus_sentences(conllu: Sequence[Path] = (), text_file: Path | None = None,
                     max_sentences: int | None = None) -> list[Sentence]:
    """The sentences a corpus is indexed from: plain lines of ``text_file`` (see ``plain_sentences``)
    or the sentences of CoNLL-U files (the shipped sample treebank when none is given), the first
    ``max_sentences`` of them."""
    if text_file is not None:
        return plain_sentences(read_lines(text_file)[:max_sentences])
    sentences = [s for path in (conllu or [SAMPLE_TREEBANK]) for s in read_conllu(path)]
    return sentences[:max_sentences]
