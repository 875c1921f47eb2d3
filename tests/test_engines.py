"""The corpus engine (bertviz_lab/engines.py): every corpus command gives the same records on Ray as here.

Each Ray test runs the command's CLI twice, ``--engine local`` and ``--engine ray`` with two workers on a
Ray instance this module starts once, and compares the JSON whole: same records, same order, same
intervals (computed once on the gathered records)."""
from __future__ import annotations

import json

import pytest
import test_naopc

from bertviz_lab.cli import main
from bertviz_lab.engines import LOCAL, Engine, UnitTimes, run_units, worker_checkpoint
from bertviz_lab.lab import InputError, null_model


def doubled(lab, unit):
    return (lab.n_layers, unit * 2)


def test_local_units_run_in_order_and_report_progress(tiny_lab):
    seen = []
    out = run_units(tiny_lab, doubled, [3, 1, 2], LOCAL, progress=lambda done, total: seen.append((done, total)))
    assert out == [(tiny_lab.n_layers, 6), (tiny_lab.n_layers, 2), (tiny_lab.n_layers, 4)]
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_a_projection_gives_each_unit_to_the_worker_that_frees_first():
    # longest first: 5 -> w1, 4 -> w2, 3 -> w2 (4 < 5) = 7, 2 -> w1 = 7, 1 -> either = 8
    assert UnitTimes([1, 2, 3, 4, 5]).projected(2) == 8
    assert UnitTimes([1, 2, 3, 4, 5]).projected(1) == 15
    assert UnitTimes([1, 2, 3, 4, 5]).projected(5) == 5


def test_engines_refuse_what_they_cannot_run(tiny_lab):
    with pytest.raises(InputError, match="unknown engine 'spark'"):
        Engine("spark")
    with pytest.raises(InputError, match="at least one worker"):
        Engine("ray", workers=0)
    null = null_model(tiny_lab, 7)
    loaded = worker_checkpoint(null, base=tiny_lab)
    assert (loaded.checkpoint, loaded.null_seed) == (tiny_lab.checkpoint_id, 7)
    assert worker_checkpoint(null).null_seed == 7  # the null model remembers its checkpoint
    rebuilt = loaded.load()
    assert rebuilt.checkpoint_info().sha256 == null.checkpoint_info().sha256


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _system_config={"worker_niceness": 0})
    yield ray
    ray.shutdown()


def both_engines(capsys, argv: list[str]) -> tuple[dict, dict]:
    """The command's JSON on the local engine and on Ray with two workers."""
    replies = []
    for engine in ("local", "ray"):
        command = [a.replace("{engine}", engine) for a in argv]  # an --out folder of each engine's own
        assert main([*command, "--json", "--engine", engine, "--workers", "2"]) == 0
        # the record is the JSON line; Ray may print a notice of its own (an actor of an earlier job stopped)
        out = capsys.readouterr().out
        replies.append(json.loads(next(line for line in reversed(out.splitlines()) if line.startswith("{"))))
    local, remote = (reply.pop("recipe") for reply in replies)
    assert (local["engine"]["kind"], remote["engine"]["kind"]) == ("local", "ray")  # the recipe names its engine
    assert {**local, "engine": None} == {**remote, "engine": None}
    return replies[0], replies[1]


@pytest.mark.timeout(600)
def test_faithfulness_on_ray_equals_local(ray_instance, tiny_lab, tmp_path, capsys):
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat sat on the mat today\nthe dog ran to the red car fast\n"
                     "a bird sang in the old tall tree\nwe walked home along the river\n")
    local, remote = both_engines(capsys, ["faithfulness", "--model", tiny_lab.checkpoint_id, "--device", "cpu",
                                          "--text-file", str(lines), "--k", "2", "--resamples", "50"])
    assert local == remote
    assert len(local["rankings"]) > 2 and all(row["n"] == 4 for row in local["rankings"])


SET_LINES = ("the cat sat on the mat today\nthe dog ran to the red car fast\n"
             "a bird sang in the old tall tree\nwe walked home along the river\nthe sun is warm in june\n")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("argv", [
    ["sweep", "--kind", "directional"],
    ["sweep", "--kind", "ablation", "--ablation", "resample", "--reference-file", "{lines}"],
    ["compare", "--intervention", "shuffle-words", "--seed", "3"],
], ids=["directional", "resample-ablation", "shuffle"])
def test_sentence_set_sweeps_and_comparisons_on_ray_equal_local(ray_instance, tiny_lab, tmp_path, capsys, argv):
    lines = tmp_path / "lines.txt"
    lines.write_text(SET_LINES)
    argv = [a.replace("{lines}", str(lines)) for a in argv]
    local, remote = both_engines(capsys, [*argv, "--model", tiny_lab.checkpoint_id, "--device", "cpu",
                                          "--text-file", str(lines)])
    assert local == remote
    assert "model" in local and local != {}


@pytest.mark.timeout(600)
def test_patching_over_a_pairs_file_on_ray_equals_local(ray_instance, tiny_lab, tmp_path, capsys):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("the cat [MASK] on the mat | the dog [MASK] on the mat | is | was\n"
                     "the dog [MASK] big | a house [MASK] small | is | was\n"
                     "a bird [MASK] red | the tree [MASK] blue | is | was\n")
    local, remote = both_engines(capsys, ["patch", "--model", tiny_lab.checkpoint_id, "--device", "cpu",
                                          "--pairs-file", str(pairs)])
    assert local == remote and local["pairs"] == 3


@pytest.mark.timeout(600)
def test_an_index_built_on_ray_equals_the_local_one(ray_instance, tiny_lab, tmp_path, capsys):
    import numpy as np

    from bertviz_lab.treebank import SAMPLE_TREEBANK

    local, remote = ({**reply, "out": None} for reply in both_engines(capsys, [
        "index", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--conllu", str(SAMPLE_TREEBANK),
        "--kind", "contexts", "--out", str(tmp_path / "{engine}")]))
    assert local == remote and local["sentences"] > 20
    np.testing.assert_array_equal(np.load(tmp_path / "local" / "vectors.npy"), np.load(tmp_path / "ray" / "vectors.npy"))
    assert (tmp_path / "local" / "index.json").read_text() == (tmp_path / "ray" / "index.json").read_text()


@pytest.mark.timeout(600)
def test_eval_mlm_and_qk_space_over_sets_on_ray_equal_local(ray_instance, tiny_lab, tmp_path, capsys):
    lines = tmp_path / "lines.txt"
    lines.write_text(SET_LINES * 30)  # 150 sentences: several batches of 64
    common = ["--model", tiny_lab.checkpoint_id, "--device", "cpu", "--text-file", str(lines)]
    local, remote = both_engines(capsys, ["eval-mlm", *common, "--max-sentences", "150"])
    assert local == remote and local["n"] == 150
    local, remote = both_engines(capsys, ["qk-space", *common, "--layer", "2", "--head", "3", "--similarity"])
    assert local == remote and len(local["points"]) > 100


@pytest.mark.timeout(600)
def test_structural_probe_features_on_ray_equal_local(ray_instance, tiny_lab, tmp_path, capsys):
    import pandas as pd

    from bertviz_lab.treebank import SAMPLE_TREEBANK

    local, remote = both_engines(capsys, [
        "structural-probe", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--train", str(SAMPLE_TREEBANK),
        "--treebank", str(SAMPLE_TREEBANK), "--epochs", "2", "--resamples", "20", "--min-arcs", "5",
        "--out", str(tmp_path / "{engine}")])
    drop = ("out", "seconds", "files")
    assert {k: v for k, v in local.items() if k not in drop} == {k: v for k, v in remote.items() if k not in drop}
    tables = [pd.read_csv(tmp_path / engine / "probe_scores.csv").drop(columns="train_seconds")
              for engine in ("local", "ray")]
    pd.testing.assert_frame_equal(*tables, check_exact=True)
    assert len(tables[0]) > 10


classifier = test_naopc.random_classifier  # a fixture: a 2-layer classifier saved as a folder


@pytest.mark.timeout(600)
def test_the_naopc_protocol_on_ray_equals_local(ray_instance, classifier, tmp_path, capsys):
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat sat\nthe dog ran to the park\na bird flew over the house\nshe saw it\n")
    local, remote = both_engines(capsys, ["faithfulness", "--protocol", "naopc-sst2", "--model", str(classifier),
                                          "--device", "cpu", "--text-file", str(lines), "--resamples", "50"])
    assert local == remote and local["rankings"][0]["n"] == 4


@pytest.mark.timeout(600)
def test_perturbed_masking_on_ray_equals_local(ray_instance, tiny_lab, capsys):
    local, remote = both_engines(capsys, ["perturbed-masking", "--model", tiny_lab.checkpoint_id, "--device", "cpu",
                                          "--max-sentences", "6", "--resamples", "50"])
    assert local == remote and local["uas"]["sentences"] == 6


@pytest.mark.timeout(600)
def test_description_length_on_ray_equals_local(ray_instance, tiny_lab, capsys):
    from bertviz_lab.treebank import SAMPLE_TREEBANK

    local, remote = both_engines(capsys, ["description-length", "--model", tiny_lab.checkpoint_id, "--device", "cpu",
                                          "--train", str(SAMPLE_TREEBANK), "--dev", str(SAMPLE_TREEBANK),
                                          "--layers", "1", "2"])
    assert local == remote and set(local["codelength"]) == {"relations", "control", "random weights"}
