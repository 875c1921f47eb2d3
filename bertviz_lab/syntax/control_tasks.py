"""Control tasks for syntax probes (Hewitt & Liang 2019, "Designing and Interpreting Probes with Control
Tasks", EMNLP; released code github.com/john-hewitt/control-tasks, commit be70d7f: ``task.py``
``CorruptedEdgePositionTask``, ``scripts/codalab/make_table_1.py``; ``docs/research/control-tasks.md``).

A control task keeps the output space of the linguistic task but makes its answer a property of each
*word type* that the representation cannot have learned from syntax: every word type (the FORM as written,
case-sensitive, as their code keys it) gets one of three behaviours, drawn uniformly: attach to **itself**,
to the **first** word of the sentence, or to the **last** (their ``CorruptedEdgePositionTask``; nothing is
clamped at the sentence's edges, so the first word told "first" attaches to itself, and the root word gets
a control head like any other). A probe that scores well on the control task can memorise types;
*selectivity* = linguistic score - control score, with the same probe and training (their Table 1), is
what tells a probe's finding from its capacity.

Where we differ, and why:

- Their behaviours come from one seeded pass over the types of train+dev+test in first-seen order, so a
  word's behaviour depends on every other file. Ours is a seeded hash of the FORM (the same uniform
  choice of three), so a treebank evaluated later gives a word the behaviour its training copy had.
- They defined no control task for the structural *distance* probe. Our analogue (not theirs): the
  control parents' graph (self-attachments left out) is a forest; the control distance is its path
  length, and pairs in different trees are left out of the loss (``-1``, the padding mark the probe's
  L1 loss already ignores). Its UUAS is the share of those control edges (between two non-punctuation
  words) that the probe's minimum spanning tree contains.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..treebank import Sentence

BEHAVIOURS = ("self", "first", "last")
CONTROL = "control"  # the relation name every control arc carries


def behaviour(form: str, seed: int = 0) -> str:
    """The word type's fixed behaviour: one of self/first/last, uniform over types, from a seeded hash."""
    digest = hashlib.sha256(f"{seed}\x00{form}".encode()).digest()
    return BEHAVIOURS[int.from_bytes(digest[:8], "big") % 3]


def control_parents(words: Sequence[str], seed: int = 0) -> list[int]:
    """Each word's control parent, 0-based (itself for "self"): their ``CorruptedEdgePositionTask.labels``."""
    last = len(words) - 1
    return [i if b == "self" else 0 if b == "first" else last for i, b in ((i, behaviour(w, seed)) for i, w in
                                                                           enumerate(words))]


def control_sentence(sentence: Sentence, seed: int = 0) -> Sentence:
    """The sentence with its control parents as heads (1-based; 0 where a word attaches to itself), so the
    distance probe's training and ``tree_distances`` (-1 between trees of the forest) read it unchanged."""
    parents = control_parents(sentence.words, seed)
    heads = [0 if p == i else p + 1 for i, p in enumerate(parents)]
    return Sentence(list(sentence.words), heads, [CONTROL] * len(heads), list(sentence.upos), sentence.text,
                    sentence.sent_id, sentence.line, list(sentence.xpos))


def control_edges(sentence: Sentence, keep: np.ndarray, seed: int = 0) -> set[tuple[int, int]]:
    """The control task's undirected edges between two kept words (self-attachments have none)."""
    return {(min(i, p), max(i, p)) for i, p in enumerate(control_parents(sentence.words, seed))
            if p != i and keep[i] and keep[p]}
