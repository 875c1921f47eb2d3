"""Every source of token-to-token weights the views, comparisons, syntax scoring, rollout and
faithfulness read, computed from one forward pass's captures: softmax attention per head, the norm
of what each head moves (norms.py), and the per-layer context-mixing measures that include the
residual and LayerNorms (norm-residual, GlobEnc, ALTI: contributions.py) or run the whole layer
(value zeroing: mixing.py). Per-layer sources have one matrix per layer; where a view asks for
heads, it is the same matrix for every head."""
from __future__ import annotations

import numpy as np
import torch

from . import decompx
from .contributions import LAYER_SOURCES
from .mixing import layer_input, value_zeroing_layer
from .norms import head_norms, layer_norms, layer_pattern, layer_values

SOURCES = ("attention", "norm", "norm-residual", "globenc", "alti", "value-zeroing", "decompx")
PER_LAYER_SOURCES = frozenset({"norm-residual", "globenc", "alti", "value-zeroing", "decompx"})
# already aggregated from the input up: rollout and flow would count the lower layers twice
AGGREGATED_SOURCES = frozenset({"decompx"})
# rollout and flow add no identity for these: the residual is already inside each layer's matrix
RESIDUAL_INCLUDED = PER_LAYER_SOURCES
SOURCE_NOTES = {
    "attention": "softmax attention weights",
    "norm": "norm-based: ||alpha f(x)|| per head (Kobayashi et al. 2020), raw vector norms, not normalised",
    "norm-residual": "norm-based with residual and LayerNorm: ||LN-part of (sum_h alpha f(x) + residual)|| "
                     "(Kobayashi et al. 2021), per layer (the same for every head), raw norms, not normalised",
    "globenc": "GlobEnc (Modarressi et al. 2022): norms through the residual and both LayerNorms of the layer, "
               "per layer (the same for every head), raw norms; its rollout is the plain product of the layers",
    "alti": "ALTI (Ferrando et al. 2022): Manhattan-distance contributions to the attention block's output "
            "with residual and LayerNorm, per layer (the same for every head), rows normalised to 1",
    "value-zeroing": "value zeroing (Mohebbi et al. 2023): cosine distance of each token's layer output when a "
                     "key's values are zeroed, rows normalised to 1; per layer (the same for every head)",
    "decompx": "DecompX (Modarressi et al. 2023): norm of the part of each token's representation after the layer "
               "that comes from each input token, propagated through every layer (FFN and biases included); "
               "already aggregated from the input, raw norms",
}
NORM_CAPTURES = ("*hook_pattern", "*attention.self.hook_v", "bert.embeddings.hook_out", "bert.encoder.layer.*.hook_out")


def check_source(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"unknown attention source {source!r}; choose one of {', '.join(SOURCES)}")


def _residual_norms(model, cache: dict[str, torch.Tensor], layer: int, row: int, n: int) -> torch.Tensor:
    block = model.bert.encoder.layer[layer]
    ln, dense = block.attention.output.LayerNorm, block.attention.output.dense
    x = layer_input(model, cache, layer, row, n).float().cpu()  # (query, d_model)
    return layer_norms(layer_pattern(cache, layer, row, n), layer_values(model, cache, layer, row, n), residual=x,
                       gamma=ln.weight.detach().float().cpu(), eps=ln.eps, pre_ln_bias=dense.bias.detach().float().cpu())


def _layer_matrix(model, cache: dict[str, torch.Tensor], source: str, layer: int, row: int, n: int) -> torch.Tensor:
    """One (query, key) matrix of a per-layer source, or the layer's matrix of a per-head one."""
    if source == "attention":
        return layer_pattern(cache, layer, row, n).mean(0)
    if source == "norm":
        return layer_norms(layer_pattern(cache, layer, row, n), layer_values(model, cache, layer, row, n))
    if source == "norm-residual":
        return _residual_norms(model, cache, layer, row, n)
    if source == "value-zeroing":
        return value_zeroing_layer(model, cache, layer, row, n).float()
    return LAYER_SOURCES[source](model, cache, layer, row, n).float()


def source_from_cache(model, cache: dict[str, torch.Tensor], source: str, row: int, n: int) -> np.ndarray:
    """(layers, heads, query, key) weights of ``source`` for batch row ``row`` (its first n tokens),
    from a forward pass that captured NORM_CAPTURES; per-layer sources broadcast over heads."""
    check_source(source)
    if source in PER_LAYER_SOURCES:
        per_layer = torch.as_tensor(layer_source_from_cache(model, cache, source, row, n))  # (layers, q, k)
        heads = cache["bert.encoder.layer.0.attention.self.hook_pattern"].shape[1]
        return per_layer[:, None].expand(-1, heads, -1, -1).numpy()
    out = []
    with torch.no_grad():
        for layer in range(len(model.bert.encoder.layer)):
            pattern = layer_pattern(cache, layer, row, n)  # (heads, query, key)
            if source == "attention":
                out.append(pattern)
            else:
                out.append(head_norms(pattern, layer_values(model, cache, layer, row, n)))
    return torch.stack(out).numpy()


def layer_source_from_cache(model, cache: dict[str, torch.Tensor], source: str, row: int, n: int) -> np.ndarray:
    """One (query, key) matrix per layer, what rollout and flow run on: the head mean of attention,
    ||sum_h alpha f_h(x)|| for norm, the source's own matrix for per-layer sources. (layers, q, k)."""
    check_source(source)
    with torch.no_grad():
        if source == "decompx":  # one pass carries the decomposition through every layer
            return decompx.layer_matrices(model, cache, row, n).numpy()
        return torch.stack([_layer_matrix(model, cache, source, layer, row, n)
                            for layer in range(len(model.bert.encoder.layer))]).numpy()
