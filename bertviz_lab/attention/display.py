"""Display transforms of an attention array (word level, hidden specials, sentence-pair
filters), applied in one fixed order. Arrays in, arrays out; inputs are never modified."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..naming import SPECIAL_TOKENS, unique_labels

PAIR_FILTERS = ("all", "A->A", "A->B", "B->A", "B->B")


@dataclass
class AttentionView:
    """A (..., query, key) attention array with the labels of its rows and columns."""

    weights: np.ndarray  # (..., query, key)
    query_labels: list[str]
    key_labels: list[str]
    query_index: list[int]  # positions (token or word index) of each row
    key_index: list[int]
    notes: list[str]
    query_segments: list[int] = field(default_factory=list)  # sentence (0 = A, 1 = B) of each row
    key_segments: list[int] = field(default_factory=list)
    query_tokens: list[int] = field(default_factory=list)  # each row's first token position in the input


WORD_START = "Ġ▁"  # the marks byte-level BPE (RoBERTa) and SentencePiece put before a word's first piece


def word_groups(tokens: Sequence[str], word_ids: Sequence[int | None]) -> tuple[list[list[int]], list[str]]:
    """Group token positions into words; special tokens are words of their own."""
    groups: list[list[int]] = []
    labels: list[str] = []
    last_word = object()
    for pos, (tok, wid) in enumerate(zip(tokens, word_ids)):
        if wid is None or wid != last_word:
            groups.append([pos])
            labels.append(tok if wid is None else tok.lstrip(WORD_START))
        else:
            groups[-1].append(pos)
            labels[-1] += tok[2:] if tok.startswith("##") else tok.lstrip(WORD_START)
        last_word = wid if wid is not None else object()
    return groups, labels


def to_word_level(attention: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """Clark et al. (2019): attention *to* a word sums over its pieces, *from* a word averages them.

    Rows still sum to 1 when the token-level rows did.
    """
    n = attention.shape[-1]
    to_word = np.zeros((n, len(groups)), dtype=attention.dtype)  # (key token, key word)
    from_word = np.zeros((len(groups), n), dtype=attention.dtype)  # (query word, query token)
    for w, pieces in enumerate(groups):
        to_word[pieces, w] = 1.0
        from_word[w, pieces] = 1.0 / len(pieces)
    return from_word @ attention @ to_word  # (..., query word, key word)


def drop_and_renormalise(weights: np.ndarray, keep: Sequence[int]) -> np.ndarray:
    """Keep rows/columns ``keep`` and renormalise each row to sum to 1."""
    sub = weights[..., keep, :][..., :, keep]
    total = sub.sum(axis=-1, keepdims=True)
    return np.divide(sub, total, out=np.zeros_like(sub), where=total > 0)


@dataclass(frozen=True)
class Display:
    """How a view shows attention: at word level (merged pieces), without [CLS]/[SEP] (rows renormalised), and
    which sentence pair's rows and columns."""

    hide_special: bool = False
    word_level: bool = False
    pair_filter: str = "all"


def attention_view(
    weights: np.ndarray,  # (..., query, key)
    tokens: Sequence[str],
    word_ids: Sequence[int | None],
    segment_ids: Sequence[int],
    display: Display | None = None,
) -> AttentionView:
    """Apply the display options in a fixed order: word level, hide specials, pair filter."""
    display = display or Display()
    hide_special, word_level, pair_filter = display.hide_special, display.word_level, display.pair_filter
    notes: list[str] = []
    labels = list(tokens)
    segments = list(segment_ids)
    first_token = list(range(len(tokens)))  # of each label: word level merges pieces
    if word_level:
        groups, labels = word_groups(tokens, word_ids)
        first_token = [g[0] for g in groups]
        weights = to_word_level(weights, groups)
        segments = [segment_ids[g[0]] for g in groups]
        notes.append("word level: attention to a word is the sum over its pieces, from a word the mean over its pieces")
    index = list(range(len(labels)))
    if hide_special:
        keep = [i for i, t in enumerate(labels) if t not in SPECIAL_TOKENS]
        if keep:
            weights = drop_and_renormalise(weights, keep)
            labels = [labels[i] for i in keep]
            segments = [segments[i] for i in keep]
            index = keep
            notes.append("[CLS]/[SEP] hidden; each row renormalised to sum to 1 over the remaining tokens")
    rows = cols = list(range(len(labels)))
    if pair_filter != "all":
        if pair_filter not in PAIR_FILTERS:
            raise ValueError(f"pair filter must be one of {PAIR_FILTERS}")
        src, dst = pair_filter.split("->")
        rows = [i for i, s in enumerate(segments) if s == (0 if src == "A" else 1)]
        cols = [i for i, s in enumerate(segments) if s == (0 if dst == "A" else 1)]
        if not rows or not cols:
            notes.append(f"{pair_filter}: the input has no sentence B, showing all")
            rows = cols = list(range(len(labels)))
        else:
            weights = weights[..., rows, :][..., :, cols]
            notes.append(f"{pair_filter}: rows are sentence {src} queries, columns sentence {dst} keys "
                         "(weights not renormalised)")
    q_index = [index[i] for i in rows]
    k_index = [index[i] for i in cols]
    return AttentionView(weights, unique_labels([labels[i] for i in rows], q_index),
                         unique_labels([labels[i] for i in cols], k_index), q_index, k_index, notes,
                         [segments[i] for i in rows], [segments[i] for i in cols], [first_token[index[i]] for i in rows])
