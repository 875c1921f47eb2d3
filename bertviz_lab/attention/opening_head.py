"""Which head a first screen opens on, by a stated rule (issue 60): layer 1, head 1 is often nearly uniform, a flat
first picture for a class. The rule: the head whose words give the most weight to one word, on the sentence shown
(the mean, over the words as queries, of the largest weight a word puts on a single word; [CLS], [SEP] and padding
left out on both sides, so a head that parks its weight on [SEP] does not count as a clear pattern). Its reason is
one line the page prints, naming the rule and what the head does here (mostly the previous word, the next word ...).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..naming import SPECIAL_TOKENS

SPECIALS = frozenset(SPECIAL_TOKENS) | {"<s>", "</s>", "<pad>", "<cls>", "<sep>"}


@dataclass(frozen=True)
class OpeningHead:
    """The head to open on (0-based layer and head), how sharp it is, and the line that says why."""

    layer: int
    head: int
    sharpness: float  # mean over the word queries of the largest weight on one word (0-1)
    reason: str


def offset_words(offset: int) -> str:
    """A word offset in words: 'the previous word', 'itself', 'the word 3 to the right'."""
    if offset == 0:
        return "itself"
    if abs(offset) == 1:
        return "the previous word" if offset < 0 else "the next word"
    return f"the word {abs(offset)} to the {'left' if offset < 0 else 'right'}"


def opening_head(attention: np.ndarray, tokens: Sequence[str]) -> OpeningHead:
    """The head with the sharpest word-to-word pattern on this input (``attention``: (layers, heads, query, key));
    layer 1, head 1 when fewer than two words are left once the specials are."""
    words = [i for i, t in enumerate(tokens) if t not in SPECIALS]
    n_layers, n_heads = attention.shape[:2]
    if len(words) < 2:
        return OpeningHead(0, 0, float("nan"), "Opening on layer 1, head 1: the input has fewer than two words.")
    between = attention[:, :, words][:, :, :, words]  # (layers, heads, word query, word key)
    sharpness = between.max(-1).mean(-1)  # (layers, heads)
    layer, head = (int(v) for v in np.unravel_index(int(np.argmax(sharpness)), sharpness.shape))
    targets = between[layer, head].argmax(-1)  # (word query,) the word each word gives most weight
    offsets = Counter(words[int(k)] - words[q] for q, k in enumerate(targets))
    offset, count = offsets.most_common(1)[0]
    reason = (f"Opening on layer {layer + 1}, head {head + 1}, the clearest pattern of the {n_layers * n_heads} heads on "
              f"this sentence (the rule: the head whose words give the most weight to one word, on average "
              f"{float(sharpness[layer, head]):.2f}); here {count} of {len(words)} words attend most to "
              f"{offset_words(offset)}.")
    return OpeningHead(layer, head, float(sharpness[layer, head]), reason)
