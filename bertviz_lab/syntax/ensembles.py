"""Head ensembles per relation (Limisiewicz, Rosa & Mareček 2020, "Universal Dependencies
according to BERT: both more specific and more general", Findings of EMNLP), and attention
trees scored the way the structural probe is (``trees.py``), for the comparison figure.

As their released code defines it (github.com/Tom556/BERTHeadEnsembles, MIT;
``head-ensembles/attention_wrapper.py``, ``head_ensemble.py``, ``metrics.py``):

- Word-level maps: [CLS]/[SEP] are left out and each row is renormalised over the sentence's
  pieces (their softmax over the sentence's raw scores only, which is the same thing), then
  attention *from* a word is the mean over its pieces and *to* a word the sum.
- An ensemble's map is the mean of its heads' maps; the diagonal is zeroed and the predicted
  partner of a word is its row's argmax. dependent->parent (``d2p``) reads the dependent's row;
  parent->dependent (``p2d``) reads the parent's row, which must point at the dependent.

Directions are named as everywhere in the project (``directions.py``): their ``d2p`` is
``dep->head`` (Clark's), their ``p2d`` is ``head-row->dep``, which is NOT Clark's ``head->dep``
(the dependent's column). ``head->dep`` is computed too, as Clark does: the ensemble's map
transposed, i.e. the argmax over the dependent's column of the mean map.
- Greedy choice (``HeadEnsemble.consider_candidate``): the 25 best single heads, best first,
  are offered in turn; while the ensemble has fewer than 4 heads a candidate joins if it raises
  the accuracy; after that it replaces the member whose replacement raises the accuracy most,
  if any does. Ensembles are chosen on one half of the sentences and reported on the other.

Where we differ: relations are the treebank's UD relations (their paper merges some into its
own labels with a UDApi conversion), so numbers are comparable with our per-head table; root arcs
are left out of every relation, ``all`` included (their ``all`` keeps them: d2p always misses them,
and p2d reads the row at index -1, the last word's).

Attention *trees* here are our extension, not their ``extract_trees.py`` (which joins log-weighted
relation ensembles into a directed tree from the gold root): per layer, the greedy rule above picks
up to 4 of the layer's heads to maximise the UUAS of the undirected maximum spanning tree of their
mean symmetrised map, over non-punctuation words as the structural probe's UUAS counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree

from ..bert.encoder.hook_table import every_layer
from ..bert.runtime.budget import check_time
from ..lab import Lab
from ..naming import head_name
from ..treebank import Sentence
from .directions import DEP_HEAD, HEAD_ROW, normalize_direction
from .scoring import plan_batches, word_attention
from .trees import punctuation, spanning_edges, tree_distances, uses_ptb_tags

MAX_HEADS = 4
CANDIDATES = 25  # HEADS_TO_CHECK in head_ensemble.py
# Their direction names, accepted as aliases (``directions.ALIASES``): d2p is Clark's dep->head; p2d
# reads the parent's *row* (head-row->dep), which is not Clark's head->dep (the dependent's *column*).
D2P, P2D = "d2p", "p2d"


def best_first(singles: np.ndarray) -> np.ndarray:
    """Heads in the order the greedy rule offers them: ``np.argsort(...)[-25:][::-1]``, so among tied
    heads the higher index comes first; the best single head is the first of this order."""
    return np.argsort(singles, kind="stable")[::-1]


@dataclass
class WordMaps:
    """Every head's renormalised word-level map of each scored sentence."""

    maps: list[np.ndarray]  # per sentence (layers*heads, words, words) float32
    sentences: list[Sentence]
    indices: np.ndarray  # (sentences,) index in the treebank (the ids the held-out split uses)
    layers: int
    heads: int


def renormalised(word_attn: np.ndarray) -> np.ndarray:
    """Rows summing to one over the sentence's words (their softmax without [CLS]/[SEP])."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = word_attn / word_attn.sum(-1, keepdims=True)
    return np.nan_to_num(out)


def sentence_map(pieces: np.ndarray, enc) -> np.ndarray:
    """(layers, heads, tokens, tokens) piece attention -> (layers*heads, words, words): attention to
    [CLS]/[SEP] left out and rows renormalised, then pooled to words (from = mean, to = sum)."""
    keep = np.array([w is not None for w in enc.word_ids])
    words, _ = word_attention(renormalised(pieces * keep[None, None, None, :]), enc)
    return words.reshape(-1, *words.shape[-2:]).astype(np.float32)


def word_maps(lab: Lab, sentences: Sequence[Sentence], batch_size: int = 32, max_length: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> WordMaps:
    """The maps of every sentence that per-head scoring also keeps (same plan, same skips)."""
    plan = plan_batches(lab, sentences, batch_size, max_length)
    found: dict[int, tuple[np.ndarray, Sentence]] = {}
    for batch in plan.batches:
        tensors = lab.batch_tensors([enc for _, _, enc in batch])
        _, cache = lab.run(tensors, capture=(every_layer("pattern"),), compute_mlm=False)
        attention = lab.attention_of(cache).float().cpu().numpy()  # (batch, layers, heads, query, key)
        for row, (index, sentence, enc) in enumerate(batch):
            n = len(enc.ids)
            found[index] = (sentence_map(attention[row, :, :, :n, :n], enc), sentence)
        if progress is not None:
            progress(len(found), plan.used)
    order = sorted(found)
    return WordMaps([found[i][0] for i in order], [found[i][1] for i in order], np.array(order, dtype=np.int64),
                    lab.n_layers, lab.n_heads)


@dataclass
class ArcRows:
    """The vectors that decide one relation and direction: for each arc, every head's row of the word
    that must point (the dependent's for dep->head, the parent's for head-row->dep), or the dependent's
    column for head->dep, grouped by sentence length."""

    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # (vectors (arcs, heads, n), self, target, sentence)

    def hits(self, heads: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(sentence of each arc, whether the mean map of ``heads`` points at the target)."""
        sentence, hit = [], []
        for rows, self_index, target, ids in self.groups:
            mean = rows[:, list(heads), :].mean(1)  # (arcs, n)
            mean[np.arange(len(mean)), self_index] = 0.0  # np.fill_diagonal on the ensemble's map
            hit.append(mean.argmax(-1) == target)
            sentence.append(ids)
        return (np.concatenate(sentence) if sentence else np.zeros(0, np.int64),
                np.concatenate(hit) if hit else np.zeros(0, bool))

    def accuracy(self, heads: Sequence[int]) -> float:
        _, hit = self.hits(heads)
        return float(hit.mean()) if len(hit) else 0.0

    def single_accuracies(self, n_heads: int) -> np.ndarray:
        return np.array([self.accuracy([k]) for k in range(n_heads)])


def arc_vector(m: np.ndarray, direction: str, dep: int, parent: int) -> tuple[np.ndarray, int, int]:
    """(every head's vector whose argmax must hit the target (heads, n), the word's own index, the
    target) of one arc in the map ``m`` (heads, n, n), for a direction of ``directions.py``."""
    if direction == DEP_HEAD:  # the dependent's row points at its parent
        return m[:, dep, :], dep, parent
    if direction == HEAD_ROW:  # the parent's row points at the dependent (their p2d)
        return m[:, parent, :], parent, dep
    return m[:, :, dep], dep, parent  # HEAD_DEP: the word attending most to the dependent is its parent


def arc_rows(maps: WordMaps, relation: str, direction: str, sentence_ids: np.ndarray | None = None) -> ArcRows:
    """The arcs of ``relation`` (``all``: every arc between two words) read in ``direction``: any name of
    ``directions.py`` or an alias (d2p, p2d); another name is a ValueError."""
    direction = normalize_direction(direction)
    chosen = set(maps.indices.tolist() if sentence_ids is None else sentence_ids.tolist())
    by_length: dict[int, list] = {}
    for index, sentence, m in zip(maps.indices, maps.sentences, maps.maps):
        if int(index) not in chosen:
            continue
        for dep, (head, rel) in enumerate(zip(sentence.heads, sentence.relations)):
            if head == 0 or (relation != "all" and rel != relation):
                continue
            by_length.setdefault(m.shape[-1], []).append((*arc_vector(m, direction, dep, head - 1), int(index)))
    groups = [(np.stack([a[0] for a in arcs]), np.array([a[1] for a in arcs]), np.array([a[2] for a in arcs]),
               np.array([a[3] for a in arcs])) for _, arcs in sorted(by_length.items())]
    return ArcRows(groups)


def greedy_ensemble(score: Callable[[Sequence[int]], float], singles: np.ndarray, max_heads: int = MAX_HEADS,
                    candidates: int = CANDIDATES) -> tuple[list[int], float]:
    """``HeadEnsemble.consider_candidate`` over the best ``candidates`` single heads (flat indices),
    offered best first; returns the ensemble and its score."""
    offered = best_first(singles)[:candidates]
    ensemble: list[int] = []
    best = 0.0
    for candidate in (int(c) for c in offered):
        if not ensemble:
            ensemble, best = [candidate], score([candidate])
        elif len(ensemble) < max_heads:
            value = score(ensemble + [candidate])
            if value > best:
                ensemble, best = ensemble + [candidate], value
        else:
            swap, swap_value = None, 0.0
            for k in range(max_heads):
                trial = ensemble[:k] + [candidate] + ensemble[k + 1:]
                value = score(trial)
                if value > best and value > swap_value:
                    swap, swap_value = k, value
            if swap is not None:
                ensemble = ensemble[:swap] + [candidate] + ensemble[swap + 1:]
                best = swap_value
    return ensemble, best


def ensemble_name(heads: Sequence[int], n_heads: int) -> str:
    return "+".join(head_name(*divmod(k, n_heads)) for k in heads)


@dataclass
class TreeGold:
    """Per sentence: the non-punctuation words and the gold edges among them (``trees.py``)."""

    keep: list[np.ndarray]
    edges: list[set[tuple[int, int]]]

    @classmethod
    def of(cls, maps: WordMaps) -> TreeGold:
        ptb = uses_ptb_tags(maps.sentences)
        keep = [~punctuation(s, ptb) for s in maps.sentences]
        return cls(keep, [spanning_edges(tree_distances(s.heads), k) for s, k in zip(maps.sentences, keep)])


def maximum_tree(weights: np.ndarray, keep: np.ndarray) -> set[tuple[int, int]]:
    """Edges (sorted pairs, sentence positions) of the maximum spanning tree of a symmetric map
    over the ``keep`` words (SciPy's minimum spanning tree of ``top - weight``)."""
    words = np.flatnonzero(keep)
    if len(words) < 2:
        return set()
    sub = weights[np.ix_(words, words)].astype(np.float64)
    cost = sub.max() + 1.0 - sub  # every pair an edge with positive cost
    np.fill_diagonal(cost, 0.0)
    tree = minimum_spanning_tree(cost).tocoo()
    return {(int(words[min(i, j)]), int(words[max(i, j)])) for i, j in zip(tree.row, tree.col)}


def tree_counts(maps: WordMaps, gold: TreeGold, heads: Sequence[int], positions: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """UUAS counts (correct, total) per sentence at ``positions`` (indices into ``maps``) of the
    tree decoded from the mean map of ``heads``, over non-punctuation words, as the probe's."""
    correct, total = np.zeros(len(positions)), np.zeros(len(positions))
    for k, i in enumerate(positions):
        check_time()  # a request past its time stops between sentences (bert/runtime/budget.py)
        mean = maps.maps[i][list(heads)].mean(0)
        edges = gold.edges[i]
        correct[k] = len(edges & maximum_tree(mean + mean.T, gold.keep[i]))
        total[k] = len(edges)
    return correct, total


def relations_of(sentences: Sequence[Sentence], min_arcs: int = 1) -> list[str]:
    """``all``, then the relations with at least ``min_arcs`` arcs by frequency (root left out), as
    ``statistics.relations_by_count`` lists them for the per-head tables."""
    counts: dict[str, int] = {}
    for sentence in sentences:
        for head, relation in zip(sentence.heads, sentence.relations):
            if head:
                counts[relation] = counts.get(relation, 0) + 1
    return ["all", *sorted((r for r, c in counts.items() if c >= min_arcs and r != "root"), key=lambda r: (-counts[r], r))]
