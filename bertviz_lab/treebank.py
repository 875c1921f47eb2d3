"""Reading Universal Dependencies treebanks (CoNLL-U, with the ``conllu`` library) into plain
sentences: words as the treebank splits them, 1-based gold heads, relations."""
from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .resources import SAMPLE_TREEBANK

__all__ = ["SAMPLE_TREEBANK", "Sentence", "TreebankError", "read_conllu", "sentence_texts"]


class TreebankError(ValueError):
    """Malformed CoNLL-U; the message names the file and line."""


@dataclass
class Sentence:
    words: list[str]
    heads: list[int]  # 1-based head word of each word, 0 = root
    relations: list[str]
    upos: list[str] = field(default_factory=list)
    text: str = ""
    sent_id: str = ""
    line: int = 0
    xpos: list[str] = field(default_factory=list)  # language-specific tags ("_" where the treebank has none)


def _lines(text: str) -> list[str]:
    """The file's lines, split only at "\\n" (a trailing "\\r" dropped). ``str.splitlines()`` also
    breaks at U+2028, U+2029, U+0085, \\x0b, \\x0c and \\x1c-\\x1e, which a FORM may contain."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _blocks(text: str) -> Iterable[tuple[int, list[str]]]:
    """Sentence blocks with the 1-based line number where each starts."""
    block: list[str] = []
    start = 1
    for number, line in enumerate(_lines(text), start=1):
        if line.strip():
            if not block:
                start = number
            block.append(line)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def find_cycle(heads: list[int]) -> list[int]:
    """Words (1-based) on a cycle of head links that never reaches the root, or [] for a tree."""
    state = [0] * (len(heads) + 1)  # 0 unvisited, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, len(heads) + 1):
        path, word = [], start
        while state[word] == 0:
            state[word] = 1
            path.append(word)
            word = heads[word - 1]
        if state[word] == 1:
            return path[path.index(word):]
        for w in path:
            state[w] = 2
    return []


FIELDS = 10  # ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC
ID, FORM, UPOS, XPOS, HEAD, DEPREL = 0, 1, 3, 4, 6, 7


def _word_line(line: str, where: str) -> tuple[int | tuple | None, str, str, int | None, str]:
    """(id, form, upos, head, deprel) of a word line, split at tabs only: ``conllu``'s own line
    parser also splits at two spaces, which misreads a FORM such as "a  b". Its value parsers
    still read ID (1, 2-3 or 4.1) and HEAD."""
    from conllu.exceptions import ParseException
    from conllu.parser import parse_id_value, parse_int_value

    fields = line.split("\t")
    try:
        ident = parse_id_value(fields[ID])
    except ParseException:
        raise TreebankError(f"{where}: ID {fields[ID]!r} is not a word number (1), a range (2-3) or an "
                            "empty node (4.1)") from None
    try:
        head = parse_int_value(fields[HEAD]) if isinstance(ident, int) else None
    except ParseException:
        raise TreebankError(f"{where}: HEAD {fields[HEAD]!r} of word {fields[ID]} is not a word number") from None
    return ident, fields[FORM], fields[UPOS], head, fields[DEPREL]


def _metadata(comments: list[str]) -> dict[str, str | None]:
    """``# key = value`` comments as ``conllu`` reads them (text, sent_id, newdoc ...)."""
    from conllu.parser import parse_comment_line

    return {key: value for line in comments for key, value in parse_comment_line(line)}


def _check_trees(path: Path, start: int, words: list[str], heads: list[int | None]) -> None:
    """Every head a word of the sentence (or 0), one root, no cycle: what scoring assumes."""
    if not words:
        raise TreebankError(f"{path}:{start}: sentence without words")
    for i, h in enumerate(heads, start=1):
        if h is None or not 0 <= h <= len(words) or h == i:
            raise TreebankError(f"{path}:{start}: word {i} ({words[i - 1]!r}) has invalid head {h!r}")
    if heads.count(0) != 1:
        raise TreebankError(f"{path}:{start}: sentence must have exactly one root (has {heads.count(0)})")
    cycle = find_cycle(heads)  # type: ignore[arg-type]  # checked above: no None is left
    if cycle:
        raise TreebankError(f"{path}:{start}: the heads of words {', '.join(map(str, cycle))} form a cycle, "
                            "so they are not a tree")


def _sentence(path: Path, start: int, block: list[str], full_relations: bool) -> Sentence | None:
    """One sentence block, or None for a block of comments only (file-level comments)."""
    rows = [(start + offset, line) for offset, line in enumerate(block) if not line.startswith("#")]
    if not rows:
        return None
    for number, line in rows:
        if len(line.split("\t")) != FIELDS:
            raise TreebankError(f"{path}:{number}: expected {FIELDS} tab-separated fields, "
                                f"found {len(line.split(chr(9)))}")
    words, heads, rels, upos, xpos = [], [], [], [], []
    for number, line in rows:
        ident, form, tag, head, rel = _word_line(line, f"{path}:{start}: line {number}")
        if not isinstance(ident, int):
            continue  # multiword range (2-3) or empty node (4.1)
        words.append(form)
        heads.append(head)
        rel = rel or "_"
        rels.append(rel if full_relations else rel.split(":")[0])
        upos.append(tag or "_")
        xpos.append(line.split("\t")[XPOS] or "_")
    _check_trees(path, start, words, heads)
    meta = _metadata([line for line in block if line.startswith("#")])
    return Sentence(words, heads, rels, upos, meta.get("text") or " ".join(words), meta.get("sent_id") or "", start,
                    xpos)


def read_conllu(path: str | Path, full_relations: bool = False) -> list[Sentence]:
    """Read a CoNLL-U file strictly: multiword ranges and empty nodes are skipped; anything
    malformed is an error naming the file and line, and nothing is returned.

    A ``.gz`` file is read through gzip (UD releases and our evaluation splits come that way).
    A byte-order mark at the start is allowed ("utf-8-sig"), and lines end only at "\\n" (see
    ``_lines``), so a FORM holding U+2028 or U+0085 stays one word."""
    path = Path(path)
    try:
        raw = (gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()).decode("utf-8-sig")
    except (gzip.BadGzipFile, EOFError):
        raise TreebankError(f"{path}: named .gz but not a complete gzip file") from None
    except UnicodeDecodeError as error:
        raise TreebankError(f"{path}: not UTF-8 text (byte {error.start} cannot be decoded); save it as UTF-8") from None
    except IsADirectoryError:
        raise TreebankError(f"{path}: a folder, not a CoNLL-U file") from None
    except FileNotFoundError:
        raise TreebankError(f"{path}: no such file") from None
    except OSError as error:
        raise TreebankError(f"{path}: cannot be read ({error.strerror or 'an error of the file system'})") from None
    sentences = [s for start, block in _blocks(raw) if (s := _sentence(path, start, block, full_relations))]
    if not sentences:
        raise TreebankError(f"{path}: no sentences found")
    return sentences


def sentence_texts(path: str | Path = SAMPLE_TREEBANK) -> list[str]:
    """A treebank's sentences as plain text (its ``# text`` lines): a sentence set for interventions."""
    return [s.text for s in read_conllu(path)]
