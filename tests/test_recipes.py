"""Experiment recipes (tasks/recipes.py, cli/recipe_of_args.py, cli/recipe_commands.py): every record carries the
recipe that made it, ``bertviz-lab run`` re-runs it to the same record, and whatever does not match (a setting
this version lacks, a changed file, other weights) is refused with one sentence."""
from __future__ import annotations

import json

import pytest

from bertviz_lab.cli import main
from bertviz_lab.lab import InputError
from bertviz_lab.tasks.recipes import Recipe, file_sha256, recipe_from

LINES = "the cat sat on the mat today\nthe dog ran to the red car fast\na bird flew over the big house\n"


def reply(capsys, argv: list[str]) -> dict:
    cut = argv.index("--") if "--" in argv else len(argv)  # --json before the positionals
    assert main([*argv[:cut], "--json", *argv[cut:]]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def refusal(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


def saved(tmp_path, recipe: dict, name: str = "recipe.json"):
    path = tmp_path / name
    path.write_text(json.dumps(recipe))
    return path


def test_a_record_carries_its_recipe_and_run_makes_the_same_record(tiny_lab, tmp_path, capsys):
    lines = tmp_path / "lines.txt"
    lines.write_text(LINES)
    first = reply(capsys, ["faithfulness", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--text-file",
                           str(lines), "--k", "2", "--resamples", "30", "--seed", "4"])
    recipe = first["recipe"]
    assert recipe["action"] == "faithfulness" and recipe["bertviz_lab_recipe"] == 1
    assert recipe["checkpoint"] == {"name": tiny_lab.checkpoint_id, "sha256": tiny_lab.checkpoint_info().sha256}
    assert recipe["inputs"] == {"text_file": {"path": str(lines), "sha256": file_sha256(lines)}}
    assert recipe["seeds"] == {"seed": 4} and recipe["settings"]["k"] == 2 and recipe["settings"]["resamples"] == 30
    assert recipe["engine"]["kind"] == "local"
    again = reply(capsys, ["run", str(saved(tmp_path, recipe))])
    assert again == first


def test_a_head_list_goes_back_as_typed_and_a_sentence_may_start_with_a_dash(tiny_lab, tmp_path, capsys):
    first = reply(capsys, ["compare", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--intervention",
                           "ablate-heads", "--heads", "1-2,2-3", "--", "- the cat [MASK] on the mat"])
    assert first["recipe"]["settings"]["heads"] == "1-2,2-3"  # 1-based, as typed (parsed, it is 0-based pairs)
    assert first["recipe"]["inputs"] == {"text": "- the cat [MASK] on the mat"}
    assert reply(capsys, ["run", str(saved(tmp_path, first["recipe"]))]) == first


def test_an_out_folder_holds_the_recipe(tiny_lab, tmp_path, capsys):
    from bertviz_lab.treebank import SAMPLE_TREEBANK

    record = reply(capsys, ["index", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--conllu",
                            str(SAMPLE_TREEBANK), "--max-sentences", "5", "--out", str(tmp_path / "index")])
    written = json.loads((tmp_path / "index" / "recipe.json").read_text())
    assert written == record["recipe"] and written["inputs"]["conllu"][0]["sha256"] == file_sha256(SAMPLE_TREEBANK)
    again = reply(capsys, ["run", str(tmp_path / "index" / "recipe.json"), "--out", str(tmp_path / "again")])
    assert {**again, "out": None} == {**record, "out": None}
    assert (tmp_path / "again" / "vectors.npy").read_bytes() == (tmp_path / "index" / "vectors.npy").read_bytes()


def test_what_does_not_match_is_refused_in_one_sentence(tiny_lab, tmp_path, capsys):
    lines = tmp_path / "lines.txt"
    lines.write_text(LINES)
    recipe = reply(capsys, ["faithfulness", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--text-file",
                            str(lines), "--k", "2", "--resamples", "10"])["recipe"]
    older = {**recipe, "settings": {**recipe["settings"], "top_n": 3}}
    assert "setting 'top_n' is not a setting of faithfulness" in refusal(capsys, ["run", str(saved(tmp_path, older))])
    other = {**recipe, "checkpoint": {**recipe["checkpoint"], "sha256": "0" * 64}}
    assert "these are other weights" in refusal(capsys, ["run", str(saved(tmp_path, other))])
    assert "not a command" in refusal(capsys, ["run", str(saved(tmp_path, {**recipe, "action": "train-gpt"}))])
    assert "no recipe of format 1 has" in refusal(capsys, ["run", str(saved(tmp_path, {**recipe, "extra": 1}))])
    assert "not a bertviz-lab recipe" in refusal(capsys, ["run", str(saved(tmp_path, {"action": "analyze"}))])
    (tmp_path / "broken.json").write_text("{not json")
    assert "is not JSON" in refusal(capsys, ["run", str(tmp_path / "broken.json")])
    lines.write_text(LINES + "one more line\n")
    assert "not the file it was made with" in refusal(capsys, ["run", str(saved(tmp_path, recipe))])
    assert "no such recipe file" in refusal(capsys, ["run", str(tmp_path / "missing.json")])


def test_run_takes_another_engine_and_says_when_an_action_has_none(tiny_lab, tmp_path, capsys):
    import argparse

    from bertviz_lab.cli.recipe_commands import recipe_command

    analyze = Recipe("analyze", {"name": tiny_lab.checkpoint_id, "sha256": None}, {"text": "the cat sat"})
    sweep = Recipe("sweep", {"name": tiny_lab.checkpoint_id, "sha256": None}, {"text_file": "x.txt"},
                   {"kind": "directional"}, {"seed": 3})
    from bertviz_lab.cli import build_parser

    overrides = argparse.Namespace(engine="ray", ray_address="auto", workers=4, out=None, device=None, json=False,
                                   parser=build_parser())
    (tmp_path / "x.txt").write_text(LINES)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        argv = recipe_command(argparse.Namespace(**{**vars(overrides), "recipe": saved(tmp_path, sweep.to_json())}))
        assert argv[0] == "sweep" and argv[argv.index("--engine") + 1] == "ray" and "auto" in argv
        assert argv[argv.index("--seed") + 1] == "3" and argv[argv.index("--workers") + 1] == "4"
        with pytest.raises(InputError, match="analyze runs on this machine only"):
            recipe_command(argparse.Namespace(**{**vars(overrides), "recipe": saved(tmp_path, analyze.to_json())}))


@pytest.mark.parametrize("data, words", [
    ([], "not a JSON object"), ({"bertviz_lab_recipe": 1, "action": "analyze"}, "names no checkpoint"),
    ({"bertviz_lab_recipe": 1, "action": "analyze", "checkpoint": {"name": "default"}, "settings": []},
     '"settings" must be a JSON object'),
    ({"bertviz_lab_recipe": 1, "action": "analyze", "checkpoint": {"name": "default"}, "engine": {"kind": "spark"}},
     "engine 'spark' is not one of local, ray"),
])
def test_a_malformed_recipe_is_named(data, words):
    with pytest.raises(InputError, match=words):
        recipe_from(data)
