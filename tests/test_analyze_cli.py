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
    run = cli("patch", "the big cat [MASK] on the mat", "--donor", "the big dog [MASK] on the mat", "--correct",
              "the", "--wrong", "mat", "--model", str(tiny_folder), "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(result["heads"]) == 2 and len(result["residual"]) == 2
    assert result["residual"][-1] == pytest.approx(result["donor_logit_difference"] -
                                                   result["baseline_logit_difference"], abs=1e-4)


def test_compare_over_a_conllu_set_and_patch_pairs(tmp_path, tiny_folder):
    run = cli("compare", "--intervention", "left-only", "--conllu", str(ROOT / "assets" / "sample_treebank.conllu"),
              "--max-sentences", "8", "--model", str(tiny_folder), "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["intervention"] == "left-only" and result["change in P(gold)"]["n"] == 8
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("the big cat [MASK] on the mat | the big dog [MASK] on the mat | the | mat\n"
                     "a red cat [MASK] here | a red dog [MASK] here | the | mat\n")
    run = cli("patch", "--pairs-file", str(pairs), "--model", str(tiny_folder), "--json")
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
    assert set(attribution["scores"]) == {"erasure", "gradient x input", "integrated gradients", "decompx"}
    assert len(attribution["scores"]["erasure"]) == len(attribution["context"]) == 7
    assert "flow" in attribution["spearman_with_erasure"]


# ---- one output rule, one error rule, one default-checkpoint rule (issue 42) -----------------
TEXT = "the big cat [MASK] on the red mat"
FAMILIES = {
    "analyze": ("analyze", TEXT),
    "sweep": ("sweep", TEXT, "--kind", "directional"),
    "sweep ablation": ("sweep", TEXT, "--kind", "ablation"),
    "sweep positions": ("sweep", TEXT, "--kind", "positions", "--shift", "2"),
    "patch": ("patch", TEXT, "--donor", "the big dog [MASK] on the red mat", "--correct", "the", "--wrong", "mat"),
    "positions": ("positions", "--n", "8"),
    "compare": ("compare", TEXT, "--intervention", "left-only"),
    "compare --sample": ("compare", "--intervention", "left-only", "--sample", "--max-sentences", "4"),
    "qk-space": ("qk-space", TEXT, "--layer", "2", "--head", "3", "--similarity"),
}


def summary_value(name: str, record: dict) -> str:
    """A number the short summary must show, formatted from the JSON record of the same run."""
    if name == "analyze":
        best = record["mlm"][0]["predictions"][0]
        return f"position {record['mlm'][0]['position']} ([MASK]): {best['token']} {best['probability']:.3f}"
    if name == "sweep":
        return f"both {record['rows'][0]['both']:.4f}"
    if name == "sweep ablation":
        top = record["top_heads"][0]
        return f"{top['head']} {top['value']:+.4f}"
    if name == "sweep positions":
        return f"mean JS {record['rows'][0]['mean JS (nats)']:.4f} nats"
    if name == "patch":
        return f"target {record['baseline_logit_difference']:+.3f}, donor {record['donor_logit_difference']:+.3f}"
    if name == "positions":
        return f"learned {record['neighbour_similarity']['learned']:.3f}"
    if name == "compare":
        return f"mean JS divergence {record['mean_js_divergence']:.4f} nats"
    if name == "compare --sample":
        e = record["change in P(gold)"]
        return f"change in P(gold): {e['mean']:+.4f} [{e['ci_low']:+.4f}, {e['ci_high']:+.4f}] (n=4)"
    return f"head {record['layer']}-{record['head']}: {len(record['points']) // 2} queries and keys"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_json_means_one_json_object_and_its_absence_a_short_summary(name, tiny_folder, tiny_lab):
    argv = (*FAMILIES[name], "--model", str(tiny_folder), "--device", "cpu")
    data, plain = cli(*argv, "--json"), cli(*argv)
    assert data.returncode == plain.returncode == 0, data.stderr + plain.stderr
    [line] = data.stdout.splitlines()  # exactly one line: one JSON object
    record = json.loads(line)
    weights = tiny_lab.name if name == "analyze" else tiny_lab.checkpoint_info().describe()
    assert record["model"] == weights  # every output names the weights it came from
    assert not plain.stdout.lstrip().startswith(("{", "[")) and 1 <= len(plain.stdout.splitlines()) <= 20
    assert f"model: {weights}" in plain.stdout
    assert summary_value(name, record) in plain.stdout


def test_sweep_and_patch_records_hold_what_the_library_computes(tiny_folder, tiny_lab):
    from bertviz_lab.interventions.sweeps import ablation_sweep, patching_sweep

    record = json.loads(cli("sweep", TEXT, "--kind", "ablation", "--model", str(tiny_folder), "--json").stdout)
    drops = ablation_sweep(tiny_lab, TEXT).drops
    np.testing.assert_allclose(record["drop_in_log_probability"], drops, atol=1e-6)
    layer, head = np.unravel_index(int(np.argmax(drops)), drops.shape)
    assert record["top_heads"][0] == {"head": f"{layer + 1}-{head + 1}", "value": pytest.approx(float(drops.max()))}
    donor = "the big dog [MASK] on the red mat"
    record = json.loads(cli("patch", TEXT, "--donor", donor, "--correct", "the", "--wrong", "mat", "--model",
                            str(tiny_folder), "--json").stdout)
    expected = patching_sweep(tiny_lab, TEXT, donor, "the", "mat")
    assert record["donor_logit_difference"] == pytest.approx(expected.donor) and "source_logit_difference" not in record
    np.testing.assert_allclose(record["heads"], expected.heads, atol=1e-5)
    # --source names a kind of attention weight, never the donor input (issue 57): the old alias is gone
    refused = builders.run_cli("patch", TEXT, "--source", donor, "--correct", "the", "--wrong", "mat", "--model",
                               str(tiny_folder))
    assert refused.returncode == 2 and "--source" in refused.stderr


@pytest.mark.parametrize("argv, message", [
    (("analyze", "x", "--top-k", "0"), "argument --top-k: must be at least 1 (got 0)"),
    (("analyze", "x", "--no-such-flag"), "unrecognized arguments: --no-such-flag"),
    (("eval-nsp", "--text-file", "no/such/file.txt"), "no such file: no/such/file.txt"),
    (("qk-space", "a b", "--text-file", "lines.txt"), "give one sentence or --text-file (one of the two)"),
    (("patch", "a [MASK]", "--correct", "a"), "give TEXT --donor --correct --wrong, or --pairs-file"),
    (("structural-probe", "--treebank", "t.conllu", "--out", "o", "--train", "a.conllu", "--probes", "p"),
     "not both"),
    (("sweep", "--kind", "positions", "--sample"), "a sweep over a sentence set is directional or ablation"),
])
def test_every_user_error_is_one_sentence_on_stderr_with_exit_2(argv, message, tiny_folder, tmp_path):
    conllu = ROOT / "assets" / "sample_treebank.conllu"
    argv = [str(conllu) if a in ("t.conllu", "a.conllu") else a for a in argv]
    run = cli(*argv, "--model", str(tiny_folder))
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.strip().splitlines()[-1:]  # progress bars aside, the error is the last line, alone
    assert line.startswith("error: ") and message in line and "Traceback" not in run.stderr
    assert not [x for x in run.stderr.splitlines() if x.startswith("usage:")]


def test_the_module_command_refuses_in_one_sentence_without_a_traceback():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "analyze", "x", "--top-k", "0"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == "error: argument --top-k: must be at least 1 (got 0) (see bertviz-lab analyze --help)\n"


COMMAND_ARGS = {"analyze": ["x"], "compare": ["x", "--intervention", "left-only"], "sweep": ["x", "--kind", "directional"],
                "patch": [], "positions": [], "faithfulness": [], "eval-mlm": [], "eval-nsp": ["--text-file", "d"],
                "train-mlm-head": ["--out", "o"], "select-head": ["--chain", "c"], "score-heads": ["--out", "o"],
                "structural-probe": ["--treebank", "t", "--out", "o"], "qk-space": ["x"], "index": ["--out", "o"],
                "search": ["x", "--index", "i"], "perturbed-masking": [],
                "description-length": ["--train", "t", "--dev", "d"]}
NEEDS_THE_MLM_HEAD = {"analyze", "compare", "sweep", "patch", "faithfulness", "eval-mlm", "eval-nsp", "train-mlm-head",
                      "select-head"}


def test_one_rule_chooses_the_checkpoint_when_none_is_named():
    """The masked-word and next-sentence head: 'default'; attention for its own sake: the published
    weights. Every command says which in its --model help; a --model as typed always wins."""
    from bertviz_lab.cli import build_parser
    from bertviz_lab.cli.options import chosen_checkpoint
    from bertviz_lab.cli.scoring_commands import score_request

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert {name for name, p in commands.items() if any(a.dest == "model" for a in p._actions)} - {"probe"} == \
        set(COMMAND_ARGS)
    def chosen(*argv):  # score-heads takes --model repeatedly, each as typed
        args = parser.parse_args(list(argv))
        return score_request(args).models if args.command == "score-heads" else [chosen_checkpoint(args)]

    for name, argv in COMMAND_ARGS.items():
        expected = "default" if name in NEEDS_THE_MLM_HEAD else "minilm-original"
        assert chosen(name, *argv) == [expected], name
        assert chosen(name, *argv, "--model", "bert-base-uncased") == ["bert-base-uncased"]
        model_help = next(a.help for a in commands[name]._actions if a.dest == "model")
        shown = "the checkpoint the index was built with" if name == "search" else expected
        assert "Without --model" in model_help and f"(this command: {shown}" in model_help, name
    assert chosen_checkpoint(parser.parse_args(["search", "x", "--index", "i"]), recorded="folder") == "folder"


def test_without_model_the_published_weights_for_attention_and_default_for_predictions(default_lab, minilm_lab):
    qk = json.loads(cli("qk-space", "The cat sat.", "--device", "cpu", "--json").stdout)
    assert "minilm-original" in qk["model"] and minilm_lab.checkpoint_info().sha256[:12] in qk["model"]
    analysis = json.loads(cli("analyze", "The cat [MASK].", "--device", "cpu", "--json", "--no-attention").stdout)
    assert analysis["model"] == default_lab.name and analysis["mlm"]


def test_a_training_leg_records_the_command_main_was_given_not_sys_argv(tmp_path, tiny_folder, monkeypatch):
    import random
    import shlex

    words = "the cat sat on mat dog ran to park with a ball big red small blue house tree".split()
    rng = random.Random(0)
    (tmp_path / "train.txt").write_text("\n".join(" ".join(rng.choices(words, k=6)) for _ in range(60)) + "\n")
    monkeypatch.setattr("sys.argv", ["pytest", "-q", "some/other/test.py"])  # not what main was given
    argv = ["train-mlm-head", "--corpus", str(tmp_path), "--out", str(tmp_path / "out dir"), "--model",
            str(tiny_folder), "--device", "cpu", "--steps", "2", "--batch-size", "8", "--train-layers", "1",
            "--eval-every", "1", "--no-bf16", "--leg-minutes", "0"]
    first = cli(*argv, "--json")
    assert first.returncode == 0, first.stderr
    expected = "python -m bertviz_lab " + shlex.join([*argv, "--json"])
    leg = json.loads(first.stdout)
    assert leg["leg_ended"] and leg["next_leg"] == expected + " --resume" and leg["model"] == str(tiny_folder)
    assert shlex.split(leg["next_leg"])[3:] == [*argv, "--json", "--resume"]  # a folder with a space survives quoting
    done = cli(*argv, "--resume")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"trained a head for {tiny_folder}: 2 steps")
    legs = json.loads((tmp_path / "out dir" / "run.json").read_text())["legs"]
    resumed = "python -m bertviz_lab " + shlex.join([*argv, "--resume"])
    assert [leg["command"] for leg in legs] == [expected, resumed]


@pytest.mark.parametrize("source", ["rollout", "flow"])
def test_analyze_gives_rollout_and_flow_from_the_registry(source, tiny_folder, tiny_lab):
    record = json.loads(cli("analyze", "the cat sat on the mat", "--model", str(tiny_folder), "--source", source,
                            "--json").stdout)
    layers, n = tiny_lab.n_layers, len(record["tokens"])
    matrix = np.array(record["attention"])
    assert record["source"] == source and record["attention_shape"] == [layers, 1, n, n] == list(matrix.shape)
    np.testing.assert_allclose(matrix.sum(-1), 1, atol=1e-5)  # each query's row: a distribution over the input
    attention = tiny_lab.analyze("the cat sat on the mat").attention  # (layers, heads, n, n)
    first = 0.5 * attention[0].mean(0) + 0.5 * np.eye(n)  # Abnar & Zuidema: the residual as identity
    first /= first.sum(-1, keepdims=True)
    np.testing.assert_allclose(matrix[0, 0], first, atol=1e-5)  # one layer: rollout and flow both equal it
    if source == "rollout":
        second = 0.5 * attention[1].mean(0) + 0.5 * np.eye(n)
        np.testing.assert_allclose(matrix[1, 0], (second / second.sum(-1, keepdims=True)) @ first, atol=1e-5)


def test_structural_probe_without_flags_uses_the_shipped_probes_or_names_the_flags(tmp_path, tiny_folder):
    treebank = str(ROOT / "assets" / "sample_treebank.conllu")
    refused = cli("structural-probe", "--treebank", treebank, "--out", str(tmp_path / "x"), "--model", str(tiny_folder))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "ships structural probes only for minilm-original" in refused.stderr
    assert "--train CONLLU" in refused.stderr and "--probes FILE" in refused.stderr
    done = cli("structural-probe", "--treebank", treebank, "--out", str(tmp_path / "y"), "--device", "cpu",
               "--max-sentences", "24", "--resamples", "20", "--min-arcs", "5", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["probes"] == "shipped: d392e8007b5a.safetensors" and "minilm-original" in record["model"]
    assert record["sentences"]["evaluated"] == 24 and (tmp_path / "y" / "report.html").is_file()
