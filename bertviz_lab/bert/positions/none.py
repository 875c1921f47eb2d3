"""No positions at all (Kazemnejad et al. 2023, "The Impact of Positional Encoding on Length Generalization in
Transformers", NeurIPS, arXiv:2305.19466, call it NoPE). Without a causal mask an encoder then sees its input as a
bag of tokens: the output at a [MASK] is the same for any order of the other tokens (the twin ``twin-none``'s
test). The scheme adds nothing; it exists so that "no positions" is named, as every other scheme is."""
from __future__ import annotations

from .scheme import PositionScheme, register


@register
class NoPositions(PositionScheme):
    name = "none"
    label = "no positions"
    citation = "Kazemnejad et al. 2023 (NoPE)"
