"""Every head's agreement with one sentence's tree (a parser's or a treebank's): the share of its
arcs that each of Clark et al.'s two predictors recovers (``predictors.py``), per layer and head.

Only words with a head are counted (a root word can never be predicted from attention, as in
treebank scoring), so the denominator is the sentence's number of arcs.
"""
from __future__ import annotations

import numpy as np

from ..treebank import Sentence
from .predictors import predicted_heads


def head_agreement(sentence: Sentence, word_attn: np.ndarray) -> tuple[dict[str, np.ndarray], int]:
    """``word_attn`` (layers, heads, words, words) -> ({direction: (layers, heads) share of arcs}, arcs)."""
    gold = np.asarray(sentence.heads)  # (words,) 1-based, 0 = root
    arcs = gold > 0
    n_arcs = int(arcs.sum())
    shares = {}
    for direction, predicted in predicted_heads(word_attn).items():  # (layers, heads, words)
        hits = (predicted == gold)[..., arcs]  # (layers, heads, arcs)
        shares[direction] = hits.mean(-1) if n_arcs else np.zeros(predicted.shape[:2])
    return shares, n_arcs


def agreement_rows(shares: dict[str, np.ndarray]) -> list[dict]:
    """One row per head (1-based layer and head) with its share in each direction."""
    first = next(iter(shares.values()))
    return [{"layer": layer + 1, "head": head + 1, **{d: round(float(v[layer, head]), 4) for d, v in shares.items()}}
            for layer in range(first.shape[0]) for head in range(first.shape[1])]
