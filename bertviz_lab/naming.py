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
    return [f"L{layer + 1}" for layer in range(n_layers)]


def head_labels(n_heads: int) -> list[str]:
    return [f"H{head + 1}" for head in range(n_heads)]


def head_name(layer: int, head: int) -> str:
    """0-based (layer, head) -> ``"3-5"``, the 1-based layer-head form of Clark et al. (2019)."""
    return f"{layer + 1}-{head + 1}"


def unique_labels(tokens: Sequence[str], index: Sequence[int] | None = None) -> list[str]:
    """``"3 the"`` style labels, so repeated tokens never merge on a categorical axis."""
    index = list(range(len(tokens))) if index is None else list(index)
    return [f"{i} {t}" for i, t in zip(index, tokens)]
