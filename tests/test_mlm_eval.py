"""eval-mlm: the protocol, checked against transformers on a checkpoint the test built."""
import json
import random

import builders
import torch
from builders import run_cli

ROOT = builders.Path(__file__).resolve().parent.parent
LINES = ["the cat sat on the mat", "", "a big red dog ran to the park", "she read unbelievable books",
         ", . !", "it was a small blue bird", "they saw the house with a tree"]


def expected_scores(hf, lab, seed):
    rng = random.Random(seed)
    top1 = top5 = n = 0
    for line in LINES:
        if not line.strip():
            continue
        enc = lab.encode(line)
        toks = enc.tokens
        cands = [i for i, t in enumerate(toks) if t not in ("[CLS]", "[SEP]") and t.isalpha()
                 and not t.startswith("##") and not (i + 1 < len(toks) and toks[i + 1].startswith("##"))]
        if not cands:
            continue
        pos = rng.choice(cands)
        ids = torch.tensor([enc.ids])
        original = int(ids[0, pos])
        ids[0, pos] = lab.mask_id
        with torch.no_grad():
            best = torch.topk(hf(input_ids=ids).prediction_logits[0, pos], 5).indices.tolist()
        top1 += best[0] == original
        top5 += original in best
        n += 1
    return {"top1": top1 / n, "top5": top5 / n, "n": n}


def test_eval_mlm_cli_matches_transformers(tmp_path, tiny_folder, tiny_hf, tiny_lab):
    text = tmp_path / "lines.txt"
    text.write_text("\n".join(LINES) + "\n")
    for seed in (0, 1):
        run = run_cli("eval-mlm", "--text-file", str(text),
                              "--model", str(tiny_folder), "--seed", str(seed), "--json")
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout.strip().splitlines()[-1])
        want = expected_scores(tiny_hf, tiny_lab, seed)
        assert got["n"] == want["n"] == 5  # the empty line and the punctuation-only line are skipped
        assert abs(got["top1"] - want["top1"]) < 1e-9 and abs(got["top5"] - want["top5"]) < 1e-9
        assert got["top1_ci"][0] <= got["top1"] <= got["top1_ci"][1]
        assert got["function_words"]["n"] + got["content_words"]["n"] == got["n"]
        assert "single-WordPiece" in got["masking"]


def test_wilson_interval_by_hand():
    from bertviz_lab.mlm.evaluate import FUNCTION_WORDS, wilson_interval

    # 8 of 10: centre (0.8 + 1.96^2/20) / (1 + 1.96^2/10), the textbook [0.490, 0.943]
    low, high = wilson_interval(8, 10)
    assert round(low, 3) == 0.490 and round(high, 3) == 0.943
    assert wilson_interval(0, 0) == [0.0, 0.0]
    assert {"the", "of", "and", "was"} <= FUNCTION_WORDS and "cat" not in FUNCTION_WORDS


def test_eval_mlm_refuses_a_model_without_mlm_head(tmp_path):
    text = tmp_path / "lines.txt"
    text.write_text("the cat sat\n")
    run = run_cli("eval-mlm", "--text-file", str(text),
                          "--model", "minilm-original", "--json")
    assert run.returncode == 2 and "no MLM head" in run.stderr and "Traceback" not in run.stderr
