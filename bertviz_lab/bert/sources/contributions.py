"""Context mixing with residuals and both LayerNorms: GlobEnc and ALTI, per layer, from one forward
pass's captures. Both split a post-LN layer into one vector per (receiving token i, source token j)
the way Kobayashi et al. (2021) split the attention block (``norms.py``): with the LayerNorm's
standard deviation fixed, everything before the FFN is linear in the per-source vectors

    v_ij = sum_h alpha_ij^h f_h(x_j) + [i == j] x_i         (f_h: value projection, bias, W_O^h)

and LayerNorm maps each of them to ``T_ij = gamma ⊙ (v_ij - mean(v_ij)) / s_i`` (s_i the standard
deviation of the whole LayerNorm input of token i, output bias b_O and the LayerNorm bias left out:
they belong to no token).

**GlobEnc** (Modarressi, Fayyaz, Yaghoobzadeh & Pilehvar, NAACL 2022, "GlobEnc: Quantifying Global
Token Attribution by Incorporating the Whole Encoder Layer in Transformers"; released code
github.com/mohsenfayyaz/GlobEnc, ``src/modeling/modeling_bert.py``: ``BertNormOutput`` and
``BertLayer.forward``, which has no licence, so the formula is ported, not the code): the vectors
T_ij pass the layer's *second* LayerNorm in the same linearised way, skipping the FFN, with the
second LayerNorm's own s_i (of its input: FFN output plus attention block output), and the score
is the norm ``N_Enc[i, j] = ||gamma_2 ⊙ (T_ij - mean(T_ij))|| / s2_i``. The global attribution is the
plain product of the layers' N_Enc matrices from the bottom up, with no identity added (the
residual is inside) and, as in the released code (``output_globenc``; ``AttentionRollout`` with a
``pre_process`` that leaves the matrices as they are), *no* row normalisation: ``globenc_rollout``.

**ALTI** (Ferrando, Gállego & Costa-jussà, EMNLP 2022, "Measuring the Mixing of Contextual
Information in the Transformer"; released code github.com/mt-upc/transformer-contributions,
Apache-2.0, ``src/contributions.py`` ``get_contributions`` and ``src/utils_contributions.py``
``normalize_contributions(scaling="min_sum", resultant_norm=...)``): with y_i the attention block's
output after its LayerNorm (bias terms included, so it equals the real output), the contribution of
j to i is ``max(0, ||y_i||_1 - ||y_i - T_ij||_1)``, each row divided by its sum. The Manhattan
distance is the method's point (an L2 norm, or the norm of T_ij itself, ranks tokens otherwise; the
tests check a case). Aggregated over layers with the plain product (``compute_joint_attention``),
rows already summing to 1. The released code divides by ``std(pre_ln + eps)`` (eps added to the
vector, so it drops out); we use LayerNorm's own ``sqrt(var + eps)``: a difference of ~1e-12.
"""
from __future__ import annotations

import numpy as np
import torch

from .captured import Captured
from .norms import mapped_norms, refuse_pre_norm

QUERY_CHUNK = 64  # ALTI builds (queries, keys, d_model) vectors: 64 x 256 x 1024 floats at most at once


def _centre(v: torch.Tensor) -> torch.Tensor:
    return v - v.mean(dim=-1, keepdim=True)


def _std(v: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.sqrt(v.var(dim=-1, unbiased=False) + eps)


def _layer_terms(captured: Captured, layer: int):
    """The attention pattern (heads, q, k), f_h(x_j) (heads, k, d), the layer input x (q, d), the first
    LayerNorm's input (q, d) and the block, in float32 on the CPU."""
    refuse_pre_norm(captured.model, "GlobEnc / ALTI")
    block = captured.block(layer)
    pattern = captured.pattern(layer)  # (heads, query, key)
    f = captured.values(layer)  # (heads, key, d_model)
    x = captured.layer_input(layer).float().cpu()  # (query, d_model)
    pre_ln1 = torch.bmm(pattern, f).sum(0) + x + block.attention.output.dense.bias.detach().float().cpu()
    return pattern, f, x, pre_ln1, block


def globenc_layer(captured: Captured, layer: int) -> torch.Tensor:
    """N_Enc of one layer: (query, key), raw norms (not normalised)."""
    with torch.no_grad():
        pattern, f, x, pre_ln1, block = _layer_terms(captured, layer)
        ln1, ln2 = block.attention.output.LayerNorm, block.output.LayerNorm
        gamma1, gamma2 = ln1.weight.detach().float().cpu(), ln2.weight.detach().float().cpu()
        attended = torch.nn.functional.layer_norm(pre_ln1, pre_ln1.shape[-1:], gamma1,
                                                  ln1.bias.detach().float().cpu(), ln1.eps)  # (query, d_model)
        device = next(block.parameters()).device
        ffn = block.output.dense(block.intermediate(attended.to(device))).float().cpu()  # (query, d_model)
        pre_ln2 = ffn + attended
        divisor = _std(pre_ln1, ln1.eps) * _std(pre_ln2, ln2.eps)  # (query,)

        def through_both(v: torch.Tensor) -> torch.Tensor:
            return gamma2 * _centre(gamma1 * _centre(v))

        return mapped_norms(pattern, f, through_both, residual=x) / divisor[:, None]


def alti_layer(captured: Captured, layer: int) -> torch.Tensor:
    """ALTI contributions of one layer: (query, key), rows summing to 1."""
    with torch.no_grad():
        pattern, f, x, pre_ln1, block = _layer_terms(captured, layer)
        ln1 = block.attention.output.LayerNorm
        gamma1, beta1 = ln1.weight.detach().float().cpu(), ln1.bias.detach().float().cpu()
        s1 = _std(pre_ln1, ln1.eps)  # (query,)
        fg = gamma1 * _centre(f)  # (heads, key, d_model)
        xg = gamma1 * _centre(x)  # (query, d_model)
        bias = gamma1 * _centre(block.attention.output.dense.bias.detach().float().cpu())  # (d_model,)
        n = captured.n
        out = torch.empty((n, n))
        for start in range(0, n, QUERY_CHUNK):
            q = slice(start, min(n, start + QUERY_CHUNK))
            t = torch.einsum("hqk,hkd->qkd", pattern[:, q], fg)  # (chunk, key, d_model) before / s_i
            rows = torch.arange(q.start, q.stop)
            t[rows - q.start, rows] += xg[q]
            t = t / s1[q, None, None]
            y = t.sum(1) + bias / s1[q, None] + beta1  # (chunk, d_model): the block's real output
            out[q] = manhattan_contributions(t, y)
        return out


def manhattan_contributions(t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """ALTI's step from vectors to contributions: T (query, key, d_model), y (query, d_model) ->
    max(0, ||y_i||_1 - ||y_i - T_ij||_1), rows divided by their sums (query, key)."""
    distance = (t - y[:, None]).abs().sum(-1)  # (query, key) Manhattan ||y_i - T_ij||_1
    raw = (y.abs().sum(-1, keepdim=True) - distance).clamp(min=0)
    total = raw.sum(-1, keepdim=True)
    return torch.where(total > 0, raw / total, torch.zeros_like(raw))


def globenc_rollout(layers: np.ndarray) -> np.ndarray:
    """GlobEnc's aggregation as released: N_Enc products from the bottom layer up, no identity, no row
    normalisation. (layers, query, key): the attribution up to each layer, each row then divided by
    its sum for display (which does not change any row's ranking)."""
    joint = np.eye(layers.shape[-1])
    out = np.empty(layers.shape, dtype=np.float64)
    for layer, matrix in enumerate(np.asarray(layers, dtype=np.float64)):
        joint = matrix @ joint
        out[layer] = joint
    total = out.sum(-1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)

