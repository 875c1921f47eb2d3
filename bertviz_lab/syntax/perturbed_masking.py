"""Perturbed Masking: a dependency tree read from the model itself, with no trained probe (Wu, Chen, Kao &
Liu, ACL 2020, "Perturbed Masking: Parameter-free Probing for Analyzing and Interpreting BERT",
arXiv 2004.14786), as their released code defines it (github.com/LividWo/Perturbed-Masking, commit
f578592: ``dependency/get_matrix_for_dep_probe.py``, ``dependency/dep_parsing.py``,
``dependency/evaluation.py``; details in ``docs/research/perturbed-masking.md``).

- **Impact matrix** (two-stage masking). For the piece at position i, mask every piece of i's word, then
  also every piece of word j: ``M[i][j] = ||H(x \\ {w_i})_i - H(x \\ {w_i, w_j})_i||_2`` on one layer's
  hidden states (their default: the last). Rows run over every piece, [CLS] and [SEP] included ([CLS]
  and [SEP] are never masked, so their row compares the unmasked input with one word masked).
- **Word level.** Columns: the first piece of each word (every piece of a word gives the same column);
  rows: the *mean* of the word's piece rows (``--subword avg``, their default); the [SEP] row and column
  dropped, [CLS] kept as index 0, the ROOT. ``F[d][h]`` is the impact of word h on word d.
- **Eisner** (their default). The gold root is injected (``F[root] = 0; F[root, 0] = 1; F[0, 0] = 0``),
  then their ``softmax``, which divides ``exp(F[i][j])`` by the sum of row **j** (``e_x / e_x.sum(axis=1)``
  without ``keepdims`` broadcasts over the last axis: not a row softmax), then the transpose, so that
  ``score(h -> d) = exp(F[d][h]) / sum_k exp(F[h][k])``; projective Eisner over it (``tree_decoders.py``).
- **MST** ("cle"): raw ``F`` with row 0 zeroed and the gold root injected, Dozat's Chu-Liu-Edmonds.
- **Right-chain** baseline: every word to the next, the gold root to ROOT (the last word's head is past
  the sentence, a miss, as in their code).
- **UAS** as their ``_evaluation``: (word, head) pairs against gold, punctuation and the root arc counted,
  micro-averaged over words; we add a percentile-bootstrap interval over sentences. Their reader keeps UD
  empty nodes (7 in PUD) as words; ours skips them, as UD says, so our PUD count is 21,176 words, not 21,183.

Their README gives UAS 41.7 for bert-base-uncased on UD English PUD (layer 12, Eisner, gold root); a
figure from another model is the same protocol on different weights, never a reproduction.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from ..bert.encoder.hook_table import hidden_state_names
from ..conclusions import verdict
from ..engines import LOCAL, Engine, run_units
from ..lab import Encoded, Lab
from ..treebank import Sentence
from .scoring import words_without_pieces
from .statistics import Resampler, estimate, percentile_interval
from .tree_decoders import chu_liu_edmonds, eisner

PUBLISHED_UAS = {"model": "bert-base-uncased", "treebank": "UD English PUD", "layer": 12, "decoder": "eisner",
                 "uas": 41.7, "source": "github.com/LividWo/Perturbed-Masking README (Wu et al. 2020, Table 1)"}
DECODERS = ("eisner", "cle")
PERTURBED_MASKING = "perturbed masking tree"  # its method name in the structural-probe comparison


def _masked_inputs(enc: Encoded, n_words: int, mask_id: int) -> tuple[np.ndarray, dict[frozenset, int]]:
    """Every input the two stages need: nothing, one word or two words masked (all their pieces): rows of ids,
    and the row of each set of masked words. Their batches repeat these inputs; each is run once here."""
    ids = np.array(enc.ids)
    pieces = [np.array([p for p, w in enumerate(enc.word_ids) if w == word]) for word in range(n_words)]
    sets = [frozenset()] + [frozenset([d]) for d in range(n_words)] + \
        [frozenset([d, v]) for d in range(n_words) for v in range(d + 1, n_words)]
    rows = np.repeat(ids[None, :], len(sets), axis=0)  # (inputs, pieces)
    for row, words in enumerate(sets):
        for word in words:
            rows[row, pieces[word]] = mask_id
    return rows, {words: row for row, words in enumerate(sets)}


def impact_matrices(lab: Lab, words: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """Word-level impact matrices of every layer: (layers, words + 1, words + 1), index 0 = [CLS] (ROOT);
    layer k of the result is the output of block k + 1 (the embeddings, where masking one word cannot move
    another's vector, are left out)."""
    enc = lab.encode_words(list(words))
    n = len(words)
    if words_without_pieces(enc, n):
        raise ValueError("a word of this sentence becomes no word piece, so it cannot be masked")
    rows, row_of = _masked_inputs(enc, n, lab.mask_id)
    hooks = hidden_state_names(lab.n_layers)[1:]  # every block's output
    states = []
    for start in range(0, len(rows), batch_size):
        chunk = torch.tensor(rows[start:start + batch_size], device=lab.device)
        tensors = {"input_ids": chunk, "token_type_ids": torch.zeros_like(chunk),
                   "attention_mask": torch.ones_like(chunk)}
        _, cache = lab.run(tensors, capture=hooks, compute_mlm=False)
        states.append(torch.stack([cache[h] for h in hooks], 1).float().cpu().numpy())  # (batch, layers, pos, d)
    hidden = np.concatenate(states)  # (inputs, layers, pos, d)
    word_ids = enc.word_ids
    cls = next(p for p, w in enumerate(word_ids) if w is None)  # [CLS]: the first special position
    out = np.zeros((hidden.shape[1], n + 1, n + 1))  # (layers, 1 + words, 1 + words)
    base = hidden[row_of[frozenset()]]  # (layers, pos, d)
    for v in range(n):  # the [CLS] row: unmasked input vs word v masked
        out[:, 0, v + 1] = np.linalg.norm(base[:, cls] - hidden[row_of[frozenset([v])], :, cls], axis=-1)
    for d in range(n):
        own = [p for p, w in enumerate(word_ids) if w == d]
        first = hidden[row_of[frozenset([d])]][:, own]  # (layers, pieces of d, dim)
        for v in range(n):
            if v != d:
                second = hidden[row_of[frozenset([d, v])]][:, own]
                out[:, d + 1, v + 1] = np.linalg.norm(first - second, axis=-1).mean(-1)  # mean of piece rows
    return out


def their_softmax(x: np.ndarray) -> np.ndarray:
    """``dep_parsing.softmax`` exactly: ``exp(x - max) / exp(x - max).sum(axis=1)`` with numpy's broadcasting,
    so entry (i, j) is divided by the sum of row j."""
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum(axis=1)


def decode(impact: np.ndarray, root: int | None, decoder: str = "eisner") -> np.ndarray:
    """Heads (1-based, 0 = ROOT) of the sentence's words from one word-level impact matrix, as their
    ``decoding()`` computes them; ``root`` is the gold root word (1-based) injected as their default
    ``--root gold``, or None to decode without it."""
    f = np.array(impact, dtype=np.float64, copy=True)
    if decoder == "eisner":
        if root:
            f[root] = 0
            f[root, 0] = 1
            f[0, 0] = 0
        return eisner(their_softmax(f).transpose())[1:]
    if decoder == "cle":
        f[0] = 0
        if root:
            f[root] = 0
            f[root, 0] = 1
        return chu_liu_edmonds(f)[1:]
    raise ValueError(f"unknown decoder {decoder!r}: choose one of {', '.join(DECODERS)}")


def right_chain(n_words: int, root: int | None) -> np.ndarray:
    """Their right-chain baseline: word i's head is word i + 1, the gold root's is ROOT (1-based heads)."""
    return np.array([0 if i == root else i + 1 for i in range(1, n_words + 1)])


@dataclass
class PerturbedMaskingResult:
    """Per word of the scored sentences: which trees got its gold head, per layer and decoder."""

    sentence: np.ndarray  # (words,) index of the sentence in the scored list
    hits: dict[str, np.ndarray]  # decoder -> (words, layers) bool
    chain_hits: np.ndarray  # (words,) bool
    layers: int
    skipped: int  # sentences too long or with a word that has no piece

    def uas(self, resamples: int = 1000, seed: int = 0) -> dict:
        """UAS per decoder and layer (1-based) and of the right chain, each with a 95% interval over sentences."""
        resampler = Resampler.over(self.sentence, resamples, seed)
        out: dict = {}
        for decoder, hits in self.hits.items():
            est = estimate(self.sentence, hits, resampler)
            low, high = est.interval()
            out[decoder] = [{"layer": k + 1, "uas": float(est.accuracy[k]), "low": float(low[k]), "high": float(high[k])}
                            for k in range(self.layers)]
        est = estimate(self.sentence, self.chain_hits[:, None], resampler)
        low, high = est.interval()
        out["right-chain"] = {"uas": float(est.accuracy[0]), "low": float(low[0]), "high": float(high[0])}
        out["words"], out["sentences"] = int(len(self.sentence)), int(len(np.unique(self.sentence)))
        return out

    def against_chain(self, decoder: str, layer: int, resamples: int = 1000, seed: int = 0) -> str:
        """The conclusion the paired interval of (decoder's UAS at ``layer``, 1-based) - (right-chain's UAS) supports."""
        resampler = Resampler.over(self.sentence, resamples, seed)
        both = np.stack([self.hits[decoder][:, layer - 1], self.chain_hits], 1)
        draws = estimate(self.sentence, both, resampler).draws  # (resamples, 2), the same resampled sentences
        low, high = percentile_interval(draws[:, :1] - draws[:, 1:], (1,))
        return verdict(float(low[0]), float(high[0]), f"perturbed masking ({decoder}) at layer {layer}", "right-chain")


def sentence_hits(lab: Lab, sentence: Sentence, decoders: Sequence[str], gold_root: bool
                  ) -> tuple[dict[str, np.ndarray], np.ndarray] | None:
    """One sentence: per decoder, which words' gold heads each layer's tree gets, (words, layers), and which the
    right chain gets, (words,); None for a sentence too long or with a word of no piece. A unit of work for
    ``engines.run_units``."""
    enc = lab.encode_words(sentence.words)
    if len(enc.ids) > lab.max_tokens or words_without_pieces(enc, len(sentence.words)):
        return None
    gold = np.array(sentence.heads)
    gold_root_word = next((i + 1 for i, h in enumerate(sentence.heads) if h == 0), None)
    root = gold_root_word if gold_root else None
    impacts = impact_matrices(lab, sentence.words)  # (layers, n + 1, n + 1)
    hits = {decoder: np.stack([decode(m, root, decoder) == gold for m in impacts], 1) for decoder in decoders}
    return hits, right_chain(len(gold), gold_root_word) == gold


def perturbed_masking(lab: Lab, sentences: Sequence[Sentence], decoders: Sequence[str] = DECODERS,
                      gold_root: bool = True, progress: Callable[[int, int], None] | None = None,
                      engine: Engine = LOCAL) -> PerturbedMaskingResult:
    """Every sentence's impact matrices, decoded per layer, scored against its gold heads; each sentence a unit
    on ``engine`` (local or Ray), so the hits, and the intervals over them, are the same either way."""
    ids, hits, chain, skipped = [], {d: [] for d in decoders}, [], 0
    work = partial(sentence_hits, decoders=tuple(decoders), gold_root=gold_root)
    for index, found in enumerate(run_units(lab, work, list(sentences), engine, progress)):
        if found is None:
            skipped += 1
            continue
        for decoder in decoders:
            hits[decoder].append(found[0][decoder])
        chain.append(found[1])
        ids.append(np.full(len(found[1]), index))
    if not ids:
        raise ValueError("no sentence could be scored (every one was too long or had a word with no piece)")
    return PerturbedMaskingResult(np.concatenate(ids), {d: np.concatenate(v) for d, v in hits.items()},
                                  np.concatenate(chain), lab.n_layers, skipped)


def undirected_counts(lab: Lab, sentences: Sequence[Sentence], decoder: str = "eisner",
                      progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Per sentence and layer, (gold arcs between two words the decoded tree also joins, gold arcs between two
    words): the tree's UUAS counts, comparable with a structural probe's; (sentences, layers, 2). A sentence that
    cannot be masked word by word counts (0, 0)."""
    out = np.zeros((len(sentences), lab.n_layers, 2))
    for index, sentence in enumerate(sentences):
        if progress is not None:
            progress(index, len(sentences))
        gold = {frozenset((i + 1, h)) for i, h in enumerate(sentence.heads) if h > 0}
        root = next((i + 1 for i, h in enumerate(sentence.heads) if h == 0), None)
        try:
            impacts = impact_matrices(lab, sentence.words)
        except ValueError:
            continue
        for layer, impact in enumerate(impacts):
            tree = {frozenset((i + 1, int(h))) for i, h in enumerate(decode(impact, root, decoder)) if h > 0}
            out[index, layer] = (len(gold & tree), len(gold))
    if progress is not None:
        progress(len(sentences), len(sentences))
    return out
