"""Query–key geometry of one head (AttentionViz: Yeh, Chen, Wattenberg, Viégas & Wattenberg, VIS 2023,
"AttentionViz: A Global View of Transformer Attention"; code github.com/catherinesyeh/attention-viz)
and how alike the heads' attention patterns are.

AttentionViz embeds a head's queries and keys *jointly*, after two changes that leave every
attention weight as it was, so that nearness in the picture means attention:

- **key translation**: every key moves by ``mean(q) - mean(k)``; for a fixed query this adds the
  same number to every key's score, which softmax ignores;
- **scaling**: queries are multiplied and keys divided by ``c = sqrt(mean ||k|| / mean ||q||)``, which
  leaves every q · k unchanged and gives queries and keys the same mean norm.

The paper describes these two steps (section 4.1); its repository holds the prepared data rather
than the preparation, so the formula here follows the paper. The 2-D embedding is PCA (numpy's SVD)
by default, UMAP when ``umap-learn`` is installed and asked for.

Head similarity: the Jensen–Shannon divergence between two heads' attention rows, averaged over the
query tokens of each sentence and then over sentences (``metrics.js_divergence`` per row); 0 means
the heads attend alike.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .metrics import js_divergence


def normalise(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, head_dim) queries and keys -> the same after key translation and scaling."""
    q = np.asarray(queries, dtype=np.float64)
    k = np.asarray(keys, dtype=np.float64)
    k = k + (q.mean(0) - k.mean(0))  # key translation: q . (k + c) = q . k + q . c, the same for every key
    scale = np.sqrt(np.linalg.norm(k, axis=-1).mean() / max(np.linalg.norm(q, axis=-1).mean(), 1e-12))
    return q * scale, k / scale


def joint_embedding(queries: np.ndarray, keys: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """(n_q + n_k, 2) coordinates of the normalised queries (first) and keys (then) in one 2-D space."""
    q, k = normalise(queries, keys)
    both = np.concatenate([q, k])  # (n_q + n_k, head_dim)
    if method == "umap":
        try:
            import umap
        except ImportError:
            raise ValueError("method='umap' needs umap-learn (pip install umap-learn); 'pca' needs nothing") from None
        return umap.UMAP(n_components=2, random_state=seed).fit_transform(both)
    if method != "pca":
        raise ValueError("method must be 'pca' or 'umap'")
    centred = both - both.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    coords = centred @ vt[:2].T
    return np.pad(coords, ((0, 0), (0, max(0, 2 - coords.shape[1]))))  # head_dim 1 still gives two columns


def head_similarity(attentions: Sequence[np.ndarray]) -> np.ndarray:
    """Mean Jensen–Shannon divergence between every pair of heads over sentences: each attention is
    (layers, heads, query, key) for one sentence; the result is (L*H, L*H), heads in layer-major order."""
    total = None
    for attention in attentions:
        a = np.asarray(attention, dtype=np.float64)
        rows = a.reshape(-1, *a.shape[-2:])  # (L*H, query, key)
        pairs = np.concatenate([js_divergence(rows[i:i + 8, None], rows[None, :])  # (8, L*H) at a time
                                for i in range(0, len(rows), 8)]).astype(np.float64)  # (L*H, L*H)
        total = pairs if total is None else total + pairs
    if total is None:
        raise ValueError("no sentence to compare heads on")
    return total / len(attentions)


def most_alike_heads(divergence: np.ndarray, n_heads: int) -> tuple[tuple[int, int], tuple[int, int], float]:
    """The two distinct heads of a ``head_similarity`` matrix (L*H, L*H, layer-major) with the smallest
    divergence: ((layer, head), (layer, head), divergence), 0-based."""
    d = np.array(divergence, dtype=np.float64)
    np.fill_diagonal(d, np.inf)  # a head is always like itself
    i, j = np.unravel_index(int(np.argmin(d)), d.shape)
    return divmod(int(i), n_heads), divmod(int(j), n_heads), float(d[i, j])


def labelled_points(coords: np.ndarray, tokens: Sequence[str], top: int = 20) -> list[tuple[int, str]]:
    """Where to write the ``top`` most frequent tokens on a joint embedding of n queries then n keys
    (``coords`` (2n, 2), ``tokens`` the n points' tokens): per token and side, the point of that token
    nearest the mean of its points on that side (one label per cloud, on a real point, however often the
    token occurs). Ties in frequency go to the token seen first. Returns (row of ``coords``, token)."""
    n = len(tokens)
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    order = sorted(counts, key=lambda t: -counts[t])[:top]  # sorted() is stable: first seen wins a tie
    out = []
    for token in order:
        rows = np.array([i for i, t in enumerate(tokens) if t == token])
        for offset in (0, n):  # queries, then keys
            xy = coords[rows + offset]  # (occurrences, 2)
            nearest = int(np.argmin(((xy - xy.mean(0)) ** 2).sum(-1)))
            out.append((int(rows[nearest] + offset), token))
    return out
