"""Value zeroing (Mohebbi et al. 2023) against an independent loop over transformers' own layers."""
import numpy as np
import pytest
import torch

from bertviz_lab.attention.sources import layer_matrices, with_source

TEXT = "the big cat sat on the red mat"


def released_loop(hf, ids: torch.Tensor) -> np.ndarray:
    """The released demo's algorithm on transformers' modules: for each layer and token t, run the layer
    from its original input with t's value vectors (projection output, bias included) zeroed in every
    head; cosine distance of each output to the original, rows divided by their sums."""
    with torch.no_grad():
        hidden = hf.bert(input_ids=ids, output_hidden_states=True).hidden_states
    n = ids.shape[1]
    scores = np.zeros((len(hf.bert.encoder.layer), n, n))
    for layer, block in enumerate(hf.bert.encoder.layer):
        for t in range(n):
            def zero(_module, _inputs, output, t=t):
                output = output.clone()
                output[:, t] = 0
                return output

            handle = block.attention.self.value.register_forward_hook(zero)
            try:
                with torch.no_grad():
                    out = block(hidden[layer])
            finally:
                handle.remove()
            out = out[0] if isinstance(out, tuple) else out
            x, y = out[0].double().numpy(), hidden[layer + 1][0].double().numpy()
            cos = (x * y).sum(-1) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1))
            scores[layer, :, t] = 1 - cos
    return scores / scores.sum(-1, keepdims=True)


def test_value_zeroing_equals_the_released_algorithm_on_transformers(tiny_hf, tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    ours = layer_matrices(tiny_lab, analysis, "value-zeroing")  # (layers, query, key)
    expected = released_loop(tiny_hf, torch.tensor([analysis.token_ids]))
    np.testing.assert_allclose(ours, expected, atol=1e-4)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-6)


def test_value_zeroing_is_the_same_matrix_for_every_head_in_views(tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    shown = with_source(tiny_lab, analysis, "value-zeroing").attention  # (layers, heads, query, key)
    per_layer = layer_matrices(tiny_lab, analysis, "value-zeroing")
    assert shown.shape == analysis.attention.shape
    np.testing.assert_allclose(shown, np.broadcast_to(per_layer[:, None], shown.shape), atol=1e-6)


def test_value_zeroing_is_not_attention_and_not_token_zeroing(tiny_hf, tiny_lab):
    """Two misreadings give other numbers: the attention weights themselves, and zeroing the token's
    whole input vector (which also changes queries, keys and the residual)."""
    analysis = tiny_lab.analyze(TEXT)
    ours = layer_matrices(tiny_lab, analysis, "value-zeroing")
    assert not np.allclose(ours, analysis.attention.mean(1), atol=1e-2)
    ids = torch.tensor([analysis.token_ids])
    with torch.no_grad():
        hidden = tiny_hf.bert(input_ids=ids, output_hidden_states=True).hidden_states
        block = tiny_hf.bert.encoder.layer[0]
        x = hidden[0].clone()
        x[:, 2] = 0  # zero token 2's whole input
        out = block(x)
        out = (out[0] if isinstance(out, tuple) else out)[0].double()
    y = hidden[1][0].double()
    whole = 1 - torch.nn.functional.cosine_similarity(out, y, dim=-1)  # (query,)
    assert whole[2] > 0.05 and not np.isclose(float(whole[1]), float(ours[0, 1, 2]) * 1.0, atol=1e-3)


@pytest.mark.parametrize("source", ["value-zeroing"])
def test_the_cli_offers_value_zeroing(source, tiny_folder, capsys):
    import json

    from bertviz_lab.cli import main

    assert main(["analyze", TEXT, "--model", str(tiny_folder), "--device", "cpu", "--source", source, "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    attention = np.array(out["attention"])
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)


def test_syntax_scoring_runs_on_value_zeroing_batched_as_one_at_a_time(tiny_lab):
    from bertviz_lab.resources import SAMPLE_TREEBANK
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.treebank import read_conllu

    sentences = read_conllu(SAMPLE_TREEBANK)[:6]
    batched = score_treebank(tiny_lab, sentences, batch_size=6, source="value-zeroing")
    single = score_treebank(tiny_lab, sentences, batch_size=1, source="value-zeroing")
    assert batched.sentences_used == 6
    for key, hits in single.arcs.hits.items():
        np.testing.assert_array_equal(batched.arcs.hits[key], hits, err_msg=key)


@pytest.mark.parametrize("source", ["value-zeroing", "decompx"])
def test_layer_by_layer_sources_are_charged_to_the_request_budget(tiny_lab, source):
    """Value zeroing's batched layer passes and DecompX's n parts per layer bypass the model's forward,
    so they charge the budget themselves: a public server's work and time caps hold for them too."""
    from bertviz_lab.bert.runtime.budget import Budget, BudgetExceeded, spending

    analysis = tiny_lab.analyze(TEXT)
    with spending(Budget(token_passes=10**9)) as spend:
        layer_matrices(tiny_lab, analysis, source)
    n, layers = len(analysis.tokens), tiny_lab.n_layers
    assert spend.token_passes == n + layers * (-(-n // layers)) * n  # the capture pass, then each layer's rows
    with spending(Budget(token_passes=2 * n)), pytest.raises(BudgetExceeded, match="more model work"):
        layer_matrices(tiny_lab, analysis, source)
