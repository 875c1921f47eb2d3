"""Fixed sinusoidal positions, the seed material's formula (Vaswani et al. 2017, "Attention Is All You Need",
section 3.5): PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), added to each
token's embedding. Nothing is learned: the table is a buffer, not in the state dict, so a checkpoint of this
scheme carries no position weights, and the table's views (similarity, norms) read the formula's rows."""
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
    """An embedding whose ``weight`` is the sinusoid table, a buffer kept out of the state dict."""

    def __init__(self, n_positions: int, d_model: int) -> None:
        super().__init__()
        self.register_buffer("weight", sinusoidal_table(n_positions, d_model), persistent=False)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        return F.embedding(rows, self.weight)  # (batch | 1, pos, d_model)


@register
class SinusoidalPositions(LearnedPositions):
    """The learned scheme's place and hook point, with the formula's fixed table instead of a trained one."""

    name = "sinusoidal"
    label = "fixed sinusoidal positions"
    citation = "Vaswani et al. 2017"

    def embedding_parts(self, embeddings: nn.Module) -> None:
        embeddings.position_embeddings = FixedSinusoids(self.cfg.max_position_embeddings, self.cfg.embedding_dim)
        embeddings.hook_position = HookPoint()  # (batch | 1, pos, d_emb)
