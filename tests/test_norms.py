"""Norm-based attention, rollout and flow: independent computations and hand-counted cases."""
import numpy as np
import pytest
import torch

from bertviz_lab.attention.sources import layer_matrices, with_source
from bertviz_lab.bert.sources.flow import attention_flow, residual_augmented, rollout

TEXT = "the big cat sat on the red mat"


def hf_layer_internals(hf, lab, text):
    """From transformers' own modules: each layer's input x, value vectors and attention probabilities."""
    enc = lab.encode(text)
    ids = torch.tensor([enc.ids])
    with torch.no_grad():
        out = hf.bert(input_ids=ids, output_hidden_states=True, output_attentions=True)
    return enc, out.hidden_states, out.attentions


def test_norm_equals_an_independent_computation(tiny_hf, tiny_lab):
    enc, hidden, attentions = hf_layer_internals(tiny_hf, tiny_lab, TEXT)
    ours = with_source(tiny_lab, tiny_lab.analyze(TEXT), "norm").attention
    cfg = tiny_hf.config
    heads, d_head = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    for layer, block in enumerate(tiny_hf.bert.encoder.layer):
        x = hidden[layer][0].numpy()  # (tokens, d_model)
        w_v, b_v = block.attention.self.value.weight.detach().numpy(), block.attention.self.value.bias.detach().numpy()
        w_o = block.attention.output.dense.weight.detach().numpy()  # (d_model, d_model): out = ctx @ w_o.T
        alpha = attentions[layer][0].numpy()
        for h in range(heads):
            cols = slice(h * d_head, (h + 1) * d_head)
            for j in range(len(enc.ids)):
                f = (x[j] @ w_v.T + b_v)[cols] @ w_o[:, cols].T  # f_h(x_j) = (x W_V + b_V)_h W_O^h
                np.testing.assert_allclose(ours[layer, h, :, j], alpha[h, :, j] * np.linalg.norm(f), rtol=1e-4,
                                           atol=1e-6)


def test_norm_residual_terms_add_up_to_the_layernorm_output(tiny_hf, tiny_lab):
    """Independent loops: g_ij = gamma (z_ij - mean z_ij) / s_i with z_ij = sum_h alpha f_h(x_j) + [i=j] x_i.
    The terms sum to LN's output minus the parts no token owns; their norms are what we report."""
    enc, hidden, attentions = hf_layer_internals(tiny_hf, tiny_lab, TEXT)
    ours = with_source(tiny_lab, tiny_lab.analyze(TEXT), "norm-residual").attention
    cfg = tiny_hf.config
    heads, d_head, n = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads, len(enc.ids)
    block = tiny_hf.bert.encoder.layer[1]
    x = hidden[1][0]
    alpha = attentions[1][0]
    value = block.attention.self.value(x).view(n, heads, d_head)  # (tokens, heads, d_head)
    w_o, b_o = block.attention.output.dense.weight.detach(), block.attention.output.dense.bias.detach()
    ln = block.attention.output.LayerNorm
    with torch.no_grad():
        f = torch.stack([value[:, h] @ w_o[:, h * d_head:(h + 1) * d_head].T for h in range(heads)])  # (h, j, d)
        z = torch.einsum("hij,hjd->ijd", alpha, f) + torch.eye(n)[:, :, None] * x[:, None, :]
        pre = z.sum(1) + b_o
        s = torch.sqrt(pre.var(-1, unbiased=False) + ln.eps)
        g = ln.weight * (z - z.mean(-1, keepdim=True)) / s[:, None, None]
        rest = ln.bias + ln.weight * (b_o - b_o.mean()) / s[:, None]
        np.testing.assert_allclose((g.sum(1) + rest).numpy(), ln(pre).numpy(), atol=1e-5)  # the decomposition holds
    for h in range(heads):  # per layer: the same matrix for every head
        np.testing.assert_allclose(ours[1, h], g.norm(dim=-1).numpy(), rtol=1e-4, atol=1e-5)


def test_rollout_by_hand():
    a1 = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0, 0, 1.0]])
    a2 = np.eye(3)
    # residual-augmented: 0.5 A + 0.5 I; layer 2 becomes I, so rollout up to layer 2 equals layer 1's
    expected1 = np.array([[1.0, 0, 0], [0.25, 0.75, 0], [0, 0, 1.0]])
    out = rollout(np.stack([a1, a2]))
    np.testing.assert_allclose(out[0], expected1)
    np.testing.assert_allclose(out[1], expected1)
    np.testing.assert_allclose(rollout(np.stack([a1]), residual=False)[0], a1)


def test_flow_by_hand_differs_from_rollout():
    # two tokens, two layers, no residual: a path through middle token k carries min(capacities),
    # so flow(i -> j) = sum_k min(A2[i, k], A1[k, j]) before row normalisation
    a1 = np.array([[0.5, 0.5], [0.1, 0.9]])
    a2 = np.array([[0.5, 0.5], [0.2, 0.8]])
    flows = np.array([[min(0.5, 0.5) + min(0.5, 0.1), min(0.5, 0.5) + min(0.5, 0.9)],
                      [min(0.2, 0.5) + min(0.8, 0.1), min(0.2, 0.5) + min(0.8, 0.9)]])
    expected = flows / flows.sum(1, keepdims=True)
    got = attention_flow(np.stack([a1, a2]), residual=False)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert not np.allclose(got, rollout(np.stack([a1, a2]), residual=False)[1], atol=1e-3)


def test_flow_equals_networkx_and_is_capped():
    nx = pytest.importorskip("networkx")
    rng = np.random.default_rng(0)
    layers = rng.random((3, 4, 4))
    a = residual_augmented(layers)
    graph = nx.DiGraph()
    for layer in range(3):
        for i in range(4):
            for j in range(4):
                graph.add_edge((layer + 1, i), (layer, j), capacity=a[layer, i, j])
    want = np.array([[nx.maximum_flow_value(graph, (3, i), (0, j)) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(attention_flow(layers), want / want.sum(1, keepdims=True), atol=1e-5)
    with pytest.raises(ValueError, match="limited to"):
        attention_flow(np.ones((1, 60, 60)))


def test_layer_matrix_of_attention_is_the_head_mean(tiny_lab):
    a = tiny_lab.analyze(TEXT)
    np.testing.assert_allclose(layer_matrices(tiny_lab, a, "attention"), a.attention.mean(1), atol=1e-6)


def test_layer_matrix_of_norm_is_the_norm_of_the_summed_heads(tiny_hf, tiny_lab):
    """||sum_h alpha_h(i, j) f_h(x_j)|| from transformers' modules: the heads are summed before the norm
    (Kobayashi et al. 2020), which a mean of per-head norms would not give."""
    enc, hidden, attentions = hf_layer_internals(tiny_hf, tiny_lab, TEXT)
    ours = layer_matrices(tiny_lab, tiny_lab.analyze(TEXT), "norm")  # (layers, query, key)
    cfg = tiny_hf.config
    heads, d_head, n = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads, len(enc.ids)
    for layer, block in enumerate(tiny_hf.bert.encoder.layer):
        with torch.no_grad():
            value = block.attention.self.value(hidden[layer][0]).view(n, heads, d_head)  # (tokens, heads, d_head)
            w_o = block.attention.output.dense.weight
            f = torch.stack([value[:, h] @ w_o[:, h * d_head:(h + 1) * d_head].T for h in range(heads)])  # (h, j, d)
            summed = torch.einsum("hij,hjd->ijd", attentions[layer][0], f).norm(dim=-1)  # (query, key)
        np.testing.assert_allclose(ours[layer], summed.numpy(), rtol=1e-4, atol=1e-6)
        per_head_mean = with_source(tiny_lab, tiny_lab.analyze(TEXT), "norm").attention[layer].mean(0)
        assert not np.allclose(ours[layer], per_head_mean, atol=1e-4)


def test_layer_matrix_of_norm_residual_is_what_each_head_shows(tiny_lab):
    a = tiny_lab.analyze(TEXT)
    shown = with_source(tiny_lab, a, "norm-residual").attention  # (layers, heads, query, key), one matrix per layer
    np.testing.assert_allclose(layer_matrices(tiny_lab, a, "norm-residual"), shown[:, 0], rtol=1e-5, atol=1e-6)


def test_comparisons_in_a_norm_source(sharp_lab):
    from bertviz_lab.interventions import compare, make_intervention
    from bertviz_lab.lab import Readout

    c = compare(sharp_lab, "the big cat [MASK] on the red mat", make_intervention("left-only"),
                readout=Readout(source="norm"))
    assert c.baseline.source == c.intervened.source == "norm"
    np.testing.assert_allclose(c.baseline.attention, with_source(sharp_lab, sharp_lab.analyze(
        "the big cat [MASK] on the red mat"), "norm").attention, rtol=1e-5, atol=1e-6)
    assert np.isfinite(c.js).all() and float(c.js.min()) >= 0
