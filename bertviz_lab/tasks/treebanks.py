"""A treebank as one request reads it: parsed once, refused in one sentence that names the file (not a server's cache
path), and within the door's word limit (the page and the MCP door score at most ``max_words`` per request; the
command line has no limit)."""
from __future__ import annotations

from pathlib import Path

from ..treebank import SAMPLE_TREEBANK, Sentence, TreebankError, read_conllu


def read_treebank(path: Path | None = None, max_words: int | None = None, full_relations: bool = False,
                  shown_name: str | None = None) -> list[Sentence]:
    """The sentences of ``path`` (None: the shipped sample treebank). ``shown_name``: how a door that must not show
    the file's path (the page's upload, in a server's cache) names it in errors; else the path as given. A treebank
    over ``max_words`` words is refused with where to score it instead."""
    path = Path(path) if path is not None else SAMPLE_TREEBANK
    name = shown_name or path.name
    try:
        sentences = read_conllu(path, full_relations=full_relations)
    except TreebankError as error:
        raise (TreebankError(str(error).replace(str(path), shown_name)) if shown_name else error) from None
    words = sum(len(s.words) for s in sentences)
    if max_words is not None and words > max_words:
        raise TreebankError(f"{name} has {words:,} words; this door scores up to {max_words:,} per request (use "
                            "`bertviz-lab score-heads --conllu FILE` for whole treebanks)")
    return sentences

