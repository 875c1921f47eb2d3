"""The embedded default ships with bertviz-lab's trained MLM head."""
import json
from pathlib import Path

import pytest
from builders import run_cli
from safetensors import safe_open

from bertviz_lab import load
from bertviz_lab.resources import DEFAULT_MLM_HEAD

ROOT = Path(__file__).resolve().parent.parent
HEAD = DEFAULT_MLM_HEAD / "head.safetensors"

pytestmark = pytest.mark.skipif(not HEAD.is_file(), reason="no trained head in assets/minilm-mlm")


def test_asset_is_small_and_float16():
    size = sum(f.stat().st_size for f in DEFAULT_MLM_HEAD.iterdir())
    assert size <= 25 * 2**20
    with safe_open(str(HEAD), "pt") as f:
        keys = list(f.keys())
        assert {str(f.get_tensor(k).dtype) for k in keys} == {"torch.float16"}
    assert "cls.predictions.bias" in keys and "cls.predictions.transform.dense.weight" in keys
    # the next-sentence head and the pooler it reads ship too
    assert {"cls.seq_relationship.weight", "bert.pooler.dense.weight"} <= set(keys)


def test_asset_ships_its_card_licences_and_held_out_slices():
    assert (DEFAULT_MLM_HEAD / "MODEL_CARD.md").is_file() and (DEFAULT_MLM_HEAD / "run.json").is_file()
    assert (DEFAULT_MLM_HEAD / "LICENSE-WordNet").is_file()
    corpus = json.loads((DEFAULT_MLM_HEAD / "corpus.json").read_text())
    for source in corpus["sources"]:
        assert (DEFAULT_MLM_HEAD / source["heldout_file"]).is_file(), source["name"]
        assert source["name"] == "wordnet" or (DEFAULT_MLM_HEAD / f"LICENSE-{source['name']}.txt").is_file()


def test_default_predicts_masked_words_and_says_which_weights(default_lab):
    assert default_lab.model.has_mlm_head
    assert "fine-tuned" in default_lab.name
    result = default_lab.analyze("The [MASK] barked at the mailman all night.", top_k=10)
    assert result.mlm_note is None and len(result.mlm) == 1
    assert "dog" in [p.token for p in result.mlm[0].predictions]


def test_only_the_fine_tuned_layers_differ_from_the_published_weights(default_lab):
    original = load("minilm-original", device="cpu")
    assert not original.model.has_mlm_head and "fine-tuned" not in original.name
    # the bottom layers are the published weights exactly; the fine-tuned ones differ
    layers = json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())["fine_tuned_layers"]
    text = "The quick brown fox jumps over the lazy dog."
    a, b = default_lab.analyze(text).attention, original.analyze(text).attention
    for layer in range(6):
        if layer in layers:
            assert abs(a[layer] - b[layer]).max() > 1e-3
        else:
            assert abs(a[layer] - b[layer]).max() < 1e-6


def test_cli_analyze_on_the_default():
    run = run_cli("analyze", "Paris is the [MASK] of France.", "--json",
                          "--no-attention")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["mlm"][0]["position"] == 4 and len(data["mlm"][0]["predictions"]) == 5


def test_cli_eval_mlm_on_the_default(tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("the dog barked at the cat\nshe drank a cup of hot tea\n\nhe opened the door slowly\n")
    run = run_cli("eval-mlm", "--text-file", str(lines), "--json")
    assert run.returncode == 0, run.stderr
    scores = json.loads(run.stdout.strip().splitlines()[-1])
    assert scores["n"] == 3 and 0 <= scores["top1"] <= scores["top5"] <= 1


def test_default_tells_a_follow_up_from_a_random_sentence(default_lab):
    """BERT's own NSP example pair (Devlin et al. 2019, sec. 3.1) and its NotNext partner."""
    assert default_lab.model.has_nsp_head
    follows = default_lab.analyze("The man went to the store.", pair="He bought a gallon of milk.").nsp
    random = default_lab.analyze("The man went to the store.", pair="Penguins are flightless birds.").nsp
    assert follows > 0.5 > random
    assert default_lab.analyze("The man went to the store.").nsp is None  # one sentence: no NSP


def test_shipped_held_out_results_reproduce():
    """The model card's numbers come from the shipped float16 weights: re-measure one slice exactly."""
    recorded = json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())["heldout"]
    run = run_cli("eval-mlm", "--text-file",
                          str(DEFAULT_MLM_HEAD / "heldout-lines.txt"), "--json")
    assert run.returncode == 0, run.stderr
    scores = json.loads(run.stdout.strip().splitlines()[-1])
    lines = recorded["mlm"]["lines"]
    assert (scores["top1"], scores["top5"], scores["n"]) == (lines["top1"], lines["top5"], lines["n"])
    assert recorded["natural_english"]["top1"] >= 0.25 and recorded["natural_english"]["top5"] >= 0.40
    assert recorded["mlm"]["wordnet"]["top1"] >= 0.35
    run = run_cli("eval-nsp", "--text-file",  # GUM: 19 held-out documents (LinES holds out one)
                          str(DEFAULT_MLM_HEAD / "heldout-gum.txt"), "--json")
    assert run.returncode == 0, run.stderr
    nsp = json.loads(run.stdout.strip().splitlines()[-1])
    assert nsp["n"] > 250 and nsp["accuracy"] > 0.7 and nsp["ci"][0] < nsp["accuracy"] < nsp["ci"][1]


def test_a_head_from_another_folder_is_named_by_that_folder(tmp_path, default_lab):
    """Every output names the weights it came from: a head trained elsewhere is not the shipped one."""
    assert default_lab.name.endswith("(assets/minilm-mlm)")
    other = tmp_path / "my-head"
    other.mkdir()
    (other / "head.safetensors").write_bytes(HEAD.read_bytes())
    lab = load("default", device="cpu", mlm_head=other)
    assert lab.name.endswith(f"({other})") and "assets/minilm-mlm" not in lab.name
