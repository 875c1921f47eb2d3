"""The faithfulness check: batched perturbations equal single runs, AOPC as defined, and a CLI."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bertviz_lab.interventions.faithfulness import RANKINGS, FaithfulnessResult, rankings, sentence_drops
from bertviz_lab.lab import ForwardChanges
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
    drops = sentence_drops(sharp_lab, enc, position, gold, k_max=3, seed=1)
    assert drops.shape == (len(RANKINGS), 4) and np.all(drops[:, 0] == 0)
    _, cache = sharp_lab.run(sharp_lab.batch_tensors([enc]),
                             capture=("*hook_pattern", "*attention.self.hook_v", "bert.embeddings.hook_out",
                                      "bert.encoder.layer.*.hook_out"), compute_mlm=False)
    scores = rankings(sharp_lab, cache, position, len(enc.ids), seed=1)
    context = [i for i, t in enumerate(enc.tokens) if t not in ("[CLS]", "[SEP]") and i != position]

    def logp(hidden):
        bias = torch.zeros((1, 1, 1, len(enc.ids)))
        bias[..., hidden] = torch.finfo(torch.float32).min
        a = sharp_lab.analyze_encoded(enc, changes=ForwardChanges(attention_bias=bias), keep_probabilities=True)
        return float(np.log(a.mlm_probabilities[0, gold]))

    base = logp([])
    for s, name in enumerate(RANKINGS):
        order = sorted(context, key=lambda i: -float(scores[name][i]))
        assert drops[s, 2] == pytest.approx(base - logp(order[:2]), abs=1e-4), name


def test_cli_ranks_sources_with_intervals(tmp_path, tiny_folder):
    text = tmp_path / "lines.txt"
    text.write_text("\n".join(LINES * 3) + "\n")
    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "faithfulness", "--text-file", str(text), "--model",
                          str(tiny_folder), "--k", "2", "--resamples", "50", "--json"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert [row["source"] for row in result["sources"]] == list(RANKINGS)
    for row in result["sources"]:
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
    assert tied.conclusion(resamples=200).startswith("no single most faithful source")
    clear = hand_result([s + 0.1 for s in swing], [s + 0.05 for s in swing], swing)
    assert clear.conclusion(resamples=200).startswith("flow is the most faithful")
    assert [(d.a, d.b) for d in clear.differences(resamples=50)][-1] == ("flow", "attention (last layer)")
