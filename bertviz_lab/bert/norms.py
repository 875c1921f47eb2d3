"""Norm-based attention (Kobayashi et al. 2020, 2021): how much each token moves, not only how
much it is attended to. Computed from one forward pass's captures; arrays in, arrays out.

Kobayashi, Kuribayashi, Yokoi & Inui (2020), "Attention is Not Only a Weight: Analyzing
Transformers with Vector Norms", code github.com/gorokoba560/norm-analysis-of-transformer:
head h moves ``alpha_ij^h f_h(x_j)`` from token j to token i, where
``f_h(x) = (x W_V^h + b_V^h) W_O^h`` is the head's transformed value vector (value bias included,
the output-dense bias b_O excluded: it belongs to no token). Per head the weight is
``||alpha_ij^h f_h(x_j)|| = alpha_ij^h ||f_h(x_j)||``; for a whole layer it is the norm of the sum
over heads, ``||sum_h alpha_ij^h f_h(x_j)||``.

Kobayashi et al. (2021), "Incorporating Residual and Normalization Layers into Analysis of
Masked Language Models": the attention block's output for token i is
``LN(sum_j z_ij + b_O)`` with ``z_ij = sum_h alpha_ij^h f_h(x_j) + [i == j] x_i`` (the residual
adds x_i to the i -> i term). LayerNorm is linear once the standard deviation ``s_i`` of its whole
input is fixed, so it splits over j: ``g_ij = gamma * (z_ij - mean(z_ij)) / s_i``; the residual-
aware weight is ``||g_ij||`` (b_O and the LayerNorm bias belong to no token and are left out).
"""
from __future__ import annotations

import numpy as np
import torch

from .mixing import value_zeroing_layer

SOURCES = ("attention", "norm", "norm-residual", "value-zeroing")
SOURCE_NOTES = {
    "attention": "softmax attention weights",
    "norm": "norm-based: ||alpha f(x)|| per head (Kobayashi et al. 2020), raw vector norms, not normalised",
    "norm-residual": "norm-based with residual and LayerNorm: ||LN-part of (sum_h alpha f(x) + residual)|| "
                     "(Kobayashi et al. 2021), per layer (the same for every head), raw norms, not normalised",
    "value-zeroing": "value zeroing (Mohebbi et al. 2023): cosine distance of each token's layer output when a "
                     "key's values are zeroed, rows normalised to 1; per layer (the same for every head)",
}


def transformed_values(values: torch.Tensor, output_weight: torch.Tensor) -> torch.Tensor:
    """f_h(x_j) for every head and key: values (heads, keys, d_head) x W_O (d_model, heads*d_head)
    -> (heads, keys, d_model)."""
    heads, _, d_head = values.shape
    w_o = output_weight.T.reshape(heads, d_head, -1)  # (heads, d_head, d_model): rows of W_O^T per head
    return torch.einsum("hkd,hdm->hkm", values, w_o)


def head_norms(pattern: torch.Tensor, transformed: torch.Tensor) -> torch.Tensor:
    """||alpha_ij^h f_h(x_j)|| = alpha_ij^h ||f_h(x_j)||: (heads, query, key)."""
    return pattern * transformed.norm(dim=-1)[:, None, :]


def layer_norms(pattern: torch.Tensor, transformed: torch.Tensor, residual: torch.Tensor | None = None,
                gamma: torch.Tensor | None = None, eps: float = 1e-12, pre_ln_bias: torch.Tensor | None = None
                ) -> torch.Tensor:
    """||sum_h alpha_ij^h f_h(x_j)|| per (query, key); with ``residual`` (the block's input x) and
    ``gamma`` (its LayerNorm weight) the residual-aware variant ||g_ij|| of Kobayashi et al. 2021.

    Without materialising the (query, key, d_model) vectors: centring is linear per term, so
    ||gamma * (z_ij - mean z_ij)||^2 is a quadratic form of alpha_ij over heads with a per-key
    Gram matrix G_j[h, h'] = <gamma f~_h(x_j), gamma f~_h'(x_j)> (f~ centred). Only the diagonal,
    where the residual x_i joins, is summed as vectors.
    """
    a = pattern.float()  # (heads, query, key)
    f = transformed.float()  # (heads, key, d_model)
    n = a.shape[-1]
    scale = torch.ones(f.shape[-1]) if gamma is None else gamma.float()
    if residual is not None:
        f = f - f.mean(dim=-1, keepdim=True)
    fg = f * scale  # (heads, key, d_model)
    gram = torch.bmm(fg.transpose(0, 1), fg.permute(1, 2, 0))  # (key, heads, heads)
    per_key = a.permute(2, 1, 0)  # (key, query, heads)
    squared = (torch.bmm(per_key, gram) * per_key).sum(-1).T  # (query, key): alpha^T G_j alpha
    norms = squared.clamp(min=0).sqrt()
    if residual is None:
        return norms.float()
    x = residual.float()
    total = torch.bmm(a, transformed.float()).sum(0) + x  # (query, d_model) before LN
    if pre_ln_bias is not None:
        total = total + pre_ln_bias.float()
    std = torch.sqrt(total.var(dim=-1, unbiased=False) + eps)  # (query,) s_i of the whole LN input
    idx = torch.arange(n)
    diagonal = torch.einsum("hi,hid->id", a[:, idx, idx], f) + (x - x.mean(dim=-1, keepdim=True))  # z_ii centred
    norms[idx, idx] = (diagonal * scale).norm(dim=-1)
    return (norms / std[:, None]).float()


def layer_input_hook(layer: int) -> str:
    """The hook holding layer ``layer``'s input x (the residual of its attention block)."""
    return "bert.embeddings.hook_out" if layer == 0 else f"bert.encoder.layer.{layer - 1}.hook_out"


NORM_CAPTURES = ("*hook_pattern", "*attention.self.hook_v", "bert.embeddings.hook_out", "bert.encoder.layer.*.hook_out")


def _layer_parts(model, cache: dict[str, torch.Tensor], row: int, n: int, values: bool):
    """Per layer: (attention pattern (heads, q, k), f_h(x) (heads, k, d_model) or None, the block)."""
    for i, block in enumerate(model.bert.encoder.layer):
        prefix = f"bert.encoder.layer.{i}.attention"
        pattern = cache[f"{prefix}.self.hook_pattern"][row, :, :n, :n].float().cpu()  # (heads, query, key)
        f = None
        if values:
            f = transformed_values(cache[f"{prefix}.self.hook_v"][row, :, :n].float().cpu(),
                                   block.attention.output.dense.weight.detach().float().cpu())
        yield i, pattern, f, block


def _residual_norms(cache, i: int, row: int, n: int, pattern, f, block) -> torch.Tensor:
    ln, dense = block.attention.output.LayerNorm, block.attention.output.dense
    x = cache[layer_input_hook(i)][row, :n].float().cpu()  # (query, d_model)
    return layer_norms(pattern, f, residual=x, gamma=ln.weight.detach().float().cpu(), eps=ln.eps,
                       pre_ln_bias=dense.bias.detach().float().cpu())


def check_source(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"unknown attention source {source!r}; choose one of {', '.join(SOURCES)}")


def source_from_cache(model, cache: dict[str, torch.Tensor], source: str, row: int, n: int) -> np.ndarray:
    """(layers, heads, query, key) weights of ``source`` for batch row ``row`` (its first n tokens),
    from a forward pass that captured NORM_CAPTURES. norm-residual is per layer, broadcast over heads."""
    check_source(source)
    out = []
    with torch.no_grad():
        for i, pattern, f, block in _layer_parts(model, cache, row, n, values=source in ("norm", "norm-residual")):
            if source == "attention":
                out.append(pattern)
            elif source == "norm":
                out.append(head_norms(pattern, f))
            elif source == "value-zeroing":
                out.append(value_zeroing_layer(model, cache, i, row, n).float()[None].expand(pattern.shape[0], -1, -1))
            else:
                out.append(_residual_norms(cache, i, row, n, pattern, f, block)[None].expand(pattern.shape[0], -1, -1))
    return torch.stack(out).numpy()


def layer_source_from_cache(model, cache: dict[str, torch.Tensor], source: str, row: int, n: int) -> np.ndarray:
    """One (query, key) matrix per layer, what rollout and flow run on: the head mean of attention,
    ||sum_h alpha f_h(x)|| for norm, the residual-aware norms for norm-residual. (layers, q, k)."""
    check_source(source)
    out = []
    with torch.no_grad():
        for i, pattern, f, block in _layer_parts(model, cache, row, n, values=source in ("norm", "norm-residual")):
            if source == "attention":
                out.append(pattern.mean(0))
            elif source == "norm":
                out.append(layer_norms(pattern, f))
            elif source == "value-zeroing":
                out.append(value_zeroing_layer(model, cache, i, row, n).float())
            else:
                out.append(_residual_norms(cache, i, row, n, pattern, f, block))
    return torch.stack(out).numpy()
