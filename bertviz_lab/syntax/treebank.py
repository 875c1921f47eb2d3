"""Reading Universal Dependencies treebanks (CoNLL-U, with the ``conllu`` library) into plain
sentences: words as the treebank splits them, 1-based gold heads, relations."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..resources import SAMPLE_TREEBANK

__all__ = ["SAMPLE_TREEBANK", "Sentence", "TreebankError", "read_conllu"]


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


def _blocks(text: str) -> Iterable[tuple[int, list[str]]]:
    """Sentence blocks with the 1-based line number where each starts."""
    block: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), start=1):
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


def read_conllu(path: str | Path, full_relations: bool = False) -> list[Sentence]:
    """Read a CoNLL-U file strictly: multiword ranges and empty nodes are skipped; anything
    malformed is an error naming the file and line, and nothing is returned."""
    import conllu

    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TreebankError(f"{path}: cannot read: {error}") from None
    sentences: list[Sentence] = []
    for start, block in _blocks(raw):
        if all(line.startswith("#") for line in block):
            continue  # file-level comments
        for offset, line in enumerate(block):
            if not line.startswith("#") and len(line.split("\t")) != 10:
                raise TreebankError(f"{path}:{start + offset}: expected 10 tab-separated fields, "
                                    f"found {len(line.split(chr(9)))}")
        try:
            parsed = conllu.parse("\n".join(block) + "\n\n")
        except Exception as error:  # conllu's ParseException and friends
            raise TreebankError(f"{path}:{start}: {error}") from None
        for tokens in parsed:
            words, heads, rels, upos = [], [], [], []
            for tok in tokens:
                if not isinstance(tok["id"], int):
                    continue  # multiword range (2-3) or empty node (4.1)
                words.append(tok["form"])
                heads.append(tok["head"])
                rel = tok["deprel"] or "_"
                rels.append(rel if full_relations else rel.split(":")[0])
                upos.append(tok["upos"] or "_")
            if not words:
                raise TreebankError(f"{path}:{start}: sentence without words")
            for i, h in enumerate(heads, start=1):
                if h is None or not 0 <= h <= len(words) or h == i:
                    raise TreebankError(f"{path}:{start}: word {i} ({words[i - 1]!r}) has invalid head {h!r}")
            if heads.count(0) != 1:
                raise TreebankError(f"{path}:{start}: sentence must have exactly one root (has {heads.count(0)})")
            cycle = find_cycle(heads)
            if cycle:
                raise TreebankError(f"{path}:{start}: the heads of words {', '.join(map(str, cycle))} form a cycle, "
                                    "so they are not a tree")
            sentences.append(Sentence(words, heads, rels, upos, tokens.metadata.get("text", " ".join(words)),
                                      tokens.metadata.get("sent_id", ""), start))
    if not sentences:
        raise TreebankError(f"{path}: no sentences found")
    return sentences
