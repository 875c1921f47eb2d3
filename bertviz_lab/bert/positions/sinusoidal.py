"""Fixed sinusoidal positions, the seed material's formula (Vaswani et al. 2017, "Attention Is All You Need",
section 3.5): PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), added to each
token's embedding. Nothing is learned: the table is a buffer, not in the state dict, so a checkpoint of this
scheme carries no position weights, and the table's views (similarity, norms) read the formula's rows.

A row of the formula has norm sqrt(d / 2) (13.9 at d = 384), whatever the words' size; Vaswani et al. multiply
their word embeddings by sqrt(d_model) so that the two are of a size. Where the words are fixed (the position twins
share MiniLM's, of norm ~1.1), the config's ``sinusoid_scale`` scales the table instead: at 1 the positions would
outweigh every word twelve times after the sum, and the twin could hardly read its tokens."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder.hooks import HookPoint
from .learned import LearnedPositions
from .scheme import register


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """(positions, d_model) float32: the formula above, computed in float64."""
    position = torch.arange(n_positions, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / torch.pow(10000.0, two_i / d_model)  # (positions, d_model / 2)
    table = torch.zeros((n_positions, d_model), dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


class FixedSinusoids(nn.Module):
    """An embedding whose ``weight`` is the sinusoid table times ``scale``, a buffer kept out of the state dict."""

    def __init__(self, n_positions: int, d_model: int, scale: float = 1.0) -> None:
        super().__init__()
        self.register_buffer("weight", sinusoidal_table(n_positions, d_model) * scale, persistent=False)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        return F.embedding(rows, self.weight)  # (batch | 1, pos, d_model)


@register
class SinusoidalPositions(LearnedPositions):
    """The learned scheme's place and hook point, with the formula's fixed table instead of a trained one."""

    name = "sinusoidal"
    label = "fixed sinusoidal positions"
    citation = "Vaswani et al. 2017"

    def embedding_parts(self, embeddings: nn.Module) -> None:
        """The config's ``sinusoid_scale`` (default 1: the formula as is) sets the rows' size against the words'."""
        scale = float(self.cfg.extra.get("sinusoid_scale", 1.0))
        embeddings.position_embeddings = FixedSinusoids(self.cfg.max_position_embeddings, self.cfg.embedding_dim, scale)
        embeddings.hook_position = HookPoint()  # (batch | 1, pos, d_emb)
