"""The faithfulness check: batched perturbations equal single runs, AOPC as defined, and a CLI."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import run_cli

from bertviz_lab.bert.sources.captured import MIXING_CAPTURES, Captured
from bertviz_lab.interventions.faithfulness import (
    ERASER_BINS,
    RANKINGS,
    FaithfulnessResult,
    FaithfulnessSettings,
    MaskedSentence,
    bin_size,
    check_rankings,
    faithfulness,
    rankings,
    sentence_scores,
)
from bertviz_lab.lab import ForwardChanges, InputError, Readout
from bertviz_lab.sentences import masked_items

ROOT = Path(__file__).resolve().parent.parent
LINES = ["the big cat sat on the red mat in the house", "a small dog ran to the park with a ball today"]


def test_aopc_is_the_mean_drop_over_k_including_zero():
    drops = np.zeros((1, len(RANKINGS), 3))
    drops[0, 0] = [0.0, 1.0, 2.0]
    result = FaithfulnessResult(RANKINGS, drops, "m")
    row = result.table(resamples=10)[0]
    assert row["aopc"] == pytest.approx(1.0) and row["ci_low"] == row["ci_high"] == pytest.approx(1.0)


def test_batched_perturbations_equal_one_hidden_set_at_a_time(sharp_lab):
    enc, position, gold = masked_items(sharp_lab, LINES, seed=0, max_sentences=1)[0]
    drops = sentence_scores(sharp_lab, MaskedSentence(enc, position, gold), k_max=3, seed=1).drops
    assert drops.shape == (len(RANKINGS), 4) and np.all(drops[:, 0] == 0)
    _, cache = sharp_lab.run(sharp_lab.batch_tensors([enc]), capture=MIXING_CAPTURES, compute_mlm=False)
    scores = rankings(Captured(sharp_lab.model, cache, 0, len(enc.ids)), position, seed=1)
    context = [i for i, t in enumerate(enc.tokens) if t not in ("[CLS]", "[SEP]") and i != position]

    def logp(hidden):
        bias = torch.zeros((1, 1, 1, len(enc.ids)))
        bias[..., hidden] = torch.finfo(torch.float32).min
        a = sharp_lab.analyze_encoded(enc, readout=Readout(keep_probabilities=True),
                                      changes=ForwardChanges(attention_bias=bias))
        return float(np.log(a.mlm_probabilities[0, gold]))

    base = logp([])
    for s, name in enumerate(RANKINGS):
        order = sorted(context, key=lambda i: -float(scores[name][i]))
        assert drops[s, 2] == pytest.approx(base - logp(order[:2]), abs=1e-4), name


def test_leaving_hidden_tokens_out_equals_hiding_them_where_positions_are_absolute(sharp_lab):
    """The shortened rows (hidden tokens left out, the rest at their own position ids) give what the
    full-length rows with the hiding bias give; hiding the read position is refused."""
    from bertviz_lab.interventions import hiding

    enc, position, _ = masked_items(sharp_lab, LINES, seed=0, max_sentences=1)[0]
    context = [i for i, t in enumerate(enc.tokens) if t not in ("[CLS]", "[SEP]") and i != position]
    sets = [()] + [[j] for j in context] + [context[:2], context[1:], context[3:7]]

    def read(out):
        return torch.log_softmax(out.mlm_logits.float(), -1)

    assert sharp_lab.model.config.absolute_positions_only
    left_out = hiding._left_out(sharp_lab, enc, sets, read, position)
    biased = hiding._biased(sharp_lab, enc, sets, read, position)
    assert left_out.shape == (len(sets), sharp_lab.model.config.vocab_size)
    assert (left_out - biased).abs().max() <= 1e-5 and (biased[1:] - biased[0]).abs().max() > 1e-4  # hiding moves it
    assert torch.equal(hiding.outputs_with_hidden(sharp_lab, enc, sets[1:], read, position), left_out)
    with pytest.raises(ValueError, match="cannot be hidden"):
        hiding.outputs_with_hidden(sharp_lab, enc, [[position]], read, position)
    with pytest.raises(ValueError, match="position 0 is read"):  # a classifier reads the first token
        hiding.outputs_with_hidden(sharp_lab, enc, [[0, 1]], lambda out: out.last_hidden_state[:, 0], None)
    with pytest.raises(ValueError, match="outside the input"):
        hiding.outputs_with_hidden(sharp_lab, enc, [[len(enc.ids)]], read, position)


def test_cli_ranks_sources_with_intervals(tmp_path, tiny_folder):
    text = tmp_path / "lines.txt"
    text.write_text("\n".join(LINES * 3) + "\n")
    run = run_cli("faithfulness", "--text-file", str(text), "--model",
                          str(tiny_folder), "--k", "2", "--resamples", "50", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert [row["ranking"] for row in result["rankings"]] == list(RANKINGS)
    for row in result["rankings"]:
        assert row["n"] == 6 and row["ci_low"] <= row["aopc"] <= row["ci_high"] and len(row["drop_by_k"]) == 3
    assert {"differences", "conclusion", "truncated_lines"} <= set(result)
    assert all(d["verdict"] for d in result["differences"]) and result["truncated_lines"] == 0


def hand_result(flow: list[float], attention: list[float], random: list[float]) -> FaithfulnessResult:
    """AOPC per sentence given directly (K = 0: the drop itself) for three sources; the rest NaN."""
    drops = np.full((len(flow), len(RANKINGS), 1), np.nan)
    for name, values in (("flow", flow), ("attention (last layer)", attention), ("random", random)):
        drops[:, RANKINGS.index(name), 0] = values
    return FaithfulnessResult(RANKINGS, drops, "m")


def test_differences_are_paired_over_sentences():
    """Hand-counted: flow beats random by exactly 0.1 on every sentence while both swing by 1.0 from
    sentence to sentence. Paired, flow - random is 0.1 with a zero-width interval (a clear win); the
    unpaired intervals of the two means overlap almost entirely."""
    swing = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    result = hand_result([s + 0.1 for s in swing], [s + 0.1 for s in swing], swing)
    flow = result.paired("flow", "random", resamples=200)
    assert float(flow.effect.mean) == pytest.approx(0.1)
    assert float(flow.effect.ci_low) == pytest.approx(0.1) and "is above random" in flow.verdict()


def test_most_faithful_is_said_only_when_every_paired_interval_excludes_zero():
    """Flow equals attention on every sentence: the top source (either) is not above the other, so the
    tool says there is no single most faithful source; with attention 0.05 lower everywhere it says flow."""
    swing = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    tied = hand_result([s + 0.1 for s in swing], [s + 0.1 for s in swing], swing)
    assert tied.conclusion(resamples=200).startswith("no single most faithful ranking")
    clear = hand_result([s + 0.1 for s in swing], [s + 0.05 for s in swing], swing)
    assert clear.conclusion(resamples=200).startswith("flow is the most faithful")
    assert [(d.a, d.b) for d in clear.differences(resamples=50)][-1] == ("flow", "attention (last layer)")


def test_eraser_bins_by_hand():
    """ceil(b x context): of 30 context tokens the bins take 1, 2, 3, 6 and 15 tokens, of 7 tokens 1, 1,
    1, 2 and 4; truncating (int) would take 0, 1, 3, 6, 15 and 0, 0, 0, 1, 3 (empty bins)."""
    assert [bin_size(b, 30) for b in ERASER_BINS] == [1, 2, 3, 6, 15]
    assert [bin_size(b, 7) for b in ERASER_BINS] == [1, 1, 1, 2, 4]
    assert [int(b * 7) for b in ERASER_BINS] == [0, 0, 0, 1, 3]


def test_comprehensiveness_and_sufficiency_equal_single_runs_for_the_top_word(sharp_lab):
    """ERASER's scores are about the model's own top word in probability units: each bin's value is
    p(top | x) minus p(top | x with the bin hidden) or with every other context token hidden."""
    enc, position, gold = masked_items(sharp_lab, LINES, seed=0, max_sentences=1)[0]
    scored = sentence_scores(sharp_lab, MaskedSentence(enc, position, gold), k_max=3, seed=1, names=("rollout", "random"))
    assert scored.comprehensiveness.shape == scored.sufficiency.shape == (2, len(ERASER_BINS))
    _, cache = sharp_lab.run(sharp_lab.batch_tensors([enc]), capture=MIXING_CAPTURES, compute_mlm=False)
    scores = rankings(Captured(sharp_lab.model, cache, 0, len(enc.ids)), position, seed=1, names=("rollout",))
    context = [i for i, t in enumerate(enc.tokens) if t not in ("[CLS]", "[SEP]") and i != position]
    order = sorted(context, key=lambda i: -float(scores["rollout"][i]))

    def probabilities(hidden):
        bias = torch.zeros((1, 1, 1, len(enc.ids)))
        bias[..., hidden] = torch.finfo(torch.float32).min
        return sharp_lab.analyze_encoded(enc, readout=Readout(keep_probabilities=True),
                                         changes=ForwardChanges(attention_bias=bias)).mlm_probabilities[0]

    full = probabilities([])
    top = int(np.argmax(full))
    for b, fraction in enumerate(ERASER_BINS):
        c = bin_size(fraction, len(context))
        assert scored.comprehensiveness[0, b] == pytest.approx(full[top] - probabilities(order[:c])[top], abs=1e-5)
        assert scored.sufficiency[0, b] == pytest.approx(full[top] - probabilities(order[c:])[top], abs=1e-5)


def test_the_table_reports_eraser_means_over_bins_and_sentences():
    drops = np.zeros((2, 2, 2))
    comprehensiveness = np.array([[[0.1, 0.3], [0.0, 0.0]], [[0.3, 0.5], [0.0, 0.2]]])  # (sentences, sources, bins)
    result = FaithfulnessResult(("rollout", "random"), drops, "m", 0, comprehensiveness, -comprehensiveness)
    rows = {r["ranking"]: r for r in result.table(resamples=20)}
    assert rows["rollout"]["comprehensiveness"] == pytest.approx(0.3)  # (0.2 + 0.4) / 2
    assert rows["random"]["sufficiency"] == pytest.approx(-0.05)
    assert rows["rollout"]["comprehensiveness_ci_low"] <= 0.3 <= rows["rollout"]["comprehensiveness_ci_high"]


def test_rankings_are_spelled_from_the_source_registry():
    """Every ranking names a registered source (alone, or with the scope it is read at), so the page,
    the CLI and the tables spell each method one way."""
    from bertviz_lab.attention.sources import SOURCES

    for name in RANKINGS:
        assert name == "random" or name.split(" (")[0] in SOURCES, name
    assert "decompx" in RANKINGS and "value-zeroing (rollout)" in RANKINGS and "GlobEnc" not in RANKINGS


def test_rankings_go_by_their_names_and_settings_are_one_typed_value(sharp_lab):
    """Rankings go by the registry's names; the settings travel as one FaithfulnessSettings (the spellings and
    keywords before issue 42 are gone with their release)."""
    assert check_rankings(["alti", "globenc", "value-zeroing (rollout)"]) == (
        "value-zeroing (rollout)", "globenc", "alti", "random")
    with pytest.raises(InputError, match="unknown ranking 'ALTI'"):
        check_rankings(["ALTI"])
    with pytest.raises(TypeError):
        faithfulness(sharp_lab, LINES, max_sentences=1, k_max=2, sources=["rollout"])
    result = faithfulness(sharp_lab, LINES, FaithfulnessSettings(k_max=2, max_sentences=1, rankings=("rollout",)))
    assert result.rankings == ("rollout", "random") and result.drops.shape == (1, 2, 3)


def test_the_task_names_its_lines_and_gives_the_command_lines_record(sharp_lab, tmp_path):
    from bertviz_lab.tasks.faithfulness_check import SHIPPED_LINES, FaithfulnessRequest, faithfulness_check

    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(LINES))
    settings = FaithfulnessSettings(k_max=2, max_sentences=2, rankings=("rollout",))
    record = faithfulness_check(FaithfulnessRequest(str(lines), settings, resamples=50), sharp_lab).to_json()
    direct = faithfulness(sharp_lab, LINES, settings).to_json(resamples=50)
    assert record["text_file"] == str(lines) and record["k"] == 2
    assert record["rankings"] == direct["rankings"] and record["conclusion"] == direct["conclusion"]
    assert FaithfulnessRequest().lines() and str(SHIPPED_LINES).endswith("heldout.txt")


def test_chosen_rankings_keep_the_control_and_refuse_unknown_names():
    assert check_rankings(["alti", "rollout"]) == ("rollout", "alti", "random")
    from bertviz_lab.lab import InputError

    with pytest.raises(InputError, match="unknown ranking 'attention'"):
        check_rankings(["attention"])


def test_cli_scores_only_the_chosen_sources_with_eraser_columns(tmp_path, tiny_folder, capsys):
    from bertviz_lab.cli import main

    text = tmp_path / "lines.txt"
    text.write_text("\n".join(LINES) + "\n")
    assert main(["faithfulness", "--text-file", str(text), "--model", str(tiny_folder), "--k", "2", "--resamples",
                 "20", "--rankings", "alti", "globenc", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [row["ranking"] for row in result["rankings"]] == ["globenc", "alti", "random"]
    for row in result["rankings"]:
        assert row["comprehensiveness_ci_low"] <= row["comprehensiveness"] <= row["comprehensiveness_ci_high"]
        assert row["sufficiency_ci_low"] <= row["sufficiency"] <= row["sufficiency_ci_high"]
