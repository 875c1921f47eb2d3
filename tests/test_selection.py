"""The rule that picks the shipped head, fixed before the runs (mlm/selection.py), and select-head."""
import json
from pathlib import Path

from builders import nsp_settings, run_cli

from bertviz_lab.lab import load
from bertviz_lab.mlm.evaluate_nsp import evaluate_nsp
from bertviz_lab.mlm.selection import DEV_CLOZE, DevFigures, choose, validation_split
from bertviz_lab.mlm.teaching import TEACHING_SET, read_teaching_set
from bertviz_lab.mlm.train import train


def figures(name, steps, cloze, running, nsp, wordnet):
    return DevFigures(name, steps, cloze, running, nsp, wordnet)


def test_the_rule_picks_the_best_eligible_score_and_breaks_ties_by_fewer_steps():
    shipped = figures("shipped", 0, 0.50, 0.30, 0.80, 0.40)  # score 0.5333
    better = figures("step-2000", 2000, 0.60, 0.32, 0.82, 0.39)  # 0.58
    forgets = figures("step-3000", 3000, 0.70, 0.34, 0.84, 0.37)  # 0.6267, but WordNet 0.03 below the shipped head
    tie = figures("step-4000", 4000, 0.60, 0.325, 0.8155, 0.40)  # 0.5802: within 0.001 of step-2000
    winner, why = choose(shipped, [better, forgets, tie])
    assert winner is better
    assert "step-2000 has the highest development score, 0.580" in why and "not eligible" in why and "step-3000" in why
    worse = figures("step-1000", 1000, 0.40, 0.30, 0.80, 0.40)
    winner, why = choose(shipped, [worse])
    assert winner is shipped and why.startswith("no candidate beats the shipped head")


def test_the_development_cloze_set_is_its_own_and_big_enough():
    dev = read_teaching_set(DEV_CLOZE)
    teaching = {item.sentence for item in read_teaching_set(TEACHING_SET)}
    assert len(dev) >= 60 and not {item.sentence for item in dev} & teaching


def test_select_head_scores_every_validation_point_on_development_data(tmp_path, tiny_corpus, tiny_folder):
    out = tmp_path / "run"
    train(out, nsp_settings(tiny_corpus, tiny_folder), progress=False)  # 6 steps, a head kept every 3
    wordnet, documents = validation_split(tiny_corpus)
    assert wordnet and documents and not set(wordnet) & {s for d in documents for s in d}
    done = run_cli("select-head", "--json", "--corpus", str(tiny_corpus), "--chain", str(out), "--shipped",
                   str(out / "steps" / "step-3"), "--model", str(tiny_folder), "--device", "cpu")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert [c["steps"] for c in result["candidates"]] == [0, 3, 6]
    assert result["winner"] in {c["head"] for c in result["candidates"]}
    rebuilt = [figures(c["head"], c["steps"], c["cloze"], c["running_top1"], c["nsp"], c["wordnet_top1"])
               for c in result["candidates"]]
    assert choose(rebuilt[0], rebuilt[1:])[0].name == result["winner"]  # the printed figures give the printed choice
    lab = load(str(tiny_folder), device="cpu", mlm_head=out / "steps" / "step-3")
    assert result["candidates"][0]["nsp"] == round(evaluate_nsp(lab, documents, seed=0, progress=False)["accuracy"], 4)
    # the best candidate offered as the shipped head: it ties with itself, and the shipped head wins ties
    shipped = Path(max(result["candidates"][1:], key=lambda c: c["score"])["head"])
    kept = run_cli("select-head", "--json", "--corpus", str(tiny_corpus), "--chain", str(out), "--shipped", str(shipped),
                   "--model", str(tiny_folder), "--device", "cpu", "--publish", str(tmp_path / "published"))
    assert kept.returncode == 0, kept.stderr
    recorded = json.loads(kept.stdout.strip().splitlines()[-1])
    assert recorded["winner"] == recorded["candidates"][0]["head"] and not (tmp_path / "published").exists()
    card = (shipped / "MODEL_CARD.md").read_text()  # the kept head's card records the chain and the choice
    assert recorded["recorded_in"] == str(shipped / "MODEL_CARD.md")
    assert recorded["why"] in card and "no candidate beats the shipped head" in card and "| 1 | 0 -> 6 |" in card
    missing = run_cli("select-head", "--corpus", str(tiny_corpus), "--chain", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no head kept" in missing.stderr


def test_the_model_card_lists_the_chain_leg_by_leg_and_the_choice():
    from bertviz_lab.mlm.model_card import legs_text, selection_text
    from bertviz_lab.mlm.selection import RULE

    legs = [{"leg": 1, "from_step": 0, "to_step": 3100, "minutes": 80.2, "command": "python -m bertviz_lab train-mlm-head A"},
            {"leg": 2, "from_step": 3100, "to_step": 6000, "minutes": 75.0,
             "command": "python -m bertviz_lab train-mlm-head A --resume"}]
    candidates = [{"head": "assets/minilm-mlm", "steps": 0, "cloze": 0.5, "running_top1": 0.3, "nsp": 0.8,
                   "wordnet_top1": 0.4, "score": 0.5333}]
    text = legs_text({"legs": legs}) + selection_text({"selection": {"rule": RULE, "why": "because.",
                                                                      "candidates": candidates}})
    assert "| 2 | 3100 -> 6000 | 75.0 | `python -m bertviz_lab train-mlm-head A --resume` |" in text
    assert RULE in text and "| assets/minilm-mlm | 0 | 0.500 | 0.300 | 0.800 | 0.400 | 0.533 |" in text
    assert legs_text({"legs": legs[:1]}) == ""  # one leg and no choice: the commands above say it all


def test_a_kept_head_s_card_records_the_chain_once_however_often_the_rule_runs(tmp_path):
    from bertviz_lab.mlm.model_card import record_kept
    from bertviz_lab.mlm.selection import RULE

    (tmp_path / "MODEL_CARD.md").write_text("# A head\n\nIts figures.\n")
    legs = [{"leg": 1, "from_step": 0, "to_step": 1495, "minutes": 80.0, "command": "train A"},
            {"leg": 2, "from_step": 1495, "to_step": 3400, "minutes": 80.0, "command": "train A --resume"}]
    candidates = [{"head": "assets/minilm-mlm", "steps": 0, "cloze": 0.6, "running_top1": 0.3, "nsp": 0.84,
                   "wordnet_top1": 0.38, "score": 0.58},
                  {"head": "runs/c/steps/step-1000", "steps": 1000, "cloze": 0.5, "running_top1": 0.28, "nsp": 0.83,
                   "wordnet_top1": 0.37, "score": 0.5367}]
    selection = {"rule": RULE, "why": "no candidate beats it.", "candidates": candidates}
    record_kept(tmp_path, selection, legs)
    card = record_kept(tmp_path, {**selection, "why": "still none beats it."}, legs).read_text()
    assert card.startswith("# A head\n\nIts figures.\n") and card.count("kept over") == 1
    assert "still none beats it." in card and "no candidate beats it." not in card
    assert "| 2 | 1495 -> 3400 | 80.0 | `train A --resume` |" in card
    assert "| runs/c/steps/step-1000 | 1000 | 0.500 | 0.280 | 0.830 | 0.370 | 0.537 |" in card
