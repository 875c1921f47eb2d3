"""From an ArcTable to the numbers a paper reports, each with its uncertainty.

- Accuracy of a head for a relation: the share of that relation's words whose gold head the
  head predicts (pooled over sentences, as Clark et al. 2019 count).
- 95% intervals: percentile bootstrap over *sentences* (seeded; 1,000 resamples by default).
  Each resample is a vector of multinomial sentence weights, so one matrix product turns the
  per-sentence counts of every head into every resample's accuracy at once.
- The best of many heads is optimistic. ``heldout`` chooses the best head on one seeded half
  of the sentences and reports its accuracy on the other half.
- Best head vs baseline: a paired bootstrap (the same resamples for both); the p-value is the
  share of resamples where the head does not beat the baseline, (k + 1) / (B + 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .directions import CLARK_DIRECTIONS, normalize_direction
from .predictors import OFFSETS
from .scoring import ALL, DIRECTIONS, ROOT, TREE, ArcTable

LEVEL = 0.95


@dataclass
class Resampler:
    """Bootstrap weights over a set of sentences: ``weights[b, s]`` = copies of sentence s in resample b."""

    sentences: np.ndarray  # (sentences,) sorted ids
    weights: np.ndarray  # (resamples, sentences) float64

    @classmethod
    def over(cls, sentence_ids: np.ndarray, resamples: int, seed: int) -> Resampler:
        ids = np.unique(sentence_ids)
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(len(ids), np.full(len(ids), 1.0 / len(ids)), size=resamples) if len(ids) else \
            np.zeros((resamples, 0))
        return cls(ids, weights.astype(np.float64))

    def restricted(self, sentence_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Columns of the sentences in ``sentence_ids`` (a subset): (their ids, (resamples, subset) weights)."""
        ids = np.unique(sentence_ids)
        return ids, self.weights[:, np.searchsorted(self.sentences, ids)]


def per_sentence(arc_sentence: np.ndarray, values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Sum ``values`` (arcs, k) per sentence, in the order of ``ids``: (len(ids), k)."""
    inverse = np.searchsorted(ids, arc_sentence)
    order = np.argsort(inverse, kind="stable")
    sorted_inverse = inverse[order]
    starts = np.flatnonzero(np.r_[True, sorted_inverse[1:] != sorted_inverse[:-1]])
    out = np.zeros((len(ids), values.shape[1]))
    if len(order):
        out[sorted_inverse[starts]] = np.add.reduceat(values[order].astype(np.float64), starts, axis=0)
    return out


@dataclass
class Estimate:
    """Accuracy of k predictors (e.g. every head) with bootstrap draws of each."""

    correct: np.ndarray  # (k,)
    total: int
    draws: np.ndarray  # (resamples, k)

    @property
    def accuracy(self) -> np.ndarray:
        return self.correct / max(self.total, 1)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """95% percentile interval; resamples that drew no sentence with this relation are left out."""
        return percentile_interval(self.draws, self.correct.shape)


def percentile_interval(draws: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of (resamples, k) draws. A resample without the relation is
    a NaN row (its denominator is shared by every head), so whole rows are dropped."""
    tail = 100 * (1 - LEVEL) / 2
    draws = draws[~np.isnan(draws).any(axis=1)] if draws.ndim == 2 else draws
    if not draws.shape[0]:
        return np.full(shape, np.nan), np.full(shape, np.nan)
    low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
    return low, high


def estimate(arc_sentence: np.ndarray, hits: np.ndarray, resampler: Resampler) -> Estimate:
    """``hits`` (arcs, k) bool/float for arcs of ``arc_sentence``; bootstrap over their sentences."""
    ids, weights = resampler.restricted(arc_sentence)
    correct = per_sentence(arc_sentence, hits, ids)  # (sentences, k)
    total = per_sentence(arc_sentence, np.ones((len(arc_sentence), 1)), ids)[:, 0]  # (sentences,)
    draw_total = weights @ total  # (resamples,)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (weights @ correct) / draw_total[:, None]
    return Estimate(correct.sum(0), int(total.sum()), draws)


def relation_hits(arcs: ArcTable, relation: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(arc sentences, (arcs, layers*heads) hits) of one relation for a direction or TREE.

    Root words count (as misses) for the directions' ``all``; trees have no root arc, so TREE
    scores only arcs between two words (UUAS).
    """
    mask = arcs.mask(relation)
    if kind == TREE:
        mask &= ~arcs.is_root
    else:
        kind = normalize_direction(kind, CLARK_DIRECTIONS)
    return arcs.sentence[mask], arcs.hits[kind][mask].reshape(int(mask.sum()), -1)


def head_estimates(arcs: ArcTable, relation: str, resampler: Resampler, kinds=DIRECTIONS) -> dict[str, Estimate]:
    return {kind: estimate(*relation_hits(arcs, relation, kind), resampler) for kind in kinds}


def best_of(estimates: dict[str, Estimate]) -> tuple[str, int]:
    """(direction, flat head index) of the highest accuracy; ties go to the first direction, lowest head."""
    direction = max(estimates, key=lambda d: (estimates[d].accuracy.max(), -list(estimates).index(d)))
    return direction, int(np.argmax(estimates[direction].accuracy))


def offset_baseline(arcs: ArcTable, relation: str, resampler: Resampler) -> tuple[int, Estimate]:
    """Clark's best fixed offset for a relation (ties to the larger offset, as ``max((score, i))``)."""
    mask = arcs.mask(relation)
    est = estimate(arcs.sentence[mask], arcs.offset_hits[mask], resampler)
    best = max(range(len(OFFSETS)), key=lambda i: (est.accuracy[i], OFFSETS[i]))
    return OFFSETS[best], Estimate(est.correct[[best]], est.total, est.draws[:, [best]])


def split_sentences(sentence_ids: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split by sentence: (ids to select heads on, ids to report on)."""
    ids = np.unique(sentence_ids)
    shuffled = np.random.default_rng(seed).permutation(ids)
    cut = int(round(fraction * len(ids)))
    return np.sort(shuffled[:cut]), np.sort(shuffled[cut:])


def relations_by_count(arcs: ArcTable, min_arcs: int = 1) -> list[str]:
    """``all`` first, then relations by frequency; root is left out (no head can predict it)."""
    counts = arcs.counts()
    chosen = sorted((r for r, c in counts.items() if c >= min_arcs and r != ROOT), key=lambda r: (-counts[r], r))
    return [ALL, *chosen]
