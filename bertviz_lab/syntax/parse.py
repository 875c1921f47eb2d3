"""The sentences a corpus index is built from: treebank sentences, or plain lines labelled by the offline
parser's converted parse when it is installed (``live_parser.py``; optional, never required)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..resources import SAMPLE_TREEBANK
from ..sentences import read_lines
from ..treebank import Sentence, read_conllu
from .live_parser import parse_text, parser_package


def plain_sentences(lines: Sequence[str]) -> list[Sentence]:
    """Lines as Sentences: parsed when the offline parser is installed (its POS and UD relations label
    the words), otherwise split at spaces with "_" labels; empty lines are dropped."""
    parse = parser_package() is not None
    out = []
    for line in lines:
        words = line.split()
        out.append(parse_text(line) if parse and words else
                   Sentence(words, [0] * len(words), ["_"] * len(words), ["_"] * len(words), line))
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
