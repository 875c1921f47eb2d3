"""Numbers computed from attention arrays: aggregates (rollout), per-head statistics, and the
divergences and offset profiles that compare two runs. Arrays in, arrays out; no model code
(the batched statistics use torch for speed)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..bert.sources.flow import rollout as flow_rollout
from ..naming import is_punctuation

HEAD_STATS = ("entropy", "to [CLS]", "to [SEP]", "to punctuation", "to previous", "to next", "to itself")


def rollout(attention: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema (2020) on attention: per layer 0.5*mean-over-heads + 0.5*I, rows renormalised,
    multiplied from the bottom layer up. Returns (layers, query, key): rollout up to each layer."""
    return flow_rollout(attention.mean(axis=1))


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
    key_mask = {name: torch.zeros((b, t), dtype=torch.float32) for name in ("[CLS]", "[SEP]", "punct")}
    for row, tokens in enumerate(token_lists):
        for pos, tok in enumerate(tokens):
            if tok in ("[CLS]", "[SEP]"):
                key_mask[tok][row, pos] = 1.0
            elif is_punctuation(tok):
                key_mask["punct"][row, pos] = 1.0
    a = attention.float()  # float32: the statistics are means of at most 512 values per row

    def mean_over(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mask = mask[:, None, None, :].float()  # (batch, 1, 1, query)
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


def relative_offset_profile(attention: np.ndarray, offsets: range = range(-5, 6)) -> np.ndarray:
    """Mean attention from each query to the key at query+offset, per head: (layers, heads, offsets)."""
    n = attention.shape[-1]
    out = np.zeros(attention.shape[:2] + (len(offsets),), dtype=np.float32)
    for j, o in enumerate(offsets):
        q = np.arange(max(0, -o), min(n, n - o))
        if len(q):
            out[..., j] = attention[..., q, q + o].mean(-1)
    return out


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (nats) between attention rows, averaged over queries: (layers, heads)."""
    p = p.astype(np.float64)
    q = q.astype(np.float64)
    m = 0.5 * (p + q)

    def kl(a, b):
        return np.where(a > 0, a * (np.log(np.clip(a, 1e-30, None)) - np.log(np.clip(b, 1e-30, None))), 0.0).sum(-1)

    return (0.5 * kl(p, m) + 0.5 * kl(q, m)).mean(-1).astype(np.float32)


def cosine_matrix(vectors: torch.Tensor) -> np.ndarray:
    unit = torch.nn.functional.normalize(vectors.float(), dim=-1)
    return (unit @ unit.T).numpy()
