"""BERT's learned absolute positions (Devlin et al. 2019): a trained table of ``max_position_embeddings`` rows,
row ``position id + position_offset`` added to each token's embedding (RoBERTa starts after its padding row)."""
from __future__ import annotations

import torch
from torch import nn

from ..encoder.hooks import HookPoint
from .scheme import Geometry, PositionScheme, cosine_matrix, register


@register
class LearnedPositions(PositionScheme):
    name = "learned"
    label = "learned absolute positions"
    citation = "Devlin et al. 2019"
    reads_position_ids = True
    adds_position_vectors = True

    def embedding_parts(self, embeddings: nn.Module) -> None:
        embeddings.position_embeddings = nn.Embedding(self.cfg.max_position_embeddings, self.cfg.embedding_dim)
        embeddings.hook_position = HookPoint()  # (batch | 1, pos, d_emb)

    def embed(self, embeddings: nn.Module, position_ids: torch.Tensor) -> torch.Tensor:
        offset = self.cfg.position_offset
        rows = position_ids + offset if offset else position_ids
        return embeddings.hook_position(embeddings.position_embeddings(rows))  # (batch | 1, pos, d_emb)

    def geometry(self, model: nn.Module, n: int) -> Geometry:
        """Cosine similarity of the position vectors the first ``n`` positions add (RoBERTa's after its offset)."""
        offset = self.cfg.position_offset
        n = min(n, self.cfg.max_position_embeddings - offset)
        table = model.bert.embeddings.position_embeddings.weight[offset:offset + n]  # (n, d_emb)
        labels = [str(i) for i in range(n)]
        return Geometry(f"{self.label}: similarity of position vectors", cosine_matrix(table), labels, labels,
                        "position", "position", "cosine similarity of the vectors two positions add to their tokens; "
                        "a band along the diagonal: near positions look alike")
