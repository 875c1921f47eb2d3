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

from collections.abc import Sequence

import torch

from ..runtime.budget import charge
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
    """The FFN, the residual and LayerNorm 2 for some receiving tokens: parts (rows, k, d) -> (rows, k, d).

    The released order is: share b1 out over the parts of ``A W1^T``, scale by the slope s, apply W2,
    share b2 out. The first three steps are reassociated so that no (rows, k, d_ff) tensor is summed
    with another: the b1 weights |<A W1^T, b1>| are <A, W1^T b1> (W1^T b1 is a (d,) vector), and
    ``((A W1^T + w b1) * s) W2^T = ((A W1^T) * s) W2^T + w ((b1 * s) W2^T)``. The same numbers up to
    float rounding (a test runs the released order beside it); the (rows, k, d_ff) products are the
    cost that is left."""
    dense1, dense2 = block.intermediate.dense, block.output.dense
    pre_act = dense1(attended)  # (rows, d_ff)
    slope = block.intermediate.act(pre_act) / (pre_act + EPS)  # (rows, d_ff): the zero-origin slope
    weights = (attended_parts @ (dense1.weight.T @ dense1.bias)).abs()  # (rows, k): |<A W1^T, b1>|
    weights = weights / (weights.sum(-1, keepdim=True) + EPS)
    scaled = (attended_parts @ dense1.weight.T).mul_(slope[:, None, :])  # (rows, k, d_ff)
    bias_through = (dense1.bias * slope) @ dense2.weight.T  # (rows, d): b1's shares after the slope and W2
    ffn_parts = torch.addmm((weights[..., None] * bias_through[:, None, :]).flatten(0, 1), scaled.flatten(0, 1),
                            dense2.weight.T).view_as(attended_parts)  # (rows, k, d)
    ffn_parts = share_bias(ffn_parts, dense2.bias)
    pre_ln2_parts = attended_parts + ffn_parts
    return layer_norm_parts(pre_ln2_parts, pre_ln2_parts.sum(1), block.output.LayerNorm)


def layer_parts(captured: Captured, layer: int, previous: torch.Tensor | None,
                rows: Sequence[int] | None = None) -> torch.Tensor:
    """Layer ``layer``'s output as parts per input token, (i, k, d_model), from the previous layer's
    (None for the first). ``rows``: only these receiving tokens go through the FFN, giving (len(rows),
    k, d_model), for a reader of the last layer that needs those rows alone (the FFN is most of the cost)."""
    n = captured.n
    block = captured.block(layer)
    receiving = n if rows is None else len(rows)
    # parts of n tokens for r receiving tokens through one layer cost about r / layers full passes: charged
    # to the request's budget (caps on work and time) before the layer, as value zeroing does
    charge(torch.empty((-(-receiving // captured.layers), n), dtype=torch.long), None, None, False)
    device = next(block.parameters()).device
    with torch.no_grad():
        pattern = captured.pattern(layer).to(device)  # (heads, i, k)
        values = captured.raw_values(layer).float().to(device)  # (heads, k, d_head)
        x = captured.layer_input(layer).float().to(device)  # (n, d_model)
        pre_ln1_parts = _attention_parts(block, pattern, x, previous, values)
        pre_ln1 = pre_ln1_parts.sum(1)  # (i, d): the real input of LayerNorm 1
        ln1 = block.attention.output.LayerNorm
        attended_parts = layer_norm_parts(pre_ln1_parts, pre_ln1, ln1)
        attended = ln1(pre_ln1)
        chosen = torch.arange(n, device=device) if rows is None else torch.tensor(list(rows), device=device)
        return torch.cat([_ffn_and_ln2(block, attended_parts[some], attended[some]) for some in chosen.split(ROW_CHUNK)])


def decompose(captured: Captured, layers: int | None = None) -> list[torch.Tensor]:
    """Each layer's output as parts per input token: a list of (i, k, d_model) tensors, float32, for the
    first ``layers`` layers (default: all)."""
    refuse_pre_norm(captured.model, "DecompX")
    out, previous = [], None
    for layer in range(captured.layers if layers is None else layers):
        previous = layer_parts(captured, layer, previous)
        out.append(previous)
    return out


def last_layer_rows(captured: Captured, rows: Sequence[int], below: list[torch.Tensor] | None = None) -> torch.Tensor:
    """The last layer's parts of the receiving tokens ``rows`` only: (len(rows), k, d_model). ``below``: the list
    (or its last element alone, in a list) of
    ``decompose(captured, captured.layers - 1)`` when the caller has it (to read several rows in turn)."""
    refuse_pre_norm(captured.model, "DecompX")
    below = decompose(captured, captured.layers - 1) if below is None else below
    return layer_parts(captured, captured.layers - 1, below[-1] if below else None, rows)


def layer_matrices(captured: Captured) -> torch.Tensor:
    """||A_l[i, k]|| for every layer: (layers, i, k), raw norms."""
    return torch.stack([parts.norm(dim=-1) for parts in decompose(captured)]).cpu()


def _decoder_inputs(model, last_parts: torch.Tensor, position: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The MLM head's transform of ``position``'s parts, (k, d_emb), and each part's weight in the
    decoder bias, (k,): |<logits of k's part, bias>| normalised, computed as |<part, E^T bias>| (the
    same number without the (k, vocab) product)."""
    head = model.cls.predictions
    transform = head.transform
    parts = last_parts[position][None]  # (1, k, d)
    hidden = parts.sum(1)  # (1, d)
    pre_act = transform.dense(hidden)
    dense_parts = share_bias(parts @ transform.dense.weight.T, transform.dense.bias)
    act_parts = activation_parts(dense_parts, pre_act, transform.act(pre_act))
    ln_parts = layer_norm_parts(act_parts, act_parts.sum(1), transform.LayerNorm)[0]  # (k, d_emb)
    embeddings = model.bert.embeddings.word_embeddings.weight  # (vocab, d_emb)
    weights = (ln_parts @ (embeddings.T @ head.bias)).abs()  # (k,)
    return ln_parts, weights / (weights.sum() + EPS)


def logit_contributions(model, last_parts: torch.Tensor, position: int,
                        targets: torch.Tensor | None = None) -> torch.Tensor:
    """Each input token's signed share of the MLM logits of ``targets`` (default: every word) at
    ``position``: (k, targets), from the last layer's parts (i, k, d). The decoder bias is shared
    out over the k by |<logits of k's part, bias>| as the released code shares the classifier's bias."""
    head = model.cls.predictions
    with torch.no_grad():
        ln_parts, weights = _decoder_inputs(model, last_parts, position)
        embeddings = model.bert.embeddings.word_embeddings.weight  # (vocab, d_emb)
        chosen = slice(None) if targets is None else targets
        shares = ln_parts @ embeddings[chosen].T + weights[:, None] * head.bias[chosen]  # (k, targets)
        return shares.cpu()


def top_word_shares(model, last_parts: torch.Tensor, position: int) -> tuple[int, torch.Tensor]:
    """The model's top word at ``position`` and each input token's share of its logit: (word id, (n,)),
    from the last layer's parts (``decompose(...)[-1]``). The top word is the argmax of the shares'
    sums, which are the logits; only its column of shares is formed."""
    head = model.cls.predictions
    with torch.no_grad():
        ln_parts, weights = _decoder_inputs(model, last_parts, position)
        embeddings = model.bert.embeddings.word_embeddings.weight  # (vocab, d_emb)
        top = int((ln_parts.sum(0) @ embeddings.T + weights.sum() * head.bias).argmax())
        return top, (ln_parts @ embeddings[top] + weights * head.bias[top]).cpu()
