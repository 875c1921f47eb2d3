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

from ..encoder.hook_table import hook_name
from ..runtime.budget import charge
from .captured import Captured
from .norms import refuse_pre_norm


def value_zeroing_layer(captured: Captured, layer: int) -> torch.Tensor:
    """(query, key) float64: row i holds how much i's layer output moves when each key's values are
    zeroed, normalised to sum to 1."""
    refuse_pre_norm(captured.model, "value zeroing")
    block, n, layers = captured.block(layer), captured.n, captured.layers
    # n rows through one layer cost about n / layers full passes: charged to the request's budget
    # (caps on work and time), as every forward of the model is
    charge(torch.empty((-(-n // layers), n), dtype=torch.long), None, None, False)
    x = captured.layer_input(layer)  # (n, d_model)
    original = captured.layer_output(layer).double()  # (query, d_model)
    tokens = torch.arange(n)

    def zero_own_token(values: torch.Tensor, _name: str) -> torch.Tensor:  # (batch = zeroed token, heads, key, d_head)
        values = values.clone()
        values[tokens, :, tokens] = 0
        return values

    with torch.no_grad(), captured.model.hooks(capture=(), edits={hook_name("v", layer): zero_own_token}):
        # every scheme's bias and state for this input's positions (relative buckets, ALiBi, rotary, disentangled)
        positions = captured.model.pass_positions(tokens[None], None, n, x.dtype)
        zeroed = block(x[None].expand(n, -1, -1).contiguous(), positions.bias,
                       positions).double()  # (zeroed token, query, d_model)
    cos = torch.nn.functional.cosine_similarity(zeroed, original[None], dim=-1, eps=1e-30)  # (zeroed token, query)
    distance = (1.0 - cos).T.clamp(min=0)  # (query, key)
    total = distance.sum(-1, keepdim=True)
    return torch.where(total > 0, distance / total, torch.zeros_like(distance))


def value_zeroing(captured: Captured) -> torch.Tensor:
    """(layers, query, key) value-zeroing scores of every layer, float64."""
    return torch.stack([value_zeroing_layer(captured, layer) for layer in range(captured.layers)])
