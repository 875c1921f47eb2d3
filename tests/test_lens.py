"""The MLM lens and the query/key vectors, against transformers' own modules."""
import numpy as np
import pytest
import torch

from bertviz_lab.lens import mlm_lens, queries_and_keys

TEXT = "the cat sat on the [MASK] ."


def test_the_lens_last_layer_is_the_models_prediction(tiny_lab):
    analysis = tiny_lab.analyze(TEXT, top_k=3)
    [lens] = mlm_lens(tiny_lab, analysis, top_k=3)
    last = lens.layers[-1]
    assert [row.layer for row in lens.layers] == list(range(1, tiny_lab.n_layers + 1))  # 1-based
    assert last.tokens == [p.token for p in analysis.mlm[0].predictions]
    np.testing.assert_allclose(last.probabilities, [p.probability for p in analysis.mlm[0].predictions], atol=1e-6)
    assert last.final_rank == 1 and lens.final == last.tokens[0]


def test_every_layers_lens_equals_the_head_of_transformers_on_that_hidden_state(tiny_hf, tiny_lab):
    """Independent: transformers' hidden_states[L] through its own cls head (BertForPreTraining.cls)."""
    analysis = tiny_lab.analyze(TEXT, top_k=4)
    [lens] = mlm_lens(tiny_lab, analysis, top_k=4)
    position = analysis.mlm[0].position
    with torch.no_grad():
        out = tiny_hf.bert(input_ids=torch.tensor([analysis.token_ids]), output_hidden_states=True)
        for layer, row in zip(range(1, tiny_lab.n_layers + 1), lens.layers):
            probs = torch.softmax(tiny_hf.cls.predictions(out.hidden_states[layer][0, position]), -1)
            top = torch.topk(probs, 4)
            assert row.tokens == [tiny_lab.tokenizer.id_to_token(int(i)) for i in top.indices]
            np.testing.assert_allclose(row.probabilities, top.values.numpy(), atol=1e-5)
            final = tiny_lab.tokenizer.token_to_id(lens.final)
            assert row.final_rank == int((probs > probs[final]).sum()) + 1  # rank of the final answer, 1-based


def test_queries_and_keys_reproduce_the_attention(tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    queries, keys = queries_and_keys(tiny_lab, analysis)
    layers, heads, n, dim = queries.shape
    assert (layers, heads, n) == analysis.attention.shape[:3] and keys.shape == queries.shape
    scores = queries @ keys.transpose(0, 1, 3, 2) / np.sqrt(dim)  # (layers, heads, query, key)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(weights / weights.sum(-1, keepdims=True), analysis.attention, atol=1e-5)


def test_queries_are_the_projection_with_its_bias(tiny_hf, tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    queries, _ = queries_and_keys(tiny_lab, analysis)
    with torch.no_grad():
        hidden = tiny_hf.bert(input_ids=torch.tensor([analysis.token_ids]), output_hidden_states=True).hidden_states
        block = tiny_hf.bert.encoder.layer[1].attention.self
        q = block.query(hidden[1][0])  # (tokens, d_model), bias included
    heads, dim = queries.shape[1], queries.shape[3]
    np.testing.assert_allclose(queries[1], q.view(-1, heads, dim).transpose(0, 1).numpy(), atol=1e-5)


def test_the_lens_needs_a_mask_and_a_head(tiny_lab, minilm_lab):
    from bertviz_lab import InputError

    with pytest.raises(InputError, match="mask a token first"):
        mlm_lens(tiny_lab, tiny_lab.analyze("the cat sat"))
    with pytest.raises(InputError, match="no masked-language-model head"):
        mlm_lens(minilm_lab, minilm_lab.analyze(TEXT))
