"""One forward pass's captures for one input, typed: what every source and explanation reads.

Fourteen functions used to pass ``(model, cache, layer, row, n)`` along; a :class:`Captured` holds
the model, the cache, the batch row and the input's length once, and hands out the per-layer
tensors the methods need (the attention pattern, each head's transformed values, a layer's input
and output), cut to the input's tokens. Names come from ``hook_table``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..encoder.hook_table import every_layer, hook_name
from ..encoder.model import BertLab
from .norms import transformed_values

# what the norm-based and context-mixing sources need from a forward pass
MIXING_CAPTURES = (every_layer("pattern"), every_layer("v"), hook_name("embeddings"), every_layer("out"))


@dataclass(frozen=True)
class Captured:
    """The captures of batch row ``row`` (its first ``n`` tokens) of one forward pass of ``model``."""

    model: BertLab
    cache: dict[str, torch.Tensor]
    row: int
    n: int

    @property
    def layers(self) -> int:
        return len(self.model.bert.encoder.layer)

    @property
    def heads(self) -> int:
        return self.model.config.num_attention_heads

    def block(self, layer: int):
        return self.model.bert.encoder.layer[layer]

    def pattern(self, layer: int) -> torch.Tensor:
        """The layer's attention probabilities, float32 on the CPU: (heads, query, key)."""
        return self.cache[hook_name("pattern", layer)][self.row, :, :self.n, :self.n].float().cpu()

    def raw_values(self, layer: int) -> torch.Tensor:
        """The layer's value vectors as captured (device and dtype kept): (heads, key, d_head)."""
        return self.cache[hook_name("v", layer)][self.row, :, :self.n]

    def values(self, layer: int) -> torch.Tensor:
        """f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h of every head, float32 on the CPU: (heads, key, d_model)."""
        dense = self.block(layer).attention.output.dense
        return transformed_values(self.raw_values(layer).float().cpu(), dense.weight.detach().float().cpu())

    def layer_input(self, layer: int) -> torch.Tensor:
        """Layer ``layer``'s input (n, d_model): the previous layer's output, or the (projected) embeddings."""
        if layer:
            return self.layer_output(layer - 1)
        embedded = self.cache[hook_name("embeddings")][self.row, :self.n]
        project = self.model.bert.embeddings_project
        return project(embedded) if project is not None else embedded  # ELECTRA projects its embeddings up

    def layer_output(self, layer: int) -> torch.Tensor:
        """Layer ``layer``'s output (n, d_model), as captured."""
        return self.cache[hook_name("out", layer)][self.row, :self.n]
