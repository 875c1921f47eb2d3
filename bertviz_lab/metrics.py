"""Numbers computed from attention arrays: views (filters, word level, hiding specials),
aggregates (head means, rollout) and per-head statistics. Pure numpy, no model code."""
from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SPECIAL = ("[CLS]", "[SEP]", "[PAD]")
PUNCTUATION = set(string.punctuation) | {"``", "''", "–", "—", "…", "“", "”", "‘", "’"}
PAIR_FILTERS = ("all", "A->A", "A->B", "B->A", "B->B")
HEAD_STATS = ("entropy", "to [CLS]", "to [SEP]", "to punctuation", "to previous", "to next", "to itself")


def is_punctuation(token: str) -> bool:
    return bool(token) and all(ch in PUNCTUATION for ch in token)


@dataclass
class AttentionView:
    """A (..., query, key) attention array with the labels of its rows and columns."""

    weights: np.ndarray  # (..., query, key)
    query_labels: list[str]
    key_labels: list[str]
    query_index: list[int]  # positions (token or word index) of each row
    key_index: list[int]
    notes: list[str]


def unique_labels(tokens: Sequence[str], index: Sequence[int] | None = None) -> list[str]:
    """``"3 the"`` style labels, so repeated tokens never merge on a categorical axis."""
    index = list(range(len(tokens))) if index is None else list(index)
    return [f"{i} {t}" for i, t in zip(index, tokens)]


def word_groups(tokens: Sequence[str], word_ids: Sequence[int | None]) -> tuple[list[list[int]], list[str]]:
    """Group token positions into words; special tokens are words of their own."""
    groups: list[list[int]] = []
    labels: list[str] = []
    last_word = object()
    for pos, (tok, wid) in enumerate(zip(tokens, word_ids)):
        if wid is None or wid != last_word:
            groups.append([pos])
            labels.append(tok)
        else:
            groups[-1].append(pos)
            labels[-1] += tok[2:] if tok.startswith("##") else tok
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


def attention_view(
    weights: np.ndarray,  # (..., query, key)
    tokens: Sequence[str],
    word_ids: Sequence[int | None],
    segment_ids: Sequence[int],
    hide_special: bool = False,
    word_level: bool = False,
    pair_filter: str = "all",
) -> AttentionView:
    """Apply the display options in a fixed order: word level, hide specials, pair filter."""
    notes: list[str] = []
    labels = list(tokens)
    segments = list(segment_ids)
    if word_level:
        groups, labels = word_groups(tokens, word_ids)
        weights = to_word_level(weights, groups)
        segments = [segment_ids[g[0]] for g in groups]
        notes.append("word level: attention to a word is the sum over its pieces, from a word the mean over its pieces")
    index = list(range(len(labels)))
    if hide_special:
        keep = [i for i, t in enumerate(labels) if t not in SPECIAL]
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
                         unique_labels([labels[i] for i in cols], k_index), q_index, k_index, notes)


def rollout(attention: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema (2020): per layer 0.5*mean-over-heads + 0.5*I, rows renormalised,
    multiplied from the bottom layer up. Returns (layers, query, key): rollout up to each layer."""
    layers, _, n, _ = attention.shape
    eye = np.eye(n, dtype=np.float64)
    joint = eye
    out = np.empty((layers, n, n), dtype=np.float32)
    for layer in range(layers):
        a = 0.5 * attention[layer].mean(axis=0).astype(np.float64) + 0.5 * eye
        a /= a.sum(axis=-1, keepdims=True)
        joint = a @ joint
        out[layer] = joint
    return out


def head_statistics(attention: np.ndarray, tokens: Sequence[str],
                    attention_mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-head statistics of one input, each (layers, heads), averaged over query tokens.

    entropy is in nats; the "to X" numbers are the mean attention mass on X.
    """
    n = attention.shape[-1]
    a = attention.astype(np.float64)  # (layers, heads, query, key)
    logs = np.log(np.clip(a, 1e-12, None))
    stats = {"entropy": -(a * logs).sum(-1).mean(-1)}
    for name, marker in (("to [CLS]", "[CLS]"), ("to [SEP]", "[SEP]")):
        cols = [i for i, t in enumerate(tokens) if t == marker]
        stats[name] = a[..., cols].sum(-1).mean(-1) if cols else np.zeros(a.shape[:2])
    punct = [i for i, t in enumerate(tokens) if is_punctuation(t)]
    stats["to punctuation"] = a[..., punct].sum(-1).mean(-1) if punct else np.zeros(a.shape[:2])
    idx = np.arange(n)
    prev = a[..., idx[1:], idx[1:] - 1].mean(-1) if n > 1 else np.zeros(a.shape[:2])
    nxt = a[..., idx[:-1], idx[:-1] + 1].mean(-1) if n > 1 else np.zeros(a.shape[:2])
    stats["to previous"], stats["to next"] = prev, nxt
    stats["to itself"] = a[..., idx, idx].mean(-1)
    return {k: v.astype(np.float32) for k, v in stats.items()}
