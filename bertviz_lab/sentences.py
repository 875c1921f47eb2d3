"""Sentences as the analyses over sets use them: lines of a text file, and one seeded masked word
per line. Shared by masked-word evaluation (``mlm``), interventions over sentence sets and the
faithfulness check (``interventions``), so it sits below both.

The masking protocol: in each non-empty line one position is chosen (seeded) among tokens that are
whole words made of letters: a single WordPiece that is not a ``##`` continuation and is not
followed by one (see ``mlm/evaluate.py`` for what the scores then mean).
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from .lab import Encoded, InputError, Lab
from .resources import DEFAULT_MLM_HEAD


def heldout_lines() -> list[str]:
    """The shipped held-out lines (WordNet glosses no head trained on): the default sentence set."""
    return read_lines(DEFAULT_MLM_HEAD / "heldout.txt")


def read_lines(text_file: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (one sentence per line; a byte-order mark is read as none), or an InputError
    saying why not."""
    try:
        return Path(text_file).read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise InputError(f"{text_file} is not UTF-8 text (byte {error.start})") from None


def candidates(enc: Encoded, special_ids: set[int]) -> list[int]:
    toks, n = enc.tokens, len(enc.tokens)
    return [i for i, t in enumerate(toks)
            if enc.ids[i] not in special_ids and t.isalpha() and not t.startswith("##")
            and not (i + 1 < n and toks[i + 1].startswith("##"))]


SET_MAX_TOKENS = 128  # a sentence set's lines are cut to this many tokens (and said so: ``truncation_note``)


def masked_items(lab: Lab, lines: Iterable[str], seed: int, max_sentences: int | None,
                 max_length: int = SET_MAX_TOKENS):
    """(masked Encoded, position, original id) per usable line, in file order. A line longer than
    ``max_length`` tokens is cut (its Encoded keeps ``n_tokens_before_truncation``, so reports can
    count the cut lines: ``truncated_count``)."""
    rng = random.Random(seed)
    items = []
    cut = min(max_length, lab.max_tokens)
    for line in lines:
        line = line.strip()
        if not line:
            continue
        enc = lab.encode(line, truncate=True)
        if len(enc.ids) > cut:
            enc = Encoded(enc.tokens[:cut - 1] + ["[SEP]"], enc.ids[:cut - 1] + [enc.ids[-1]],
                          enc.segment_ids[:cut], enc.word_ids[:cut - 1] + [None], enc.offsets[:cut],
                          enc.n_tokens_before_truncation)
        options = candidates(enc, lab.special_ids | {lab.mask_id})
        if not options:
            continue
        pos = rng.choice(options)
        ids = list(enc.ids)
        original = ids[pos]
        ids[pos] = lab.mask_id
        items.append((Encoded(enc.tokens, ids, enc.segment_ids, enc.word_ids, enc.offsets,
                              enc.n_tokens_before_truncation), pos, original))
        if max_sentences is not None and len(items) >= max_sentences:
            break
    return items


def truncated_count(items: Iterable[tuple[Encoded, int, int]]) -> int:
    """How many of the masked items were cut to fit (their line had more tokens than kept)."""
    return sum(enc.n_tokens_before_truncation > len(enc.ids) for enc, _, _ in items)


def truncation_note(truncated: int, max_length: int = SET_MAX_TOKENS) -> str:
    """What a set's report says about cut lines (empty when none was cut)."""
    if not truncated:
        return ""
    lines = "line was" if truncated == 1 else "lines were"
    return f"{truncated} {lines} longer than {max_length} tokens and cut to the first {max_length}"
