"""Structural probes (Hewitt & Manning 2019, "A Structural Probe for Finding Syntax in Word
Representations", NAACL), trained per layer on a treebank's *train* split.

Implemented as their released code defines it (github.com/john-hewitt/structural-probes,
Apache-2.0; ``probe.py``, ``loss.py``, ``regimen.py``, ``data.py``, ``reporter.py``):

- Word vectors: a layer's hidden state averaged over the word's pieces (``BERTDataset``:
  ``np.mean`` over the pieces of each treebank word). Our layer k is the output of encoder block k
  (1-based) and layer 0 the embeddings (after the projection, where a model has one). Their
  ``convert_raw_to_bert.py`` stores the 12 blocks' outputs without the embeddings, so their index k
  is our layer k + 1 (their README says layers 0-11, their configs "{1,...,12}"); it also feeds every
  token segment id 1, where we feed 0, and splits words with the WordPiece step only (we pass the
  treebank's words to the full tokenizer, so "U.S." may split differently).
- Distance probe (``TwoWordPSDProbe``): d_B(h_i, h_j) = ||B(h_i - h_j)||^2, B of shape
  (hidden, rank) with rank = hidden (their BERT configs use full rank, 768 for BERT-base),
  initialised uniform(-0.05, 0.05). Depth probe (``OneWordPSDProbe``): ||B h_i||^2.
- Loss (``L1DistanceLoss`` / ``L1DepthLoss``): per sentence the summed absolute error over all
  word pairs divided by length^2 (depth: by length), then the mean over the batch's sentences.
- Regimen: Adam lr 0.001, ReduceLROnPlateau(factor 0.1, patience 0) on the epoch's stopping
  loss, batches of 20 sentences shuffled each epoch, at most 40 epochs; the parameters are kept
  when the stopping loss improves by more than 0.0001, and training stops once it has not for
  5 epochs (``min_dev_loss_epoch < epoch - 4``).
- Metrics and punctuation: ``trees.py`` (UUAS over non-punctuation words, distance and depth
  Spearman averaged over lengths 5-50, root accuracy).

Where we differ, and why: they stop on the dev split and report on dev as well (the test lines of
``run_report_results`` are commented out). We stop on a seeded 10% of the *train* split (or a file
the user names) so that the treebank we report on is never used for any choice. One-word sentences
(no pair of words) are left out; they keep them (each a trivially correct root).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..bert.encoder.hook_table import hidden_state_names
from ..bert.runtime.budget import check_time
from ..engines import LOCAL, Engine, Reading, map_by_length
from ..lab import Encoded, Lab
from ..treebank import Sentence
from .scoring import words_without_pieces
from .trees import (
    length_averaged,
    punctuation,
    root_hit,
    row_spearman,
    tree_depths,
    tree_distances,
    uses_ptb_tags,
    uuas_counts,
)

Steps = Callable[[int, int], None]  # (done, total), e.g. sentence passes
KINDS = ("distance", "depth")
BATCH = 20
EPOCHS = 40
LR = 0.001
PATIENCE = 4  # stop when the best epoch is more than this many epochs back (regimen.py: min_dev_loss_epoch < epoch - 4)
MIN_GAIN = 0.0001
INIT_RANGE = 0.05


class Projection(nn.Module):
    """The linear map B (hidden, rank) both probes learn, initialised as theirs: uniform(-0.05, 0.05)."""

    def __init__(self, hidden: int, rank: int) -> None:
        super().__init__()
        self.proj = nn.Parameter(torch.zeros(hidden, rank))
        nn.init.uniform_(self.proj, -INIT_RANGE, INIT_RANGE)


class DistanceProbe(Projection):
    """``TwoWordPSDProbe``: squared L2 distance after the linear map B. Computed as
    |t_i|^2 + |t_j|^2 - 2 t_i.t_j, the same function as their explicit (batch, n, n, rank)
    differences (a test checks) without that tensor, which is 0.7 GB for one batch of 150-word
    sentences at rank 384."""

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        t = words @ self.proj  # (batch, words, rank)
        norms = (t * t).sum(-1)  # (batch, words)
        return (norms.unsqueeze(2) + norms.unsqueeze(1) - 2 * t @ t.transpose(1, 2)).clamp_min(0)  # (batch, words, words)


class DepthProbe(Projection):
    """``OneWordPSDProbe``: squared L2 norm after the linear map B."""

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        t = words @ self.proj  # (batch, words, rank)
        return (t * t).sum(-1)  # (batch, words)


def probe_loss(kind: str, predicted: torch.Tensor, gold: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """L1 loss normalised within each sentence (by length^2 for distances, length for depths), then
    averaged over sentences; padding is marked -1 in ``gold`` and ignored."""
    real = (gold != -1).float()
    error = torch.abs(predicted * real - gold * real)
    per_sentence = error.sum((1, 2)) / lengths.float() ** 2 if kind == "distance" else error.sum(1) / lengths.float()
    return per_sentence.sum() / (lengths != 0).sum()


@dataclass
class ProbeData:
    """Word vectors of every layer and the gold trees of a set of sentences."""

    features: list[np.ndarray]  # per sentence (layers + 1, words, hidden) float32
    sentences: list[Sentence]
    indices: list[int]  # each sentence's index in the treebank it came from
    skipped: int = 0  # too long for the model, or with a word that has no piece

    @property
    def layers(self) -> int:
        return self.features[0].shape[0] if self.features else 0


def word_vectors(lab: Lab, cache: dict, encs: Sequence[Encoded]) -> list[np.ndarray]:
    """Each sentence of a batch: every layer's hidden state (0 = embeddings) per word, the mean of its pieces,
    (layers + 1, words, hidden)."""
    states = [cache[h] for h in hidden_state_names(lab.n_layers)]
    project = lab.model.bert.embeddings_project  # ELECTRA's embedding_size -> hidden_size, else None
    if project is not None:
        with torch.inference_mode():
            states[0] = project(states[0])  # the vectors block 1 reads
    hidden = torch.stack(states, 1).float().cpu().numpy()  # (batch, layers+1, pos, d)
    out = []
    for row, enc in enumerate(encs):
        word_ids = np.array([-1 if w is None else w for w in enc.word_ids])
        n = int(word_ids.max()) + 1
        pieces = (word_ids[None, :] == np.arange(n)[:, None]).astype(np.float32)  # (words, pos)
        pieces /= pieces.sum(1, keepdims=True)
        out.append(np.einsum("wp,lpd->lwd", pieces, hidden[row, :, :len(word_ids)]).astype(np.float32))
    return out


def word_features(lab: Lab, sentences: Sequence[Sentence], batch_size: int = 32, max_tokens: int | None = None,
                  progress: Callable[[int, int], None] | None = None, engine: Engine = LOCAL) -> ProbeData:
    """Every layer's hidden state (0 = embeddings) per treebank word, the mean of its pieces;
    ``progress(done, total)`` is told the sentences done of those kept (0 before the first batch). Batches of
    like lengths are the units on ``engine`` (local or Ray): the same batches, so the same vectors."""
    limit = min(max_tokens or lab.max_tokens, lab.max_tokens)
    kept, encoded, skipped = [], [], 0
    for index, sentence in enumerate(sentences):
        enc = lab.encode_words(sentence.words)
        if len(enc.ids) > limit or words_without_pieces(enc, len(sentence.words)) or len(sentence.words) < 2:
            skipped += 1
            continue
        kept.append(index)
        encoded.append(enc)
    reading = Reading(tuple(hidden_state_names(lab.n_layers)), word_vectors)
    out = map_by_length(lab, encoded, reading, batch_size, engine, progress)
    return ProbeData(out, [sentences[i] for i in kept], kept, skipped)


def gold_of(kind: str, sentence: Sentence) -> np.ndarray:
    return tree_distances(sentence.heads) if kind == "distance" else tree_depths(sentence.heads)


@dataclass
class TrainedProbe:
    kind: str
    layer: int  # 0 = embeddings
    proj: np.ndarray  # (hidden, rank)
    epochs: int  # epochs run (the kept parameters are from ``best_epoch``)
    best_epoch: int
    stop_loss: float
    curve: list[tuple[float, float]] = field(default_factory=list)  # per epoch (train loss, stopping loss)
    seconds: float = 0.0

    def module(self) -> nn.Module:
        probe = (DistanceProbe if self.kind == "distance" else DepthProbe)(*self.proj.shape)
        with torch.no_grad():
            probe.proj.copy_(torch.from_numpy(self.proj))
        return probe.eval()


class Batches:
    """A probe data set as tensors, cut into batches of sentences on demand: the words of a batch
    packed without padding (what the projections see), plus where each sits in the padded
    (batch, n) layout the pairwise loss needs."""

    def __init__(self, data: ProbeData, kind: str) -> None:
        self.kind = kind
        self.features = [torch.from_numpy(f) for f in data.features]  # (layers+1, words, hidden) each
        self.golds = [torch.from_numpy(gold_of(kind, s)) for s in data.sentences]
        self.lengths = [len(s.words) for s in data.sentences]

    def __len__(self) -> int:
        return len(self.features)

    def batch(self, rows: Sequence[int], layers: Sequence[int]):
        lengths = torch.tensor([self.lengths[r] for r in rows])
        n = int(lengths.max())
        parts = [self.features[r][list(layers)] for r in rows]  # (layers, words, hidden) each
        if self.kind == "distance":  # distances do not change when a sentence's words move together
            parts = [part - part.mean(1, keepdim=True) for part in parts]
        words = torch.cat(parts, 1)  # (layers, packed, hidden)
        which = torch.cat([torch.full((self.lengths[r],), b) for b, r in enumerate(rows)])
        where = torch.cat([torch.arange(self.lengths[r]) for r in rows])
        shape = (len(rows), n, n) if self.kind == "distance" else (len(rows), n)
        gold = torch.full(shape, -1.0)
        for b, r in enumerate(rows):
            m = self.lengths[r]
            if self.kind == "distance":
                gold[b, :m, :m] = self.golds[r]
            else:
                gold[b, :m] = self.golds[r]
        return words, (which, where, len(rows), n), gold, lengths


def stacked_predictions(projs: torch.Tensor, words: torch.Tensor, layout: tuple, kind: str) -> torch.Tensor:
    """All probes at once: projs (layers, hidden, rank), packed words (layers, packed, hidden) ->
    (layers, batch, n, n) squared distances or (layers, batch, n) squared norms."""
    which, where, batch, n = layout
    packed = torch.bmm(words, projs)  # (layers, packed, rank)
    t = packed.new_zeros(packed.shape[0], batch, n, packed.shape[-1])
    t[:, which, where] = packed  # (layers, batch, n, rank)
    norms = (t * t).sum(-1)  # (layers, batch, n)
    if kind == "depth":
        return norms
    return (norms.unsqueeze(3) + norms.unsqueeze(2) - 2 * t @ t.transpose(2, 3)).clamp_min(0)


def epoch_losses(params: list[nn.Parameter], layers: list[int], data: Batches, order: Sequence[int],
                 optimizers: list | None) -> np.ndarray:
    """Per layer, the mean loss per sentence over one pass; trains when optimizers are given."""
    totals, count = np.zeros(len(layers)), 0
    for start in range(0, len(order), BATCH):
        check_time()  # a request past its time stops between batches (bert/runtime/budget.py)
        rows = list(order[start:start + BATCH])
        words, layout, gold, lengths = data.batch(rows, layers)
        with torch.set_grad_enabled(optimizers is not None):
            predicted = stacked_predictions(torch.stack(params), words, layout, data.kind)
            losses = torch.stack([probe_loss(data.kind, predicted[k], gold, lengths) for k in range(len(layers))])
        if optimizers is not None:
            for optimizer in optimizers:
                optimizer.zero_grad()
            losses.sum().backward()  # the layers' probes share no parameter: each gets its own gradient
            for optimizer in optimizers:
                optimizer.step()
        totals += losses.detach().numpy() * len(rows)
        count += len(rows)
    return totals / max(count, 1)


@dataclass(frozen=True)
class ProbeTraining:
    """How each probe is trained, the same for every layer and kind: the seed of its initialisation
    and batch order, its rank (None: full, the hidden size) and the most epochs it runs before early stopping."""

    seed: int = 0
    rank: int | None = None
    epochs: int = EPOCHS


def train_probes(data: ProbeData, stop: ProbeData, layers: Sequence[int], kind: str = "distance",
                 training: ProbeTraining = ProbeTraining(), progress: Callable[[str], None] | None = None
                 ) -> dict[int, TrainedProbe]:
    """One probe per layer, each with Hewitt & Manning's regimen (its own Adam, learning-rate
    schedule and early stopping; see the module docstring). The layers train side by side on the
    same shuffled batches, which changes nothing for any one of them and reads each batch once.
    ``progress`` is told, once at the end of each epoch, that epoch's stopping losses in words (at
    most ``training.epochs`` times: fewer when every layer stops early), so a caller can count epochs."""
    seed, rank, epochs = training.seed, training.rank, training.epochs
    generator = torch.Generator().manual_seed(seed)
    hidden = data.features[0].shape[-1]
    train, held = Batches(data, kind), Batches(stop, kind)
    params = {layer: nn.Parameter(torch.empty(hidden, rank or hidden).uniform_(-INIT_RANGE, INIT_RANGE,
                                                                                 generator=generator))
              for layer in layers}
    optimizers = {layer: torch.optim.Adam([params[layer]], lr=LR) for layer in layers}
    schedulers = {layer: torch.optim.lr_scheduler.ReduceLROnPlateau(optimizers[layer], mode="min", factor=0.1,
                                                                     patience=0) for layer in layers}
    best = {layer: (float("inf"), -1, params[layer].detach().clone()) for layer in layers}
    curves: dict[int, list] = {layer: [] for layer in layers}
    finished: dict[int, float] = {}
    rng, started, active = np.random.default_rng(seed), time.time(), list(layers)
    for epoch in range(epochs):
        if not active:
            break
        order = rng.permutation(len(train))
        train_loss = epoch_losses([params[k] for k in active], active, train, order,
                                  [optimizers[k] for k in active])
        stop_loss = epoch_losses([params[k] for k in active], active, held, range(len(held)), None)
        for layer, tl, sl in zip(list(active), train_loss, stop_loss):
            schedulers[layer].step(sl)
            curves[layer].append((round(float(tl), 5), round(float(sl), 5)))
            if sl < best[layer][0] - MIN_GAIN:
                best[layer] = (float(sl), epoch, params[layer].detach().clone())
            elif best[layer][1] < epoch - PATIENCE:
                active.remove(layer)
                finished[layer] = time.time() - started
        if progress is not None:
            progress(f"{kind} probes: epoch {epoch + 1}, stopping loss by layer "
                     + ", ".join(f"{k}: {sl:.4f}" for k, sl in zip(layers, [curves[k][-1][1] for k in layers])))
    return {layer: TrainedProbe(kind, layer, best[layer][2].numpy(), len(curves[layer]), best[layer][1] + 1,
                                best[layer][0], curves[layer], round(finished.get(layer, time.time() - started), 1))
            for layer in layers}


class WorkParts:
    """One ``(done, total)`` over the parts of a long run, each a number of sentence passes known up
    front (word vectors of a set of sentences: one pass each; a probe's training: one pass over its
    sentences per epoch, at most), so one bar and one estimate cover the whole run. ``of(name)`` is the
    part's own ``(done, total)`` callback told as the run's; ``finish(name)`` counts what the part left
    undone (probes that stopped early, sentences skipped) so the run still ends at its total."""

    def __init__(self, parts: Sequence[tuple[str, int]], steps: Steps | None) -> None:
        self.sizes, self.steps, self.starts = dict(parts), steps, {}
        start = 0
        for name, size in parts:
            self.starts[name], start = start, start + size
        self.total = start

    def of(self, name: str) -> Steps | None:
        if self.steps is None:
            return None
        start, size = self.starts[name], self.sizes[name]

        def report(done: int, total: int) -> None:
            self.steps(start + min(size, round(done * size / max(total, 1))), self.total)
        return report

    def finish(self, name: str) -> None:
        if self.steps is not None:
            self.steps(self.starts[name] + self.sizes[name], self.total)

    def counting(self, name: str, times: int, say: Callable[[str], None]) -> Callable[[str], None]:
        """A message callback that passes each message on to ``say`` and counts it as 1 of ``times``
        in part ``name`` (``train_probes`` says each epoch once, at its end)."""
        report, said = self.of(name), [0]

        def message(text: str) -> None:
            say(text)
            said[0] += 1
            if report is not None:
                report(said[0], times)
        return message


@dataclass
class SentenceMetrics:
    """Per-sentence counts from which every figure and its bootstrap interval is computed."""

    lengths: np.ndarray  # (sentences,) words
    uuas_correct: np.ndarray  # (sentences,)
    uuas_total: np.ndarray
    rho_sum: np.ndarray  # distance: sum of the word rows' Spearman; depth: the sentence's Spearman
    rho_count: np.ndarray  # distance: rows with a defined correlation; depth: 1 or 0
    root_hits: np.ndarray  # (sentences,) depth only (else zeros)

    def figures(self, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
        w = np.ones((1, len(self.lengths))) if weights is None else weights
        with np.errstate(invalid="ignore", divide="ignore"):
            return {"uuas": (w @ self.uuas_correct) / (w @ self.uuas_total),
                    "spearman": length_averaged(self.lengths, self.rho_sum, self.rho_count, w),
                    "root_accuracy": (w @ self.root_hits) / w.sum(1)}


def sentence_metrics(kind: str, predictions: Sequence[np.ndarray], sentences: Sequence[Sentence]) -> SentenceMetrics:
    """Distance predictions (words, words) or depth predictions (words,) -> per-sentence counts."""
    n = len(sentences)
    ptb = uses_ptb_tags(sentences)
    out = {k: np.zeros(n) for k in ("uuas_correct", "uuas_total", "rho_sum", "rho_count", "root_hits")}
    for i, (predicted, sentence) in enumerate(zip(predictions, sentences)):
        gold = gold_of(kind, sentence)
        if kind == "distance":
            out["uuas_correct"][i], out["uuas_total"][i] = uuas_counts(predicted, gold, ~punctuation(sentence, ptb))
            rho = row_spearman(predicted, gold)
        else:
            out["root_hits"][i] = root_hit(predicted, sentence.heads, punctuation(sentence, ptb))
            rho = row_spearman(predicted[None, :], gold[None, :])
        out["rho_sum"][i], out["rho_count"][i] = np.nansum(rho), np.isfinite(rho).sum()
    return SentenceMetrics(np.array([len(s.words) for s in sentences]), **out)


def predict(probe: TrainedProbe, data: ProbeData) -> list[np.ndarray]:
    module = probe.module()
    out = []
    with torch.inference_mode():
        for features in data.features:
            words = torch.from_numpy(features[probe.layer])[None]  # (1, words, hidden)
            if probe.kind == "distance":
                words = words - words.mean(1, keepdim=True)  # as in training: the same distances
            out.append(module(words)[0].numpy())
    return out


def right_branching(kind: str, sentences: Sequence[Sentence]) -> list[np.ndarray]:
    """The baseline's predictions: distance |i - j| along the sentence; depth = position."""
    if kind == "distance":
        return [np.abs(np.subtract.outer(np.arange(len(s.words)), np.arange(len(s.words)))).astype(np.float32)
                for s in sentences]
    return [np.arange(len(s.words), dtype=np.float32) for s in sentences]
