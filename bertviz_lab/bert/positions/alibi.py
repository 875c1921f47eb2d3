"""ALiBi in its bidirectional form: no position vectors; every head adds -m_h * |j - i| to the score of query i
on key j, a fixed slope per head (Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases
Enables Input Length Extrapolation", ICLR, arXiv:2108.12409, code github.com/ofirpress/attention_with_linear_biases;
its encoder form with |j - i| as MosaicBERT (Portes et al. 2023, github.com/mosaicml/examples,
``examples/benchmarks/bert/src/bert_layers.py``: ``rebuild_alibi_tensor``) and JinaBERT use it).

The slopes are the paper's code's ``get_slopes``: for H a power of two, the geometric sequence starting at
2^(-8/H) with that ratio (H = 8: 1/2, 1/4, ..., 1/256); otherwise the power of two below H's slopes followed by
every other slope of the next power of two. The distances are those of the position ids (0..n-1 unless an
intervention moves them), so a shift changes nothing and a shuffle moves every bias with its token.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..encoder.hooks import HookPoint
from .scheme import POSITION_BIAS, Geometry, PositionScheme, register


def alibi_slopes(n_heads: int) -> list[float]:
    """The slope of every head, as ``_get_alibi_head_slopes`` in MosaicBERT and ``get_slopes`` in Press et al."""
    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n_heads - closest]


def alibi_bias(position_ids: torch.Tensor, slopes: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(batch | 1, heads, query, key): -slope_h * |p_key - p_query| from position ids (batch | 1, pos)."""
    p = position_ids.to(torch.float32)
    distance = (p[:, None, :] - p[:, :, None]).abs()  # (batch | 1, query, key)
    return (-slopes.to(p.device, torch.float32)[None, :, None, None] * distance[:, None]).to(dtype)  # (batch | 1, heads, q, k)


@register
class AlibiBias(PositionScheme):
    name = "alibi"
    hooks = {"position_bias": POSITION_BIAS}
    label = "ALiBi linear distance biases"
    citation = "Press et al. 2022; MosaicBERT (Portes et al. 2023)"
    input_only = False
    reads_position_ids = True

    def encoder_parts(self, encoder: nn.Module) -> None:
        encoder.hook_position_bias = HookPoint()  # (batch | 1, heads, query, key) added to every layer's scores

    def score_bias(self, model: nn.Module, position_ids: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
        slopes = torch.tensor(alibi_slopes(self.cfg.num_attention_heads))  # (heads,) fixed: no weights to save
        return model.bert.encoder.hook_position_bias(alibi_bias(position_ids, slopes, dtype))

    def geometry(self, model: nn.Module, n: int) -> Geometry:
        """Each head's bias -slope * distance for distances 0 .. n-1."""
        slopes = torch.tensor(alibi_slopes(self.cfg.num_attention_heads))  # (heads,)
        values = -slopes[:, None] * torch.arange(n, dtype=torch.float64)[None]  # (heads, distance)
        return Geometry(f"{self.label}: the bias each head adds", values.float().numpy(),
                        [f"head {h + 1} (slope {s:.3g})" for h, s in enumerate(slopes.tolist())],
                        [str(d) for d in range(n)], "head", "distance |key - query|",
                        "fixed, not learned: each head lowers a key's score in proportion to its distance, steep heads "
                        "look near, shallow ones far; the same both ways")
