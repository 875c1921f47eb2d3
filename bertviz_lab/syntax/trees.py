"""Tree metrics shared by the structural probe and attention-tree scoring, as Hewitt & Manning
(2019) define them in their released code (github.com/john-hewitt/structural-probes,
``reporter.py``), so probe and attention numbers are comparable on the same sentences:

- Punctuation: words whose PTB tag is one of ``'' , . : `` -LRB- -RRB-`` never join a tree
  (``prims_matrix_to_edges``); EWT's ``HYPH`` and ``NFP`` are not in the list and stay, as in the
  code. A treebank without PTB tags (decided once per treebank, not per sentence) falls back to
  UD's ``PUNCT``.
- UUAS: the gold tree is itself the minimum spanning tree of the *gold distances* over the
  non-punctuation words (Kruskal, edges taken in order of distance, ties in row-major order),
  so a punctuation word inside the tree is bridged; predicted edges likewise from predicted
  distances. Counts are pooled over sentences (correct edges / gold edges), not averaged.
- Distance Spearman: one correlation per *word* (its row of predicted vs gold distances, the
  word itself included), pooled per sentence length, averaged per length, then averaged over the
  lengths 5-50 that occur. Depth Spearman: one correlation per sentence, averaged the same way.
- Root accuracy: the least deep non-punctuation word is the gold root.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from ..treebank import Sentence

PTB_PUNCT = frozenset({"''", ",", ".", ":", "``", "-LRB-", "-RRB-"})
SPEARMAN_LENGTHS = (5, 50)  # sentence lengths averaged over, inclusive


def uses_ptb_tags(sentences: Sequence[Sentence]) -> bool:
    """Whether a treebank's XPOS column carries PTB tags (any of their punctuation tags occurs)."""
    return any(x in PTB_PUNCT for s in sentences for x in s.xpos)


def punctuation(sentence: Sentence, ptb: bool | None = None) -> np.ndarray:
    """(words,) bool: the words Hewitt's code leaves out of trees. ``ptb``: whether the treebank has
    PTB tags (``uses_ptb_tags``); None decides from this sentence alone."""
    if ptb is None:
        ptb = uses_ptb_tags([sentence])
    if ptb:
        return np.array([x in PTB_PUNCT for x in sentence.xpos], dtype=bool)
    return np.array([u == "PUNCT" for u in (sentence.upos or ["_"] * len(sentence.words))], dtype=bool)


def tree_distances(heads: Sequence[int]) -> np.ndarray:
    """(words, words) path length in the undirected gold tree (``heads`` 1-based, 0 = root); -1 between words
    no path joins (a forest, such as a control task's: ``control_tasks.py``), which the probe's loss leaves out."""
    n = len(heads)
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for child, head in enumerate(heads):
        if head:
            neighbours[child].append(head - 1)
            neighbours[head - 1].append(child)
    out = np.full((n, n), -1.0, dtype=np.float32)
    for start in range(n):
        seen = {start: 0}
        queue = deque([start])
        while queue:
            word = queue.popleft()
            for nxt in neighbours[word]:
                if nxt not in seen:
                    seen[nxt] = seen[word] + 1
                    queue.append(nxt)
        out[start, list(seen)] = list(seen.values())
    return out


def tree_depths(heads: Sequence[int]) -> np.ndarray:
    """(words,) edges from each word up to the root word (the root word has depth 0)."""
    depth = np.zeros(len(heads), dtype=np.float32)
    for i in range(len(heads)):
        word, steps = i, 0
        while heads[word]:
            word, steps = heads[word] - 1, steps + 1
        depth[i] = steps
    return depth


def spanning_edges(distances: np.ndarray, keep: np.ndarray) -> set[tuple[int, int]]:
    """Minimum spanning tree edges (sorted pairs) over the ``keep`` words, as ``prims_matrix_to_edges``:
    all ordered pairs of kept words in row-major order, stably sorted by distance, joined by union-find."""
    words = np.flatnonzero(keep)
    if len(words) < 2:
        return set()
    sub = np.asarray(distances, dtype=np.float64)[np.ix_(words, words)]
    order = np.argsort(sub, axis=None, kind="stable")
    parent = list(range(len(words)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    edges: set[tuple[int, int]] = set()
    for flat in order:
        i, j = divmod(int(flat), len(words))
        root_i, root_j = find(i), find(j)
        if root_i != root_j:
            parent[root_i] = root_j
            edges.add((int(words[min(i, j)]), int(words[max(i, j)])))
            if len(edges) == len(words) - 1:
                break
    return edges


def uuas_counts(predicted: np.ndarray, gold: np.ndarray, keep: np.ndarray) -> tuple[int, int]:
    """(gold edges the predicted tree has, gold edges) of one sentence, from distance matrices."""
    gold_edges = spanning_edges(gold, keep)
    return len(gold_edges & spanning_edges(predicted, keep)), len(gold_edges)


def row_spearman(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row of ``predicted`` with the same row of ``gold`` (ties averaged,
    as ``scipy.stats.spearmanr``); a row that is constant in either gives NaN, as spearmanr does."""
    a = rankdata(predicted, axis=-1)
    b = rankdata(gold, axis=-1)
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


def root_hit(predicted_depth: np.ndarray, heads: Sequence[int], punct: np.ndarray) -> bool:
    """``get_nopunct_argmin``: the least deep word that is not punctuation (any word if all are)."""
    depth = np.asarray(predicted_depth, dtype=np.float64)
    masked = np.where(punct, np.inf, depth) if not punct.all() else depth
    return int(np.argmin(masked)) == list(heads).index(0)


def length_averaged(lengths: np.ndarray, sums: np.ndarray, counts: np.ndarray, weights: np.ndarray | None = None
                    ) -> np.ndarray:
    """Hewitt's average: the mean of per-length means over the lengths 5-50 present.

    Per sentence: its length, the sum of its correlations and how many there are (rows for
    distances, 1 for depth). ``weights`` (resamples, sentences) gives one average per bootstrap
    resample; without it, one value."""
    low, high = SPEARMAN_LENGTHS
    w = np.ones((1, len(lengths))) if weights is None else weights
    means = []
    for length in range(low, high + 1):
        chosen = lengths == length
        if not chosen.any():
            continue
        num, den = w[:, chosen] @ sums[chosen], w[:, chosen] @ counts[chosen]
        with np.errstate(invalid="ignore", divide="ignore"):
            means.append(np.where(den > 0, num / den, np.nan))
    if not means:
        return np.full(w.shape[0], np.nan)
    return np.nanmean(np.stack(means, 1), axis=1)
