"""The library entry point and the command line, on the tiny checkpoint and the embedded model."""
import json

import builders
import numpy as np
import pytest
import torch

from bertviz_lab import InputError, InputTooLong

ROOT = builders.Path(__file__).resolve().parent.parent


def cli(*args):
    return builders.run_cli(*args)


def test_analyze_predicts_exactly_the_masked_positions(tiny_lab, tiny_hf):
    result = tiny_lab.analyze("the [MASK] sat on the [MASK]", top_k=3)
    assert result.tokens == ["[CLS]", "the", "[MASK]", "sat", "on", "the", "[MASK]", "[SEP]"]
    assert [p.position for p in result.mlm] == [2, 6]
    ids = torch.tensor([result.token_ids])
    with torch.no_grad():
        probs = torch.softmax(tiny_hf(input_ids=ids).prediction_logits[0], -1)
    for p in result.mlm:
        top = torch.topk(probs[p.position], 3)
        assert [q.token for q in p.predictions] == [builders.VOCAB[i] for i in top.indices.tolist()]
        np.testing.assert_allclose([q.probability for q in p.predictions], top.values.numpy(), atol=1e-5)


def test_mask_by_position_and_pair_nsp(tiny_lab, tiny_hf):
    result = tiny_lab.analyze("the cat sat", pair="it slept", masks=[2])
    assert result.tokens[2] == "[MASK]" and result.masked_positions == [2]
    assert result.mlm[0].original == "cat"
    assert result.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]
    assert result.word_ids == [None, 0, 1, 2, None, 3, 4, None]
    with torch.no_grad():
        ref = tiny_hf(input_ids=torch.tensor([result.token_ids]), token_type_ids=torch.tensor([result.segment_ids]))
    assert result.nsp == pytest.approx(torch.softmax(ref.seq_relationship_logits, -1)[0, 0].item(), abs=1e-6)


def test_bad_inputs(tiny_lab):
    with pytest.raises(InputError, match="empty"):
        tiny_lab.analyze("   ")
    with pytest.raises(InputError, match="top-k"):
        tiny_lab.analyze("the cat", top_k=0)
    with pytest.raises(InputError, match="special token"):
        tiny_lab.analyze("the cat", masks=[0])
    with pytest.raises(InputError, match="too many masked"):
        tiny_lab.analyze("[MASK] [MASK] [MASK] cat")
    with pytest.raises(InputTooLong) as info:
        tiny_lab.analyze("the " * 70)
    assert info.value.n_tokens == 72 and info.value.maximum == 64
    cut = tiny_lab.analyze("the " * 70, truncate=True)
    assert len(cut.tokens) == 64 and cut.truncated and cut.tokens[-1] == "[SEP]"


def test_cli_json_matches_library(minilm_lab):
    run = cli("analyze", "The bank raised the interest rate.", "--json", "--device", "cpu", "--model", "minilm-original")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout.strip().splitlines()[-1])
    for key in ("model", "tokens", "segment_ids", "attention", "mlm", "nsp"):
        assert key in data
    expected = minilm_lab.analyze("The bank raised the interest rate.")
    assert data["tokens"] == expected.tokens
    np.testing.assert_allclose(np.array(data["attention"]), expected.attention, atol=1e-6)
    assert data["nsp"] is None and data["mlm"] == []


def test_cli_pair_and_mask_on_tiny_checkpoint(tiny_folder):
    run = cli("analyze", "the [MASK] sat", "--pair", "it slept", "--model", str(tiny_folder), "--json", "--top-k", "2")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["mlm"][0]["position"] == 2 and len(data["mlm"][0]["predictions"]) == 2
    assert 0.0 <= data["nsp"] <= 1.0
    assert np.array(data["attention"]).shape == (2, 4, 8, 8)


@pytest.mark.parametrize("args, message", [
    (("analyze", "  "), "empty"),
    (("analyze", "x", "--model", "no-such/model-here"), "no-such/model-here"),
    (("analyze", "x", "--device", "cuda:7"), "cuda:7"),
    (("analyze", "x", "--top-k", "0"), "at least 1"),
    (("analyze", "word " * 600), "--truncate"),
])
def test_cli_errors_exit_2_without_traceback(args, message):
    run = cli(*args)
    assert run.returncode == 2
    assert message in run.stderr
    assert "Traceback" not in run.stderr


def test_sweep_over_a_sentence_set_and_patch(tmp_path, tiny_folder):
    lines = tmp_path / "lines.txt"
    lines.write_text("the big cat sat on the red mat\na small dog ran to the park\nthe bird sang in a tree\n")
    run = cli("sweep", "--kind", "directional", "--text-file", str(lines), "--model", str(tiny_folder), "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    both = result["p_gold"]["both"]
    assert result["sinks"] == "symmetric" and both["n"] == 3 and both["ci_low"] <= both["mean"] <= both["ci_high"]
    assert set(result["p_gold"]) == {"both", "left-only", "right-only", "left-only-control", "right-only-control"}
    run = cli("patch", "the big cat [MASK] on the mat", "--source", "the big dog [MASK] on the mat", "--correct",
              "the", "--wrong", "mat", "--model", str(tiny_folder), "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(result["heads"]) == 2 and len(result["residual"]) == 2
    assert result["residual"][-1] == pytest.approx(result["source_logit_difference"] -
                                                   result["baseline_logit_difference"], abs=1e-4)


def test_compare_over_a_conllu_set_and_patch_pairs(tmp_path, tiny_folder):
    run = cli("compare", "--intervention", "left-only", "--conllu", str(ROOT / "assets" / "sample_treebank.conllu"),
              "--max-sentences", "8", "--model", str(tiny_folder))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["intervention"] == "left-only" and result["change in P(gold)"]["n"] == 8
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("the big cat [MASK] on the mat | the big dog [MASK] on the mat | the | mat\n"
                     "a red cat [MASK] here | a red dog [MASK] here | the | mat\n")
    run = cli("patch", "--pairs-file", str(pairs), "--model", str(tiny_folder))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["pairs"] == 2 and len(result["heads"]["mean"]) == 2 and len(result["residual"]["ci_low"]) == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("only | three | fields\n")
    run = cli("patch", "--pairs-file", str(bad), "--model", str(tiny_folder))
    assert run.returncode == 2 and "expected 4 fields" in run.stderr


def test_resample_ablation_over_a_set_draws_from_the_sample_treebank(tiny_folder, capsys):
    """No --resample-text: each sentence's ablation draws a long-enough sample-treebank sentence."""
    from bertviz_lab.cli import main

    code = main(["sweep", "--kind", "ablation", "--ablation", "resample", "--sample", "--max-sentences", "4",
                 "--model", str(tiny_folder), "--device", "cpu", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out.strip().splitlines()[-1])
    assert result["ablation"] == "resample" and result["drop_in_log_probability"]["n"] == 4


def test_analyze_json_carries_the_lens_and_the_query_key_vectors(tiny_folder, tiny_lab, capsys):
    from bertviz_lab.cli import main

    code = main(["analyze", "the cat sat on the [MASK] .", "--model", str(tiny_folder), "--device", "cpu",
                 "--lens", "--qk", "--json", "--top-k", "2"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out.strip().splitlines()[-1])
    [lens] = result["lens"]
    assert [row["layer"] for row in lens["layers"]] == list(range(1, tiny_lab.n_layers + 1))
    assert lens["layers"][-1]["tokens"] == [p["token"] for p in result["mlm"][0]["predictions"]]
    n = len(result["tokens"])
    assert np.array(result["queries"]).shape == np.array(result["keys"]).shape == (tiny_lab.n_layers, tiny_lab.n_heads,
                                                                                  n, tiny_lab.model.config.head_dim)


def test_analyze_explains_a_masked_prediction(tiny_folder, capsys):
    from bertviz_lab.cli import main

    code = main(["analyze", "the big cat [MASK] on the red mat", "--model", str(tiny_folder), "--device", "cpu",
                 "--explain", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    [attribution] = json.loads(out.out.strip().splitlines()[-1])["explain"]
    assert set(attribution["scores"]) == {"erasure", "gradient x input", "integrated gradients", "DecompX"}
    assert len(attribution["scores"]["erasure"]) == len(attribution["context"]) == 7
    assert "flow" in attribution["spearman_with_erasure"]
