"""DecompX (Modarressi, Fayyaz, Aghazadeh, Yaghoobzadeh & Pilehvar, ACL 2023, "DecompX: Explaining
Transformers Decisions by Propagating Token Decomposition"; released code
github.com/mohsenfayyaz/DecompX, MIT, ``src/modeling_bert.py``: ``BertLayer.bias_decomposer``,
``ln_decomposer``, ``gelu_zo_decomposition``, ``ffn_decomposer`` and the encoder's ``aggregation ==
"vector"`` loop; configuration of its demo: biases included and decomposed by "absdot", FFN by the
zero-origin GELU slope "GeLU_ZO", both LayerNorms, vector aggregation).

Every hidden state is kept as one vector per *input* token, ``A[i, k]`` (token i's representation
that came from input token k; the vectors of a row sum to the real hidden state), and pushed
through every part of each layer:

- attention: the first layer splits like Kobayashi et al. (``alpha_ik f_h(x_k)`` plus the residual
  x_i on the diagonal, output bias b_O left to share out); later layers carry the decomposition
  through the value projection (``sum_s alpha_is (A[s, k] W_V) W_O``) plus the residual A[i, k], the
  value and output biases (``W_O b_V + b_O``) left to share out;
- a bias b is shared out over the k by ``|<A[i, k], b>|`` (normalised over k, + 1e-12);
- a LayerNorm maps each vector to ``gamma ⊙ (A[i, k] - mean) / sqrt(var(real input of i) + eps)``
  and shares out beta;
- the FFN's activation is the zero-origin slope of the real pre-activation, ``act(h) / (h + 1e-12)``
  per neuron, applied to every token's part (so the parts still sum exactly).

``layer_norms`` gives ``||A_l[i, k]||`` after each layer, the source's per-layer matrix (already
aggregated from the input up, so it is not rolled out again). ``logit_contributions`` carries the
last layer's vectors of one position through the MLM head (transform dense, activation, LayerNorm,
tied decoder) by the same rules — the released code does this for the pooler and classifier; the
MLM head is our extension with those rules — and returns each input token's signed share of a
word's logit; the shares sum to the logit.
"""
from __future__ import annotations

import torch

from .budget import charge
from .captured import Captured
from .norms import refuse_pre_norm

EPS = 1e-12  # the released code's guard in the bias weights and the activation slope
ROW_CHUNK = 32  # receiving tokens per FFN step: (32, tokens, d_ff) parts at a time


def share_bias(parts: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """parts (..., k, d) + each part's share of ``bias`` (d,) by |<part, bias>| ("absdot")."""
    weights = torch.einsum("...kd,d->...k", parts, bias).abs()
    weights = weights / (weights.sum(-1, keepdim=True) + EPS)
    return parts + weights[..., None] * bias


def _share_rows(parts: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``share_bias`` with one bias per receiving token: parts (i, k, d), bias (i, d)."""
    weights = torch.einsum("ikd,id->ik", parts, bias).abs()
    weights = weights / (weights.sum(-1, keepdim=True) + EPS)
    return parts + weights[..., None] * bias[:, None]


def layer_norm_parts(parts: torch.Tensor, real_input: torch.Tensor, ln: torch.nn.LayerNorm) -> torch.Tensor:
    """parts (i, k, d) of LN inputs -> parts of its outputs; real_input (i, d) fixes each row's scale."""
    var = real_input.var(dim=-1, unbiased=False)[:, None, None]  # (i, 1, 1)
    centred = parts - parts.mean(-1, keepdim=True)
    return share_bias(centred / torch.sqrt(var + ln.eps) * ln.weight, ln.bias)


def activation_parts(parts: torch.Tensor, pre: torch.Tensor, post: torch.Tensor) -> torch.Tensor:
    """parts (i, k, n) of pre-activations -> parts of post-activations by the zero-origin slope."""
    return parts * (post / (pre + EPS))[:, None, :]


def _attention_parts(block, pattern: torch.Tensor, x: torch.Tensor, previous: torch.Tensor | None,
                     values: torch.Tensor) -> torch.Tensor:
    """The attention block's input to LayerNorm 1 as parts (i, k, d), biases shared out."""
    attention = block.attention
    w_o, b_o = attention.output.dense.weight, attention.output.dense.bias
    heads, n = pattern.shape[0], pattern.shape[-1]
    d_head = w_o.shape[1] // heads
    if previous is None:  # first layer: the released code's non-vector path
        f = torch.einsum("hkd,mhd->hkm", values, w_o.view(-1, heads, d_head))  # (heads, key, d_model)
        parts = torch.einsum("hik,hkm->ikm", pattern, f)  # (i, k, d)
        parts[torch.arange(n), torch.arange(n)] += x
        return share_bias(parts, b_o)
    decomposed = torch.einsum("skd,vd->skv", previous, attention.self.value.weight)  # (s, k, d) no value bias
    decomposed = decomposed.view(n, n, heads, d_head)
    context = torch.einsum("his,skhe->ikhe", pattern, decomposed).reshape(n, n, heads * d_head)  # (i, k, d)
    parts = context @ w_o.T + previous
    return share_bias(parts, w_o @ attention.self.value.bias + b_o)


def _ffn_and_ln2(block, attended_parts: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
    """The FFN, the residual and LayerNorm 2 for some receiving tokens: parts (rows, k, d) -> (rows, k, d)."""
    dense1, dense2 = block.intermediate.dense, block.output.dense
    pre_act = dense1(attended)  # (rows, d_ff)
    ffn_parts = share_bias(attended_parts @ dense1.weight.T, dense1.bias)  # (rows, k, d_ff)
    ffn_parts = activation_parts(ffn_parts, pre_act, block.intermediate.act(pre_act))
    ffn_parts = share_bias(ffn_parts @ dense2.weight.T, dense2.bias)
    pre_ln2_parts = attended_parts + ffn_parts
    return layer_norm_parts(pre_ln2_parts, pre_ln2_parts.sum(1), block.output.LayerNorm)


def decompose(captured: Captured) -> list[torch.Tensor]:
    """Each layer's output as parts per input token: a list of (i, k, d_model) tensors, float32."""
    refuse_pre_norm(captured.model, "DecompX")
    out, previous = [], None
    n, layers = captured.n, captured.layers
    with torch.no_grad():
        for layer in range(layers):
            block = captured.block(layer)
            # n parts of n tokens through one layer cost about n / layers full passes: charged to the
            # request's budget (caps on work and time) before the layer, as value zeroing does
            charge(torch.empty((-(-n // layers), n), dtype=torch.long), None, None, False)
            device = next(block.parameters()).device
            pattern = captured.pattern(layer).to(device)  # (heads, i, k)
            values = captured.raw_values(layer).float().to(device)  # (heads, k, d_head)
            x = captured.layer_input(layer).float().to(device)  # (n, d_model)
            pre_ln1_parts = _attention_parts(block, pattern, x, previous, values)
            pre_ln1 = pre_ln1_parts.sum(1)  # (i, d): the real input of LayerNorm 1
            ln1 = block.attention.output.LayerNorm
            attended_parts = layer_norm_parts(pre_ln1_parts, pre_ln1, ln1)
            attended = ln1(pre_ln1)
            previous = torch.cat([_ffn_and_ln2(block, attended_parts[rows], attended[rows])
                                  for rows in torch.arange(n, device=device).split(ROW_CHUNK)])
            out.append(previous)
    return out


def layer_matrices(captured: Captured) -> torch.Tensor:
    """||A_l[i, k]|| for every layer: (layers, i, k), raw norms."""
    return torch.stack([parts.norm(dim=-1) for parts in decompose(captured)]).cpu()


def logit_contributions(model, last_parts: torch.Tensor, position: int,
                        targets: torch.Tensor | None = None) -> torch.Tensor:
    """Each input token's signed share of the MLM logits of ``targets`` (default: every word) at
    ``position``: (k, targets), from the last layer's parts (i, k, d). The decoder bias is shared
    out over the k by |<logits of k's part, bias>| as the released code shares the classifier's bias."""
    head = model.cls.predictions
    transform = head.transform
    with torch.no_grad():
        parts = last_parts[position][None]  # (1, k, d)
        hidden = parts.sum(1)  # (1, d)
        pre_act = transform.dense(hidden)
        dense_parts = share_bias(parts @ transform.dense.weight.T, transform.dense.bias)
        act_parts = activation_parts(dense_parts, pre_act, transform.act(pre_act))
        ln_parts = layer_norm_parts(act_parts, act_parts.sum(1), transform.LayerNorm)[0]  # (k, d_emb)
        embeddings = model.bert.embeddings.word_embeddings.weight  # (vocab, d_emb)
        logits = ln_parts @ embeddings.T  # (k, vocab), no bias
        weights = (logits @ head.bias).abs()
        weights = weights / (weights.sum() + EPS)
        shares = logits + weights[:, None] * head.bias  # (k, vocab)
        return (shares if targets is None else shares[:, targets]).cpu()


def top_word_shares(model, last_parts: torch.Tensor, position: int) -> tuple[int, torch.Tensor]:
    """The model's top word at ``position`` and each input token's share of its logit: (word id, (n,)),
    from the last layer's parts (``decompose(...)[-1]``)."""
    shares = logit_contributions(model, last_parts, position)  # (k, vocab)
    top = int(shares.sum(0).argmax())
    return top, shares[:, top]
