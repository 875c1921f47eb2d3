"""Numbers computed from attention arrays: views (filters, word level, hiding specials),
aggregates (head means, rollout) and per-head statistics. Arrays in, arrays out; no model code
(the batched statistics use torch for speed)."""
from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

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


def head_statistics(attention: np.ndarray, tokens: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-head statistics of one input, each (layers, heads), averaged over query tokens.

    entropy is in nats; the "to X" numbers are the mean attention mass on X.
    """
    batch = batch_head_statistics(torch.as_tensor(attention)[None], [tokens])
    return {k: v[0] for k, v in batch.items()}


def batch_head_statistics(attention: torch.Tensor, token_lists: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
    """``head_statistics`` for a right-padded batch at once: each (batch, layers, heads).

    ``attention`` is (batch, layers, heads, query, key); sentence b is ``len(token_lists[b])``
    tokens long. Padded queries are left out of every mean; padded keys carry no attention.
    """
    b, _, _, t, _ = attention.shape
    lengths = torch.tensor([len(tokens) for tokens in token_lists])
    real = torch.arange(t)[None, :] < lengths[:, None]  # (batch, query)
    key_mask = {name: torch.zeros((b, t), dtype=torch.float64) for name in ("[CLS]", "[SEP]", "punct")}
    for row, tokens in enumerate(token_lists):
        for pos, tok in enumerate(tokens):
            if tok in ("[CLS]", "[SEP]"):
                key_mask[tok][row, pos] = 1.0
            elif is_punctuation(tok):
                key_mask["punct"][row, pos] = 1.0
    a = attention.double()

    def mean_over(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mask = mask[:, None, None, :].double()  # (batch, 1, 1, query)
        return (values * mask).sum(-1) / mask.sum(-1).clamp(min=1)

    entropy = -(a * torch.log(a.clamp(min=1e-12))).sum(-1)  # (batch, layers, heads, query)
    stats = {"entropy": mean_over(entropy, real)}
    for name, key in (("to [CLS]", "[CLS]"), ("to [SEP]", "[SEP]"), ("to punctuation", "punct")):
        stats[name] = mean_over((a * key_mask[key][:, None, None, None, :]).sum(-1), real)
    prev = torch.diagonal(a, offset=-1, dim1=-2, dim2=-1)  # a[q, q-1] for q >= 1
    nxt = torch.diagonal(a, offset=1, dim1=-2, dim2=-1)  # a[q, q+1] for q <= t-2
    stats["to previous"] = mean_over(prev, torch.arange(1, t)[None, :] < lengths[:, None])
    stats["to next"] = mean_over(nxt, torch.arange(t - 1)[None, :] < lengths[:, None] - 1)
    stats["to itself"] = mean_over(torch.diagonal(a, dim1=-2, dim2=-1), real)
    return {k: v.float().numpy() for k, v in stats.items()}
