"""Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
Transformers"; code github.com/samiraabnar/attention_flow), on any per-layer matrix.

Both start from the residual-augmented layer matrix: rows of ``0.5 * A + 0.5 * I`` (A the layer's
matrix with rows normalised to sum to 1; for a source that already includes the residual, such
as norm-residual, ``residual=False`` leaves the identity out). Rollout multiplies them from the
bottom layer up. Flow builds the graph of (layer, token) nodes with an edge from (l + 1, i) to
(l, j) of capacity A_l[i, j], takes the maximum flow from each output node to each input token,
and normalises each output's flows to sum to 1, as the released code does. The max-flow runs in
SciPy (integer capacities: weights are scaled by 1e6, an error below 1e-5 per flow).
"""
from __future__ import annotations

import numpy as np

from ..runtime.budget import check_time

FLOW_MAX_TOKENS = 48  # n^2 max-flows on a graph of n^2 x layers edges: ~0.3 s at 32 tokens, ~2 s at 48
SCALE = 1_000_000


def row_normalised(matrix: np.ndarray) -> np.ndarray:
    total = matrix.sum(-1, keepdims=True)
    return np.divide(matrix, total, out=np.zeros_like(matrix, dtype=np.float64), where=total > 0)


def residual_augmented(layers: np.ndarray, residual: bool = True) -> np.ndarray:
    """(layers, n, n) -> the row-stochastic matrices rollout and flow run on."""
    a = row_normalised(np.asarray(layers, dtype=np.float64))
    if residual:
        a = row_normalised(0.5 * a + 0.5 * np.eye(a.shape[-1]))
    return a


def rollout(layers: np.ndarray, residual: bool = True) -> np.ndarray:
    """Rollout up to each layer: (layers, query, key)."""
    a = residual_augmented(layers, residual)
    out = np.empty(a.shape, dtype=np.float32)
    joint = np.eye(a.shape[-1])
    for layer in range(a.shape[0]):
        joint = a[layer] @ joint
        out[layer] = joint
    return out


def attention_flow(layers: np.ndarray, up_to: int | None = None, residual: bool = True,
                   rows: list[int] | None = None) -> np.ndarray:
    """Flow from each token at the output of layer ``up_to`` (0-based; default the last) to each
    input token: (query, key), rows normalised to 1. ``rows`` computes only those output tokens
    (the others stay 0): n max-flows instead of n^2."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    a = residual_augmented(layers, residual)
    top = a.shape[0] - 1 if up_to is None else int(up_to)
    n = a.shape[-1]
    if n > FLOW_MAX_TOKENS and (rows is None or len(rows) * n > FLOW_MAX_TOKENS ** 2):
        raise ValueError(f"attention flow needs n^2 max-flows; it is limited to {FLOW_MAX_TOKENS} tokens "
                         f"(this input has {n}); use rollout, or a shorter input")
    starts, ends, caps = [], [], []
    for layer in range(top + 1):  # edges from (layer + 1, i) down to (layer, j)
        i, j = np.nonzero(a[layer] > 0)
        starts.append((layer + 1) * n + i)
        ends.append(layer * n + j)
        caps.append(np.round(a[layer][i, j] * SCALE).astype(np.int32))
    size = (top + 2) * n
    graph = csr_matrix((np.concatenate(caps), (np.concatenate(starts), np.concatenate(ends))), shape=(size, size))
    flows = np.zeros((n, n))
    for i in range(n) if rows is None else rows:
        check_time()  # n max-flows per row: a request past its time stops between rows (bert/runtime/budget.py)
        for j in range(n):
            flows[i, j] = maximum_flow(graph, (top + 1) * n + i, j).flow_value / SCALE
    return row_normalised(flows).astype(np.float32)

