"""Per-word head predictions of attention heads, as Clark et al. (2019) and Htut et al. (2019)
define them, vectorised over every layer and head of one sentence.

Clark, Khandelwal, Levy & Manning (2019), "What Does BERT Look At?", released code
github.com/clarkkev/attention-analysis (``Syntax_Analysis.ipynb``: ``attn_head_predictor``,
``offset_predictor``):

- *dep->head* ("normal"): word i's predicted head is its most-attended other word,
  ``argmax_j attn[i, j]``.
- *head->dep* ("transpose"): the map is transposed first, so word i's predicted head is the
  other word that attends to it most, ``argmax_j attn[j, i]`` (a head word with several
  dependents can be right for all of them).
- In both, attention to itself is set aside and [CLS]/[SEP] rows and columns are removed before
  the argmax (never renormalised), so a root word (gold head 0) can never be predicted.
- The offset baseline predicts ``clamp(i + offset + 1, 0, n)`` (1-based, 0 = ROOT) for offsets
  -3..+2 (``range(-3, 3)`` in the released code).

Htut, Phang, Bordia & Bowman (2019), "Do Attention Heads in BERT Track Syntactic Dependencies?"
(working code github.com/BordiaS/bert_trees) decode a tree per head with a maximum spanning
tree. As our issue specifies, we take the *undirected* maximum spanning tree of the symmetrised
word-level map ``attn + attn.T`` (diagonal excluded) and score it as UUAS against the undirected
gold tree; Htut's code runs a directed MST from the gold root instead, which needs the gold root
and is not a property of the head alone. The right-branching baseline joins each word to the next.
"""
from __future__ import annotations

import numpy as np

from .directions import CLARK_DIRECTIONS, DEP_HEAD, normalize_direction

OFFSETS = tuple(range(-3, 3))


def best_words(word_attn: np.ndarray) -> np.ndarray:
    """Each word's most-attended other word (never itself): (..., words, words) -> (..., words), 0-based."""
    a = np.array(word_attn, dtype=np.float64, copy=True)
    idx = np.arange(a.shape[-1])
    a[..., idx, idx] = -np.inf
    return a.argmax(-1)


def predict_heads(word_attn: np.ndarray, direction: str) -> np.ndarray:
    """One of Clark's predictors for every head: (..., words, words) -> (..., words) of 1-based heads.
    ``direction`` is dep->head or head->dep (or an alias: normal, d2p, transpose); head-row->dep (p2d)
    is a head-ensemble reading (``ensembles.py``), not one of these, and is refused like any other name."""
    if normalize_direction(direction, CLARK_DIRECTIONS) == DEP_HEAD:
        return best_words(word_attn) + 1
    return best_words(np.swapaxes(word_attn, -1, -2)) + 1  # the map transposed: who attends most to the word


def predicted_heads(word_attn: np.ndarray) -> dict[str, np.ndarray]:
    """Clark's two predictors for every head: {direction: (layers, heads, words)} of 1-based heads."""
    return {direction: predict_heads(word_attn, direction) for direction in CLARK_DIRECTIONS}


def offset_predictions(n_words: int) -> np.ndarray:
    """Clark's fixed-offset baseline: (offsets, words) of 1-based predicted heads, 0 = ROOT."""
    i = np.arange(n_words)[None, :]
    return np.clip(i + np.array(OFFSETS)[:, None] + 1, 0, n_words)


def spanning_tree_edges(word_attn: np.ndarray) -> np.ndarray:
    """Maximum spanning tree of each head's symmetrised map (Prim's algorithm, all heads at once).

    ``word_attn`` is (..., words, words); returns a boolean (..., words, words) symmetric
    adjacency of the tree. Batched because one tree per head per sentence is 144 small trees
    for BERT-base; ``tests/test_syntax.py`` checks it against SciPy's minimum_spanning_tree.
    """
    shape = word_attn.shape
    n = shape[-1]
    w = np.asarray(word_attn, dtype=np.float64).reshape(-1, n, n)
    w = w + np.swapaxes(w, -1, -2)  # (trees, words, words)
    trees = w.shape[0]
    rows = np.arange(trees)
    adjacency = np.zeros((trees, n, n), dtype=bool)
    in_tree = np.zeros((trees, n), dtype=bool)
    in_tree[:, 0] = True
    best = w[:, 0, :].copy()  # (trees, words) heaviest edge from the tree to each word
    parent = np.zeros((trees, n), dtype=np.int64)
    for _ in range(n - 1):
        candidate = np.where(in_tree, -np.inf, best)
        j = candidate.argmax(-1)  # (trees,)
        adjacency[rows, parent[rows, j], j] = True
        adjacency[rows, j, parent[rows, j]] = True
        in_tree[rows, j] = True
        row = w[rows, j, :]  # (trees, words)
        better = (row > best) & ~in_tree
        best = np.where(better, row, best)
        parent = np.where(better, j[:, None], parent)
    return adjacency.reshape(shape)
