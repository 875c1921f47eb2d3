"""Minimum description length probing: the online codelength of dependency-relation labels given a layer's word
vectors (Voita & Titov 2020, "Information-Theoretic Probing with Minimum Description Length", EMNLP,
arXiv 2003.12298; released code github.com/lena-voita/description-length-probing, commit 2696af0;
``docs/research/mdl-probing.md``).

- **Task** (their edge-probing "dep" task on UD EWT): for each arc, the dependent's and the head's vectors
  (a word's vector is the mean of its pieces) give the arc's relation; K is the number of relations in
  the training split (their K is the label set's size, not the labels seen in the first block).
- **Online code.** The training sentences are shuffled once (seeded) and cut at ``int(f * N)`` sentences for
  f in 0.1%, 0.2%, 0.4%, 0.8%, 1.6%, 3.2%, 6.25%, 12.5%, 25%, 50%, 100% (their ``online_coding_portion_split``).
  The first block is sent with the uniform code (targets x log2 K); every later block with the classifier trained
  on all sentences before it (a fresh classifier each time, early-stopped on the dev split, its best-dev weights
  scoring the block). The model trained on 100% sends nothing and is not trained. Codelength is in bits;
  compression = uniform codelength (all targets x log2 K) / online codelength.
- **Probe** (their jiant edge classifier on one-word spans): each side projected to 256, concatenated, then
  Linear(512, 256), Tanh, LayerNorm, Dropout(0.3), Linear(256, K), softmax cross-entropy.

Where we differ, on purpose: their blocks' losses are natural-log cross-entropies added to a first block in
bits; we count every block in bits, as the paper's formula does. A block whose training prefix is empty
(small N) is coded uniformly, which their code leaves undefined. Their jiant run warm-starts each block from
the previous one; we train each classifier from scratch, as their control-tasks code does. Training: Adam at
1e-3, batches of 256 arcs (about their 20 sentences), an epoch at a time, stopping 4 epochs after the best dev loss, at most 40 epochs.

Baselines, as the paper sets them beside the model: the same classifier on Hewitt & Liang-style *control* labels
(each dependent word type gets one relation, drawn once from the training split's relation frequencies:
their control for POS tags, applied to relations) and on the randomly initialised model's vectors.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..treebank import Sentence

FRACTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
HIDDEN = 256
LR, BATCH, PATIENCE, EPOCHS = 1e-3, 256, 4, 40  # a batch: about 20 sentences of arcs, as their batches of 20


def cut_points(n_sentences: int, fractions: Sequence[float] = FRACTIONS) -> list[int]:
    """Where the shuffled sentences are cut: ``int(f * N)``, as their code truncates."""
    return [int(f * n_sentences) for f in fractions]


def online_codelength(block_targets: Sequence[int], block_bits: Sequence[float | None], classes: int) -> float:
    """Bits to send every label: the first block uniformly, each later block at the bits its classifier gave it (None:
    no classifier could be trained, the block is sent uniformly too)."""
    uniform = math.log2(classes)
    total = block_targets[0] * uniform
    for targets, bits in zip(block_targets[1:], block_bits[1:]):
        total += targets * uniform if bits is None else bits
    return float(total)


class RelationClassifier(nn.Module):
    """Their edge classifier for two one-word spans: a projection per side, then the MLP classifier."""

    def __init__(self, dim: int, classes: int) -> None:
        super().__init__()
        self.dependent, self.head = nn.Linear(dim, HIDDEN), nn.Linear(dim, HIDDEN)
        self.classify = nn.Sequential(nn.Linear(2 * HIDDEN, HIDDEN), nn.Tanh(), nn.LayerNorm(HIDDEN), nn.Dropout(0.3),
                                      nn.Linear(HIDDEN, classes))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:  # (arcs, 2, dim) -> (arcs, classes)
        return self.classify(torch.cat([self.dependent(pairs[:, 0]), self.head(pairs[:, 1])], -1))


@dataclass
class Arcs:
    """The arcs of some sentences at one layer: (arcs, 2, dim) dependent and head vectors, labels, sentence ids."""

    pairs: torch.Tensor
    labels: torch.Tensor
    sentence: np.ndarray


def arcs_of(features: Sequence[np.ndarray], sentences: Sequence[Sentence], labels: Sequence[Sequence[int]],
            layer: int) -> Arcs:
    """Every arc (root words have none) of the sentences as their word vectors at ``layer`` (0 = embeddings)."""
    pairs, ys, ids = [], [], []
    for index, (f, s, y) in enumerate(zip(features, sentences, labels)):
        deps = [i for i, h in enumerate(s.heads) if h > 0]
        if deps:
            heads = [s.heads[i] - 1 for i in deps]
            pairs.append(np.stack([f[layer, deps], f[layer, heads]], 1))
            ys += [y[i] for i in deps]
            ids += [index] * len(deps)
    dim = features[0].shape[-1] if len(features) else 1
    return Arcs(torch.from_numpy(np.concatenate(pairs) if pairs else np.zeros((0, 2, dim), np.float32)),
                torch.tensor(ys, dtype=torch.long), np.array(ids, dtype=np.int64))


def train_classifier(train: Arcs, dev: Arcs, classes: int, seed: int) -> RelationClassifier:
    """A fresh classifier trained on ``train``, early-stopped on ``dev``'s loss; its best-dev weights."""
    torch.manual_seed(seed)
    classifier = RelationClassifier(train.pairs.shape[-1], classes)
    optimizer = torch.optim.Adam(classifier.parameters(), lr=LR)
    rng = np.random.default_rng(seed)
    best, best_state, since = float("inf"), None, 0
    for _ in range(EPOCHS):
        classifier.train()
        order = torch.from_numpy(rng.permutation(len(train.labels)))
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            loss = nn.functional.cross_entropy(classifier(train.pairs[rows]), train.labels[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        loss = bits_of(classifier, dev)
        if loss < best - 1e-3:
            best, best_state, since = loss, {k: v.clone() for k, v in classifier.state_dict().items()}, 0
        else:
            since += 1
            if since >= PATIENCE:
                break
    if best_state is not None:
        classifier.load_state_dict(best_state)
    return classifier.eval()


def bits_of(classifier: RelationClassifier, arcs: Arcs) -> float:
    """Sum over the arcs of -log2 p(label): the bits the classifier sends them in."""
    classifier.eval()
    with torch.inference_mode():
        logits = classifier(arcs.pairs)
        return float(nn.functional.cross_entropy(logits, arcs.labels, reduction="sum")) / math.log(2)


def accuracy_of(classifier: RelationClassifier, arcs: Arcs) -> float:
    with torch.inference_mode():
        return float((classifier(arcs.pairs).argmax(-1) == arcs.labels).float().mean()) if len(arcs.labels) else float("nan")


@dataclass
class Codelength:
    layer: int
    online_bits: float
    uniform_bits: float
    targets: int
    classes: int
    dev_accuracy: float  # the classifier trained on the largest prefix (50%), on the dev arcs

    @property
    def compression(self) -> float:
        return self.uniform_bits / self.online_bits

    def to_json(self) -> dict:
        return {"layer": self.layer, "online_kbits": round(self.online_bits / 1024, 3),
                "uniform_kbits": round(self.uniform_bits / 1024, 3), "compression": round(self.compression, 4),
                "targets": self.targets, "classes": self.classes, "dev_accuracy": round(self.dev_accuracy, 4)}


def layer_codelength(train: Arcs, dev: Arcs, n_sentences: int, classes: int, layer: int, seed: int = 0) -> Codelength:
    """One layer's online codelength over ``train`` (its sentences already in the shuffled order, ids 0..N-1)."""
    cuts = cut_points(n_sentences)
    targets = [int((train.sentence < cuts[0]).sum())]
    bits: list[float | None] = [None]
    classifier = None
    for i in range(len(cuts) - 1):
        block = (train.sentence >= cuts[i]) & (train.sentence < cuts[i + 1])
        targets.append(int(block.sum()))
        prefix = train.sentence < cuts[i]
        if not prefix.any() or not block.any():
            bits.append(None if block.any() else 0.0)
            continue
        classifier = train_classifier(Arcs(train.pairs[prefix], train.labels[prefix], train.sentence[prefix]), dev, classes,
                            seed + i)
        keep = torch.from_numpy(block)
        bits.append(bits_of(classifier, Arcs(train.pairs[keep], train.labels[keep], train.sentence[block])))
    online = online_codelength(targets, bits, classes)
    return Codelength(layer, online, len(train.labels) * math.log2(classes), len(train.labels), classes,
                      accuracy_of(classifier, dev) if classifier is not None else float("nan"))


def shuffled(sentences: Sequence[Sentence], seed: int) -> list[int]:
    """The order the training sentences are sent in: one seeded permutation, as their code shuffles once."""
    return list(np.random.default_rng(seed).permutation(len(sentences)))


def relation_labels(sentences: Sequence[Sentence], relations: Sequence[str]) -> list[list[int]]:
    index = {r: k for k, r in enumerate(relations)}
    return [[index.get(r, -1) for r in s.relations] for s in sentences]


def control_labels(sentences: Sequence[Sentence], relations: Sequence[str], frequencies: np.ndarray,
                   seed: int = 0) -> list[list[int]]:
    """Each dependent word type's one relation, drawn from the training split's relation frequencies by a
    seeded hash of the form (case-sensitive, as Hewitt & Liang key types)."""
    cumulative = np.cumsum(frequencies / frequencies.sum())

    def label(form: str) -> int:
        u = int.from_bytes(hashlib.sha256(f"{seed}\x01{form}".encode()).digest()[:8], "big") / 2 ** 64
        return int(min(np.searchsorted(cumulative, u, side="right"), len(relations) - 1))
    return [[label(w) for w in s.words] for s in sentences]


LABELS = ("relations", "control")


@dataclass(frozen=True)
class CodeSettings:
    labels: str = "relations"  # or "control"
    layers: tuple[int, ...] | None = None  # None: every layer, 0 = embeddings
    seed: int = 0


def code_vectors(lab, train: Sequence[Sentence], dev: Sequence[Sentence], seed: int = 0,
                 engine: Any = None) -> tuple[Any, Any]:
    """``lab``'s word vectors of the train sentences, in the one seeded shuffled order they are sent in, and of
    the dev sentences: what every labelling of one model is coded from (extracted once for all of them), their
    batches on ``engine`` (None: here; ``engines.Engine``: local or Ray, the same vectors)."""
    from ..engines import LOCAL
    from .structural_probe import word_features

    order = shuffled(train, seed)
    engine = engine or LOCAL
    return (word_features(lab, [train[i] for i in order], engine=engine), word_features(lab, dev, engine=engine))


def online_codelengths(lab, train: Sequence[Sentence], dev: Sequence[Sentence], settings: CodeSettings = CodeSettings(),
              progress: Callable[[str], None] | None = None) -> list[Codelength]:
    """Online codelength of the arcs' relations (or their control labels) for each layer of ``settings`` of
    ``lab``'s word vectors; train sentences sent in one seeded shuffled order."""
    return codelengths_of(code_vectors(lab, train, dev, settings.seed), settings, progress)


def codelengths_of(vectors: tuple[Any, Any], settings: CodeSettings = CodeSettings(),
                   progress: Callable[[str], None] | None = None) -> list[Codelength]:
    """``online_codelengths`` from word vectors already extracted (``code_vectors``, with the same seed)."""
    labels, layers, seed = settings.labels, settings.layers, settings.seed
    if labels not in LABELS:
        raise ValueError(f"unknown labels {labels!r}: choose one of {', '.join(LABELS)}")
    train_data, dev_data = vectors
    relations = sorted({r for s in train_data.sentences for r, h in zip(s.relations, s.heads) if h > 0})
    counts = np.array([sum(r == rel for s in train_data.sentences for r, h in zip(s.relations, s.heads) if h > 0)
                       for rel in relations], dtype=np.float64)

    def labelled(data):
        if labels == "control":
            return control_labels(data.sentences, relations, counts, seed)
        return relation_labels(data.sentences, relations)

    train_labels, dev_labels = labelled(train_data), labelled(dev_data)
    out = []
    for layer in (range(train_data.layers) if layers is None else layers):
        arcs = arcs_of(train_data.features, train_data.sentences, train_labels, layer)
        held = arcs_of(dev_data.features, dev_data.sentences, dev_labels, layer)
        known = held.labels >= 0  # a dev relation the train split never has cannot be sent
        held = Arcs(held.pairs[known], held.labels[known], held.sentence[known.numpy()])
        out.append(layer_codelength(arcs, held, len(train_data.sentences), len(relations), layer, seed))
        if progress is not None:
            progress(f"{labels}: layer {layer} coded in {out[-1].online_bits / 1024:.1f} kbits")
    return out
