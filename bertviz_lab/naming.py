"""How things are named for people, in one place: special tokens, punctuation, and the 1-based
``L3``/``H5``/``3-5`` labels papers use for layers and heads (arrays stay 0-based)."""
from __future__ import annotations

import string
from collections.abc import Sequence

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]")
PUNCTUATION = frozenset(string.punctuation) | {"``", "''", "–", "—", "…", "“", "”", "‘", "’"}


def is_punctuation(token: str) -> bool:
    return bool(token) and all(ch in PUNCTUATION for ch in token)


def layer_labels(n_layers: int) -> list[str]:
    return [layer_name(layer) for layer in range(n_layers)]


def head_labels(n_heads: int) -> list[str]:
    return [f"H{head + 1}" for head in range(n_heads)]


def layer_name(layer: int) -> str:
    """0-based layer -> ``"L3"`` (axes, panel titles, file names)."""
    return f"L{layer + 1}"


def layer_head(layer: int, head: int, capital: bool = True) -> str:
    """0-based (layer, head) -> ``"Layer 3, head 5"`` (titles; ``capital=False`` inside a sentence)."""
    return f"{'Layer' if capital else 'layer'} {layer + 1}, head {head + 1}"


def layer_head_file(layer: int, head: int) -> str:
    """0-based (layer, head) -> ``"L3-H5"``, the part of a figure's file name that says which head."""
    return f"L{layer + 1}-H{head + 1}"


def head_name(layer: int, head: int) -> str:
    """0-based (layer, head) -> ``"3-5"``, the 1-based layer-head form of Clark et al. (2019)."""
    return f"{layer + 1}-{head + 1}"


def unique_labels(tokens: Sequence[str], index: Sequence[int] | None = None) -> list[str]:
    """``"3 the"`` style labels, so repeated tokens never merge on a categorical axis."""
    index = list(range(len(tokens))) if index is None else list(index)
    return [f"{i} {t}" for i, t in zip(index, tokens)]
