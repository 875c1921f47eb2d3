"""Value zeroing (Mohebbi, Zuidema, Chrupała & Alishahi 2023, "Quantifying Context Mixing in
Transformers", EACL; released code hmohebbi/ValueZeroing, ``demo.py`` and
``modeling/customized_modeling_bert.py``): how much token i's output of a layer depends on token j
is measured by zeroing j's value vectors (after the value projection and its bias, in every head;
the attention weights stay as they were) and running the layer again from its original input. The
score is the cosine distance between i's new and original outputs of the whole layer (attention
block, FFN, both LayerNorms), and each row is divided by its sum.

Why batched and float64: the released code runs the layer once per zeroed token; here row t of one
batch zeroes token t, so a layer costs one forward of n rows. Some rows barely move (sums ~1e-5),
where a float32 ``1 - cos`` shifts the normalised scores by up to 0.07, so the distances are taken
in float64.
"""
from __future__ import annotations

import torch

from .budget import charge


def layer_input(model, cache: dict[str, torch.Tensor], layer: int, row: int, n: int) -> torch.Tensor:
    """Layer ``layer``'s input (n, d_model): the previous layer's output, or the (projected) embeddings."""
    if layer:
        return cache[f"bert.encoder.layer.{layer - 1}.hook_out"][row, :n]
    embedded = cache["bert.embeddings.hook_out"][row, :n]
    project = model.bert.embeddings_project
    return project(embedded) if project is not None else embedded  # ELECTRA projects its embeddings up


def value_zeroing_layer(model, cache: dict[str, torch.Tensor], layer: int, row: int, n: int) -> torch.Tensor:
    """(query, key) float64: row i holds how much i's layer output moves when each key's values are
    zeroed, normalised to sum to 1."""
    block = model.bert.encoder.layer[layer]
    layers = len(model.bert.encoder.layer)
    # n rows through one layer cost about n / layers full passes: charged to the request's budget
    # (caps on work and time), as every forward of the model is
    charge(torch.empty((-(-n // layers), n), dtype=torch.long), None, None, False)
    x = layer_input(model, cache, layer, row, n)  # (n, d_model)
    original = cache[f"bert.encoder.layer.{layer}.hook_out"][row, :n].double()  # (query, d_model)
    tokens = torch.arange(n)

    def zero_own_token(values: torch.Tensor, _name: str) -> torch.Tensor:  # (batch = zeroed token, heads, key, d_head)
        values = values.clone()
        values[tokens, :, tokens] = 0
        return values

    with torch.no_grad(), model.hooks(capture=(), edits={f"bert.encoder.layer.{layer}.attention.self.hook_v":
                                                         zero_own_token}):
        zeroed = block(x[None].expand(n, -1, -1).contiguous(), None).double()  # (zeroed token, query, d_model)
    cos = torch.nn.functional.cosine_similarity(zeroed, original[None], dim=-1, eps=1e-30)  # (zeroed token, query)
    distance = (1.0 - cos).T.clamp(min=0)  # (query, key)
    total = distance.sum(-1, keepdim=True)
    return torch.where(total > 0, distance / total, torch.zeros_like(distance))


def value_zeroing(model, cache: dict[str, torch.Tensor], row: int, n: int) -> torch.Tensor:
    """(layers, query, key) value-zeroing scores of every layer, float64."""
    return torch.stack([value_zeroing_layer(model, cache, i, row, n) for i in range(len(model.bert.encoder.layer))])
