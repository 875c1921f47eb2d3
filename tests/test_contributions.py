"""GlobEnc (Modarressi et al. 2022) and ALTI (Ferrando et al. 2022) against independent loops over
transformers' own modules, written from the released code's explicit (query, key, d_model) tensors,
and hand cases where a plausible misreading ranks tokens otherwise."""
import json

import numpy as np
import pytest
import torch

from bertviz_lab.attention.sources import layer_matrices, with_source
from bertviz_lab.bert.sources.contributions import globenc_rollout, manhattan_contributions

TEXT = "the big cat sat on the red mat"


def explicit_vectors(hf, block, x, alpha):
    """v_ij = sum_h alpha_ij^h f_h(x_j) + [i == j] x_i as a (query, key, d_model) tensor, and the dense bias."""
    cfg = hf.config
    heads, d_head, n = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads, x.shape[0]
    value = block.attention.self.value(x).view(n, heads, d_head)  # (key, heads, d_head)
    w_o = block.attention.output.dense.weight
    f = torch.stack([value[:, h] @ w_o[:, h * d_head:(h + 1) * d_head].T for h in range(heads)])  # (h, key, d)
    weighted = torch.einsum("hqk,hkd->hqkd", alpha, f).sum(0)  # the released code's summed_weighted_layer
    return weighted + torch.eye(n)[:, :, None] * x[None, :, :]


def layer_inputs(hf, lab):
    ids = torch.tensor([lab.encode(TEXT).ids])
    with torch.no_grad():
        out = hf.bert(input_ids=ids, output_hidden_states=True, output_attentions=True)
    return out.hidden_states, out.attentions


def test_globenc_equals_the_released_computation_on_transformers(tiny_hf, tiny_lab):
    hidden, attentions = layer_inputs(tiny_hf, tiny_lab)
    ours = layer_matrices(tiny_lab, tiny_lab.analyze(TEXT), "globenc")  # (layers, query, key)
    for layer, block in enumerate(tiny_hf.bert.encoder.layer):
        with torch.no_grad():
            x = hidden[layer][0]
            v = explicit_vectors(tiny_hf, block, x, attentions[layer][0])
            ln1, ln2 = block.attention.output.LayerNorm, block.output.LayerNorm
            pre_ln = v.sum(1) + block.attention.output.dense.bias
            var1 = (pre_ln - pre_ln.mean(-1, keepdim=True)).pow(2).mean(-1)[:, None, None]
            post_ln_layer = (v - v.mean(-1, keepdim=True)) / (var1 + ln1.eps) ** 0.5 * ln1.weight
            attention_output = ln1(pre_ln)
            pre_ln2 = block.output.dense(block.intermediate(attention_output)) + attention_output
            var2 = (pre_ln2 - pre_ln2.mean(-1, keepdim=True)).pow(2).mean(-1)[:, None, None]
            centred = post_ln_layer - post_ln_layer.mean(-1, keepdim=True)
            n_enc = torch.norm(centred / (var2 + ln2.eps) ** 0.5 * ln2.weight, dim=-1)  # post_ln2_norm
        np.testing.assert_allclose(ours[layer], n_enc.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"layer {layer}")


def test_globenc_is_not_the_first_layernorm_alone(tiny_lab):
    """Dropping the second LayerNorm (Kobayashi et al.'s norm-residual) gives other numbers."""
    analysis = tiny_lab.analyze(TEXT)
    globenc = layer_matrices(tiny_lab, analysis, "globenc")
    first_only = layer_matrices(tiny_lab, analysis, "norm-residual")
    ratio = globenc / first_only
    assert not np.allclose(ratio, ratio[:, :, :1], rtol=1e-3)  # not a per-row rescaling either


def test_globenc_rollout_is_the_plain_product_by_hand():
    """Released GlobEnc multiplies raw N_Enc layers; normalising each layer's rows first would rank
    the other key first for this row."""
    first = np.array([[1.0, 0.0], [0.0, 10.0]])
    second = np.array([[2.0, 1.0], [1.0, 1.0]])
    out = globenc_rollout(np.stack([first, second]))
    np.testing.assert_allclose(out[1, 0], [2 / 12, 10 / 12])  # (2*1 + 1*0, 2*0 + 1*10) = (2, 10), over 12
    np.testing.assert_allclose(out[0], [[1, 0], [0, 1]])
    normalised_first = first / first.sum(-1, keepdims=True)  # the identity
    normalised_second = second / second.sum(-1, keepdims=True)
    misreading = normalised_second @ normalised_first
    assert np.argmax(misreading[0]) == 0 and np.argmax(out[1, 0]) == 1


def test_alti_equals_the_released_computation_on_transformers(tiny_hf, tiny_lab):
    hidden, attentions = layer_inputs(tiny_hf, tiny_lab)
    ours = layer_matrices(tiny_lab, tiny_lab.analyze(TEXT), "alti")
    for layer, block in enumerate(tiny_hf.bert.encoder.layer):
        with torch.no_grad():
            x = hidden[layer][0]
            v = explicit_vectors(tiny_hf, block, x, attentions[layer][0])
            ln1, dense_bias = block.attention.output.LayerNorm, block.attention.output.dense.bias
            d = v.shape[-1]
            l_transform = (torch.eye(d) - torch.ones(d, d) / d) @ torch.diag(ln1.weight)  # centring, then gamma
            pre_ln = v.sum(1) + dense_bias
            std = ((pre_ln - pre_ln.mean(-1, keepdim=True)).pow(2).mean(-1) + ln1.eps).sqrt()[:, None]
            transformed = (v @ l_transform) / std[:, :, None]  # T_i(x_j)
            resultant = (v.sum(1) @ l_transform + dense_bias @ l_transform) / std + ln1.bias  # y_i
            real = block.attention(x[None])
            real = (real[0] if isinstance(real, tuple) else real)[0]
            np.testing.assert_allclose(resultant.numpy(), real.numpy(), atol=1e-4)  # as the released code asserts
            importance = -torch.cdist(transformed, resultant[:, None, :], p=1)[..., 0]  # -||T_ij - y_i||_1
            c = (importance + resultant.abs().sum(-1, keepdim=True)).clamp(min=0)  # min_sum with ||y_i||_1
            c = c / c.sum(-1, keepdim=True)
        np.testing.assert_allclose(ours[layer], c.numpy(), atol=1e-4, err_msg=f"layer {layer}")
        np.testing.assert_allclose(ours[layer].sum(-1), 1.0, atol=1e-5)


def test_alti_contributions_by_hand_use_the_manhattan_distance():
    """y = (2, 0); T_a = (1, -1) is 2 away in L1 and 1.41 in L2; T_b = (0.2, 0) is 1.8 away in both.
    ALTI: c_a = max(0, 2 - 2) = 0, c_b = 2 - 1.8 = 0.2, so b takes all; an L2 distance or the norm
    of T would put a first."""
    t = torch.tensor([[[1.0, -1.0], [0.2, 0.0]]])  # (query, key, d)
    y = torch.tensor([[2.0, 0.0]])
    np.testing.assert_allclose(manhattan_contributions(t, y).numpy(), [[0.0, 1.0]], atol=1e-7)
    l2 = (y.norm(dim=-1, keepdim=True) - (t - y[:, None]).norm(dim=-1)).clamp(min=0)
    assert int(l2.argmax()) == 0 and int(t.norm(dim=-1).argmax()) == 0


@pytest.mark.parametrize("source", ["globenc", "alti"])
def test_per_layer_sources_show_one_matrix_for_every_head(tiny_lab, source):
    analysis = tiny_lab.analyze(TEXT)
    shown = with_source(tiny_lab, analysis, source).attention  # (layers, heads, query, key)
    per_layer = layer_matrices(tiny_lab, analysis, source)
    np.testing.assert_allclose(shown, np.broadcast_to(per_layer[:, None], shown.shape), atol=1e-6)


@pytest.mark.parametrize("source", ["globenc", "alti"])
def test_analyze_json_gives_one_matrix_per_layer(source, tiny_lab, tiny_folder, capsys):
    from bertviz_lab.cli import main

    assert main(["analyze", TEXT, "--model", str(tiny_folder), "--device", "cpu", "--source", source, "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    attention = np.array(out["attention"])
    n = len(out["tokens"])
    assert attention.shape == (tiny_lab.n_layers, 1, n, n) == tuple(out["attention_shape"])
    np.testing.assert_allclose(attention[:, 0], layer_matrices(tiny_lab, tiny_lab.analyze(TEXT), source), atol=1e-5)
