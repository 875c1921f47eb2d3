"""DecompX (Modarressi et al. 2023) against an independent port of the released code's per-layer
decomposition on transformers' own modules, its exactness, and hand cases for how biases are shared."""
import numpy as np
import pytest
import torch

from bertviz_lab.attention.sources import layer_matrices
from bertviz_lab.bert.sources import decompx
from bertviz_lab.bert.sources.captured import MIXING_CAPTURES, Captured

TEXT = "the big cat sat on the [MASK] mat"


def absdot(bias, parts):  # the released bias_decomposer, "absdot"
    weights = torch.abs(torch.einsum("skd,d->sk", parts, bias))
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-12)
    return parts + weights[..., None] * bias


def ln_decomposer(parts, pre_ln, ln):
    var = (pre_ln - pre_ln.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True)[:, None]
    normalized = (parts - parts.mean(-1, keepdim=True)) / (var + ln.eps) ** 0.5
    return absdot(ln.bias, normalized * ln.weight)


def released_decomposition(hf, ids):
    """The released BertLayer.forward with decompx_config (absdot, GeLU_ZO, vector aggregation), as
    loops over transformers' modules: (layers, i, k, d)."""
    with torch.no_grad():
        hidden = hf.bert(input_ids=ids, output_hidden_states=True, output_attentions=True)
    cfg = hf.config
    heads, d_head = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    n, out, attribution = ids.shape[1], [], None
    for layer, block in enumerate(hf.bert.encoder.layer):
        with torch.no_grad():
            x = hidden.hidden_states[layer][0]
            alpha = hidden.attentions[layer][0]  # (heads, i, s)
            w_o = block.attention.output.dense.weight.view(cfg.hidden_size, heads, d_head)
            if attribution is None:
                value = block.attention.self.value(x).view(n, heads, d_head).transpose(0, 1)  # (h, s, v)
                transformed = torch.einsum("hsv,dhv->hsd", value, w_o)
                weighted = torch.einsum("hks,hsd->hksd", alpha, transformed).sum(0)
                residual = torch.einsum("sk,sd->skd", torch.eye(n), x)
                res = weighted + residual
                bias = block.attention.output.dense.bias
            else:
                value = torch.einsum("ijd,vd->ijv", attribution, block.attention.self.value.weight)
                value = value.view(n, n, heads, d_head).permute(2, 0, 1, 3)  # (h, s, k, v)
                transformed = torch.einsum("hsqv,dhv->hsqd", value, w_o)
                res = torch.einsum("hks,hsqd->hkqd", alpha, transformed).sum(0) + attribution
                bias = block.attention.output.dense.weight @ block.attention.self.value.bias \
                    + block.attention.output.dense.bias
            res = absdot(bias, res)
            pre_ln = block.attention.output.dense(
                torch.einsum("hks,hsv->khv", alpha, block.attention.self.value(x).view(n, heads, d_head)
                             .transpose(0, 1)).reshape(n, -1)) + x
            post_ln = ln_decomposer(res, pre_ln, block.attention.output.LayerNorm)
            attention_output = block.attention.output.LayerNorm(pre_ln)
            pre_act = block.intermediate.dense(attention_output)
            post_act = block.intermediate.intermediate_act_fn(pre_act)
            first = absdot(block.intermediate.dense.bias,
                           torch.einsum("ld,skd->skl", block.intermediate.dense.weight, post_ln))
            first = first * (post_act / (pre_act + 1e-12))[:, None, :]  # gelu_zo_decomposition
            second = absdot(block.output.dense.bias, torch.einsum("skl,dl->skd", first, block.output.dense.weight))
            pre_ln2 = block.output.dense(post_act) + attention_output
            attribution = ln_decomposer(post_ln + second, pre_ln2, block.output.LayerNorm)
            out.append(attribution)
    return torch.stack(out), hidden.hidden_states


def test_decompx_equals_the_released_decomposition_on_transformers(tiny_hf, tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    ids = torch.tensor([analysis.token_ids])
    expected, hidden = released_decomposition(tiny_hf, ids)
    ours = layer_matrices(tiny_lab, analysis, "decompx")  # (layers, i, k) norms
    np.testing.assert_allclose(ours, expected.norm(dim=-1).numpy(), rtol=1e-4, atol=1e-5)
    _, cache = tiny_lab.run(tiny_lab.batch_tensors([analysis.encoded()]), capture=MIXING_CAPTURES, compute_mlm=False)
    parts = decompx.decompose(Captured(tiny_lab.model, cache, 0, len(analysis.tokens)))
    for layer, p in enumerate(parts):  # the parts of each token sum to its real hidden state
        np.testing.assert_allclose(p.sum(1).numpy(), hidden[layer + 1][0].numpy(), atol=1e-4)


def test_logit_shares_sum_to_the_real_logit(sharp_lab):
    analysis = sharp_lab.analyze(TEXT)
    _, cache = sharp_lab.run(sharp_lab.batch_tensors([analysis.encoded()]), capture=MIXING_CAPTURES, compute_mlm=False)
    position = analysis.mlm[0].position
    last_parts = decompx.decompose(Captured(sharp_lab.model, cache, 0, len(analysis.tokens)))[-1]
    top, shares = decompx.top_word_shares(sharp_lab.model, last_parts, position)
    assert sharp_lab.tokenizer.id_to_token(top) == analysis.mlm[0].predictions[0].token
    with torch.no_grad():
        out = sharp_lab.model(input_ids=torch.tensor([analysis.token_ids]))
    assert float(shares.sum()) == pytest.approx(float(out.mlm_logits[0, position, top]), abs=1e-3)


def test_a_bias_goes_by_the_absolute_dot_product_by_hand():
    """Parts (1, 0) and (0, 3), bias (2, 0): |<part, bias>| = 2 and 0, so the first part takes all of it.
    Sharing by the parts' norms (1 : 3) or equally would give the second part 3/4 or 1/2 of the bias."""
    parts = torch.tensor([[[1.0, 0.0], [0.0, 3.0]]])  # (i, k, d)
    shared = decompx.share_bias(parts, torch.tensor([2.0, 0.0]))
    np.testing.assert_allclose(shared[0].numpy(), [[3.0, 0.0], [0.0, 3.0]], atol=1e-6)


def test_the_activation_slope_keeps_the_parts_summing_to_the_real_output():
    """Zero-origin slope: each neuron's parts are scaled by gelu(h) / h, so they sum to gelu(h); the
    tangent slope (gelu'(h), the released "GeLU_LA" option) would not without a bias term."""
    pre = torch.tensor([[-0.5, 1.5]])
    parts = torch.tensor([[[-1.0, 0.5], [0.5, 1.0]]])  # (i, k, n), sums to pre
    post = torch.nn.functional.gelu(pre)
    out = decompx.activation_parts(parts, pre, post)
    np.testing.assert_allclose(out.sum(1).numpy(), post.numpy(), atol=1e-6)
    h = pre[0]
    tangent = 0.5 * (1 + torch.erf(h / 2 ** 0.5)) + h * torch.exp(-h ** 2 / 2) / (2 * torch.pi) ** 0.5
    assert not np.allclose((parts * tangent).sum(1).numpy(), post.numpy(), atol=1e-3)



def test_aggregates_do_not_roll_out_decompx_again(tiny_lab):
    """DecompX is aggregated from the input by the method: the Aggregates view shows each layer's own
    matrix (rows normalised) where the others show rollout, and no flow on top of it."""
    from bertviz_lab.attention.sources import with_source
    from bertviz_lab.figures.analysis import ViewOptions, aggregates

    analysis = tiny_lab.analyze(TEXT)
    layers = layer_matrices(tiny_lab, analysis, "decompx")
    fig = aggregates(with_source(tiny_lab, analysis, "decompx"), ViewOptions(layer=1, head=0), layers)
    titles = [a["text"].replace("<b>", "").replace("</b>", "") for a in fig["layout"]["annotations"]]
    assert "aggregated by the method up to layer 2" in titles and not any(t.startswith("flow") for t in titles)
    assert len(fig["data"]) == 4
