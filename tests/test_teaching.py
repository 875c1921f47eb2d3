"""The teaching set: scoring against a checkpoint the test built, and the shipped head's floor."""
import json
from pathlib import Path

import pytest
import torch
from builders import run_cli

from bertviz_lab.mlm.teaching import TEACHING_SET, ClozeItem, evaluate_teaching, read_teaching_set
from bertviz_lab.resources import DEFAULT_MLM_HEAD

ROOT = Path(__file__).resolve().parent.parent


def hf_top5(tiny_hf, tiny_lab, sentence: str) -> list[str]:
    enc = tiny_lab.encode(sentence)
    with torch.no_grad():
        logits = tiny_hf(input_ids=torch.tensor([enc.ids])).prediction_logits[0, enc.tokens.index("[MASK]")]
    return [tiny_lab.tokenizer.id_to_token(int(i)) for i in torch.topk(logits, 5).indices]


def test_hits_are_counted_on_transformers_top5(tiny_hf, tiny_lab):
    sentence = "the cat [MASK] on the mat"
    top = hf_top5(tiny_hf, tiny_lab, sentence)
    absent = next(w for w in ("dog", "cat", "park", "tree", "house", "bird") if w not in top)
    items = [ClozeItem("first", sentence, frozenset({top[0]})), ClozeItem("fifth", sentence, frozenset({top[4]})),
             ClozeItem("none", sentence, frozenset({absent}))]
    result = evaluate_teaching(tiny_lab, items)
    assert [r["top5"] for r in result["items"]] == [top] * 3
    assert [(r["top1_ok"], r["top5_ok"]) for r in result["items"]] == [(True, True), (False, True), (False, False)]
    assert (result["top1_hits"], result["top5_hits"], result["n"]) == (1, 2, 3)
    assert result["topics"]["fifth"]["top5_hits"] == 1 and result["topics"]["fifth"]["top1_hits"] == 0


def test_the_shipped_set_is_well_formed_and_bad_rows_are_refused(tmp_path):
    items = read_teaching_set()
    assert len(items) >= 40 and len({i.topic for i in items}) >= 6
    assert any("cabinet" in i.sentence for i in items) and any("bank" in i.sentence for i in items)
    bad = tmp_path / "bad.tsv"
    bad.write_text("topic\tsentence\tanswers\nx\tno mask here\tcat\n")
    with pytest.raises(ValueError, match="row 2"):
        read_teaching_set(bad)


@pytest.mark.skipif(not (DEFAULT_MLM_HEAD / "head.safetensors").is_file(), reason="no trained head shipped")
def test_the_shipped_head_does_not_regress_on_the_teaching_set():
    run = run_cli("eval-mlm", "--teaching", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["n"] == len(read_teaching_set(TEACHING_SET))
    recorded = json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())["teaching"]
    assert (result["top1_hits"], result["top5_hits"]) == (recorded["top1_hits"], recorded["top5_hits"])
    assert result["top1_hits"] >= SHIPPED_TOP1_HITS and result["top5_hits"] >= SHIPPED_TOP5_HITS
    bread = next(r for r in result["items"] if r["sentence"] == "I went to the [MASK] to buy some bread.")
    assert bread["top5_ok"]  # issue 14's example: the WordNet-only head said "table" (now "kitchen", then "store")
    france = next(r for r in result["items"] if r["sentence"] == "The capital of France is [MASK].")
    assert france["top5"][0] == "paris"  # issue 32's example: the head before it said "abolished"


SHIPPED_TOP1_HITS, SHIPPED_TOP5_HITS = 16, 34  # of 42: the head issue 32's rule chose (v3 had 18, 31;
# the rule chooses on development data only, so the teaching set is reported, not kept from falling)
