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

from collections.abc import Callable
from typing import Any

import torch

from ..runtime.errors import InputError


class PreNormError(InputError):
    """A source that models BERT's post-LayerNorm layer was asked of a pre-LayerNorm model (ModernBERT)."""


def refuse_pre_norm(model: Any, method: str) -> None:
    """Raise when ``model``'s layers normalise before attention and MLP (ModernBERT): ``method`` splits BERT's
    post-LayerNorm layer, LN(x + attention) then LN(. + FFN), and that is not what such a layer computes, so its
    numbers would be wrong, not approximate. The plain norm of alpha f(x) (Kobayashi et al. 2020) holds for any
    attention block and is not refused."""
    if model.config.norm_placement == "pre":
        raise PreNormError(f"{method} is not available for ModernBERT and other pre-norm encoders: it decomposes "
                           "BERT's post-LayerNorm layer "
                           "(LayerNorm after each residual sum), and ModernBERT normalises before attention and MLP "
                           "(pre-norm), so the decomposition would not be the model's; use attention, norm, rollout, "
                           "gradients or erasure instead")


def transformed_values(values: torch.Tensor, output_weight: torch.Tensor) -> torch.Tensor:
    """f_h(x_j) for every head and key: values (heads, keys, d_head) x W_O (d_model, heads*d_head)
    -> (heads, keys, d_model)."""
    heads, _, d_head = values.shape
    w_o = output_weight.T.reshape(heads, d_head, -1)  # (heads, d_head, d_model): rows of W_O^T per head
    return torch.einsum("hkd,hdm->hkm", values, w_o)


def head_norms(pattern: torch.Tensor, transformed: torch.Tensor) -> torch.Tensor:
    """||alpha_ij^h f_h(x_j)|| = alpha_ij^h ||f_h(x_j)||: (heads, query, key)."""
    return pattern * transformed.norm(dim=-1)[:, None, :]


def mapped_norms(pattern: torch.Tensor, transformed: torch.Tensor, linear_map: Callable[[torch.Tensor], torch.Tensor],
                 residual: torch.Tensor | None = None) -> torch.Tensor:
    """||M(sum_h alpha_ij^h f_h(x_j) + [i == j] x_i)|| per (query, key) for a linear map M of d_model
    vectors (centring, LayerNorm weights), the residual x_i joining only with ``residual``.

    Without materialising the (query, key, d_model) vectors: M is linear, so the squared norm is a
    quadratic form of alpha_ij over heads with a per-key Gram matrix
    G_j[h, h'] = <M f_h(x_j), M f_h'(x_j)>. Only the diagonal, where the residual joins, is summed
    as vectors."""
    a = pattern.float()  # (heads, query, key)
    mf = linear_map(transformed.float())  # (heads, key, d_model)
    gram = torch.bmm(mf.transpose(0, 1), mf.permute(1, 2, 0))  # (key, heads, heads)
    per_key = a.permute(2, 1, 0)  # (key, query, heads)
    squared = (torch.bmm(per_key, gram) * per_key).sum(-1).T  # (query, key): alpha^T G_j alpha
    norms = squared.clamp(min=0).sqrt()
    if residual is not None:
        idx = torch.arange(a.shape[-1])
        diagonal = torch.einsum("hi,hid->id", a[:, idx, idx], mf) + linear_map(residual.float())  # M(z_ii)
        norms[idx, idx] = diagonal.norm(dim=-1)
    return norms


def layer_norms(pattern: torch.Tensor, transformed: torch.Tensor, residual: torch.Tensor | None = None,
                gamma: torch.Tensor | None = None, eps: float = 1e-12, pre_ln_bias: torch.Tensor | None = None
                ) -> torch.Tensor:
    """||sum_h alpha_ij^h f_h(x_j)|| per (query, key); with ``residual`` (the block's input x) and
    ``gamma`` (its LayerNorm weight) the residual-aware variant ||g_ij|| of Kobayashi et al. 2021:
    ||gamma * (z_ij - mean z_ij)|| / s_i (``mapped_norms`` with M = centring then gamma)."""
    scale = torch.ones(transformed.shape[-1]) if gamma is None else gamma.float()
    if residual is None:
        return mapped_norms(pattern, transformed, lambda v: v * scale).float()

    def centred_scaled(v: torch.Tensor) -> torch.Tensor:
        return (v - v.mean(dim=-1, keepdim=True)) * scale

    total = torch.bmm(pattern.float(), transformed.float()).sum(0) + residual.float()  # (query, d_model) before LN
    if pre_ln_bias is not None:
        total = total + pre_ln_bias.float()
    std = torch.sqrt(total.var(dim=-1, unbiased=False) + eps)  # (query,) s_i of the whole LN input
    return (mapped_norms(pattern, transformed, centred_scaled, residual) / std[:, None]).float()
