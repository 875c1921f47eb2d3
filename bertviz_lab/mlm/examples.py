"""Training inputs of one epoch: single lines and, from running text, sentence pairs for
next-sentence prediction (Devlin et al. 2019, sec. 3.1 "Task #2"; the seed material's MLM/NSP
article).

Why per epoch: as in BERT's data generation, the NotNext partner and which sentences become pairs
are drawn again each epoch, so the NSP head cannot memorise pairs. Everything is a function of
(seed, epoch), so an interrupted run rebuilds exactly the epoch it was in.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..lab import words_across_segments
from .running_text import Passage

NOT_PAIR = -100  # NSP label of a single-sentence input (the NSP loss skips it)


@dataclass
class Example:
    a: str
    b: str | None = None
    is_random: int = NOT_PAIR  # 0: B follows A, 1: B is a random sentence from another document


def running_examples(passages: list[Passage], rng: random.Random, pair_fraction: float) -> list[Example]:
    """Each sentence once: with ``pair_fraction`` it starts a pair (its successor, or with
    probability 1/2 a sentence of another document), otherwise it is a single input."""
    if len({p.document for p in passages}) < 2:
        raise ValueError("next-sentence pairs need running text from at least two documents")
    others = range(len(passages))
    out = []
    for passage in passages:
        for i, sentence in enumerate(passage.sentences):
            if i + 1 < len(passage.sentences) and rng.random() < pair_fraction:
                if rng.random() < 0.5:
                    out.append(Example(sentence, passage.sentences[i + 1], 0))
                else:
                    while True:
                        other = passages[rng.choice(others)]
                        if other.document != passage.document:
                            break
                    out.append(Example(sentence, rng.choice(other.sentences), 1))
            else:
                out.append(Example(sentence))
    return out


def make_nsp_pairs(documents: Sequence[Sequence[str]], seed: int = 0) -> list[tuple[str, str, int]]:
    """(A, B, label) for every sentence that has a successor, drawn by the generator training uses
    (``running_examples`` with every such sentence starting a pair): half the time B is the true
    next sentence (label 0), otherwise a random sentence of another document (label 1). One
    generator, so the NotNext rule evaluated is the one trained."""
    passages = [Passage("", str(d), list(doc)) for d, doc in enumerate(documents) if doc]
    examples = running_examples(passages, random.Random(seed), pair_fraction=1.0)
    return [(e.a, e.b, e.is_random) for e in examples if e.b is not None]


def epoch_examples(lines: list[str], passages: list[Passage], seed: int, epoch: int,
                   running_share: float, pair_fraction: float) -> list[Example]:
    """All of the running text plus enough single lines that running text is ``running_share`` of
    the epoch; without running text, every line once (the original recipe)."""
    rng = random.Random(f"{seed}:{epoch}")
    if not passages:
        return [Example(line) for line in lines]
    running = running_examples(passages, rng, pair_fraction)
    n_lines = min(len(lines), round(len(running) * (1 - running_share) / running_share)) if lines else 0
    order = list(range(len(lines)))
    random.Random(seed).shuffle(order)  # one fixed order; epochs take consecutive windows of it
    start = (epoch * n_lines) % max(1, len(lines))
    window = [lines[order[(start + k) % len(lines)]] for k in range(n_lines)]
    return running + [Example(line) for line in window]


@dataclass
class TokenizedCorpus:
    ids: list[list[int]]
    words: list[list[int]]  # word index per token (unique across both segments), -1 for specials
    segments: list[list[int]]
    is_random: list[int]

    @property
    def lengths(self) -> list[int]:
        return [len(i) for i in self.ids]

    def batch(self, rows: list[int]) -> dict[str, torch.Tensor]:
        """Right-padded ids, word ids, segments, attention mask and NSP labels of the chosen rows."""
        lengths = [len(self.ids[i]) for i in rows]
        width = max(lengths)
        ids = torch.zeros((len(rows), width), dtype=torch.long)  # (batch, pos)
        words = torch.full((len(rows), width), -1, dtype=torch.long)  # (batch, pos)
        segments = torch.zeros((len(rows), width), dtype=torch.long)  # (batch, pos)
        for row, i in enumerate(rows):
            ids[row, :lengths[row]] = torch.tensor(self.ids[i])
            words[row, :lengths[row]] = torch.tensor(self.words[i])
            segments[row, :lengths[row]] = torch.tensor(self.segments[i])
        attention_mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
        return {"ids": ids, "words": words, "segments": segments, "attention_mask": attention_mask,
                "is_random": torch.tensor([self.is_random[i] for i in rows], dtype=torch.long)}


def tokenize_examples(tokenizer, examples: list[Example], single_cut: int, pair_cut: int) -> TokenizedCorpus:
    """Singles are cut to ``single_cut`` tokens, pairs to ``pair_cut`` (longest segment first)."""
    from tokenizers import Tokenizer

    cutter = Tokenizer.from_str(tokenizer.to_str())
    cutter.no_padding()
    singles = [i for i, e in enumerate(examples) if e.b is None]
    pairs = [i for i, e in enumerate(examples) if e.b is not None]
    encoded: list = [None] * len(examples)
    for rows, cut, inputs in ((singles, single_cut, [examples[i].a for i in singles]),
                              (pairs, pair_cut, [(examples[i].a, examples[i].b) for i in pairs])):
        if not rows:
            continue
        cutter.enable_truncation(max_length=cut, strategy="longest_first")
        for row, enc in zip(rows, cutter.encode_batch(inputs)):
            encoded[row] = enc
    ids, words, segments = [], [], []
    for enc in encoded:
        words.append([-1 if w is None else w for w in words_across_segments(enc.word_ids, enc.sequence_ids)])
        ids.append(list(enc.ids))
        segments.append(list(enc.type_ids))
    return TokenizedCorpus(ids, words, segments, [e.is_random for e in examples])
