"""Many treebanks x many checkpoints as one resumable job, locally and on a local Ray instance
(identical counts), with the tidy table and the cross-treebank agreement view."""
import json

import numpy as np
import pandas as pd
import pytest

from bertviz_lab.cli import main
from bertviz_lab.resources import SAMPLE_TREEBANK
from bertviz_lab.syntax.job import TIDY_COLUMNS, agreement, language_of


def split_treebank(folder):
    """The sample treebank as two UD-named treebanks (the CoNLL-U blocks, halved)."""
    blocks = [b for b in SAMPLE_TREEBANK.read_text().split("\n\n") if b.strip()]
    folder.mkdir()
    (folder / "en_alpha-ud-dev.conllu").write_text("\n\n".join(blocks[:33]) + "\n\n")
    (folder / "de_beta-ud-dev.conllu").write_text("\n\n".join(blocks[33:]) + "\n\n")
    return folder


def run(capsys, *args):
    code = main(["score-heads", "--json", "--device", "cpu", "--resamples", "50", "--min-arcs", "5", "--no-null-model",
                 *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out.strip().splitlines()[-1]), out.err


def test_two_treebanks_two_checkpoints_one_tidy_table_and_resume(tmp_path, sharp_lab, tiny_lab, capsys, monkeypatch):
    treebanks = split_treebank(tmp_path / "ud")
    out = tmp_path / "job"
    models = ["--model", sharp_lab.checkpoint_id, "--model", tiny_lab.checkpoint_id]
    files, _ = run(capsys, "--conllu", str(treebanks), *models, "--out", str(out))
    assert files["pairs"] == 4
    assert files["treebank_parses"] == 2  # each treebank parsed once, checked before loading and scored twice
    tidy = pd.read_csv(out / "scores.csv")
    assert list(tidy.columns) == TIDY_COLUMNS
    assert set(tidy.language) == {"en", "de"} and tidy.model.nunique() == 2
    pairs = tidy.groupby(["model", "treebank"]).size()
    assert len(pairs) == 4  # both checkpoints have 2 x 4 heads: the same rows per treebank
    assert pairs.groupby(level="treebank").nunique().eq(1).all()
    # the tidy counts of a pair equal scoring that treebank alone
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.syntax.summary import Settings, summarise
    from bertviz_lab.treebank import read_conllu

    alone = summarise(score_treebank(sharp_lab, read_conllu(treebanks / "de_beta-ud-dev.conllu")),
                      settings=Settings(resamples=50, min_arcs=5)).head_scores
    mine = tidy[(tidy.model_hash == alone.model_sha256.iloc[0]) & (tidy.treebank == "de_beta-ud-dev.conllu")]
    merged = mine.merge(alone, on=["relation", "direction", "layer", "head"], suffixes=("", "_alone"))
    assert len(merged) == len(alone) and (merged.correct == merged.correct_alone).all()
    assert set(pd.read_csv(out / "agreement.csv").columns) >= {"relation", "head", "treebanks_won", "share"}
    assert "Does the same head win across treebanks?" in (out / "report.html").read_text()

    # resume: one pair lost (and a partial left by a killed run), the others are not scored again
    import shutil

    from bertviz_lab.syntax import job as job_module

    lost = job_module.pair_folder(out, tiny_lab.checkpoint_id, treebanks / "en_alpha-ud-dev.conllu")
    shutil.rmtree(lost)
    (lost.parent / f".{lost.name}.partial-dead").mkdir()
    calls = []
    original = job_module.score
    monkeypatch.setattr(job_module, "score", lambda *a, **k: calls.append(1) or original(*a, **k))
    _, err = run(capsys, "--conllu", str(treebanks), *models, "--out", str(out))
    assert len(calls) == 1 and err.count("done earlier, skipped") == 3
    again = pd.read_csv(out / "scores.csv")
    pd.testing.assert_frame_equal(again.sort_values(TIDY_COLUMNS[:8]).reset_index(drop=True),
                                  tidy.sort_values(TIDY_COLUMNS[:8]).reset_index(drop=True))


def test_agreement_counts_held_out_heads_by_direction_over_treebanks_with_enough_arcs():
    """Hand-counted, min_arcs 50. nsubj: treebanks a and b agree on held-out head 3-5 dep->head; c's
    held-out head is 3-5 too but head->dep, a different finding (its in-sample 2-1 is not used); d has
    only 10 nsubj arcs and does not count. So 3-5 dep->head wins 2 of 3. det is found in one treebank
    with enough arcs: its share is empty, not "1 of 1"."""
    best = pd.DataFrame({
        "model": ["m"] * 6, "relation": ["nsubj", "nsubj", "nsubj", "nsubj", "det", "det"],
        "treebank": ["a", "b", "c", "d", "a", "b"], "count": [80, 90, 70, 10, 60, 20],
        "best_head": ["1-1", "3-5", "2-1", "3-5", "1-1", "4-2"], "direction": ["dep->head"] * 6,
        "heldout_head": ["3-5", "3-5", "3-5", "3-5", "1-1", "4-2"],
        "heldout_direction": ["dep->head", "dep->head", "head->dep", "dep->head", "dep->head", "dep->head"]})
    table = agreement(best, min_arcs=50).set_index(["relation", "head", "direction"])
    row = table.loc[("nsubj", "3-5", "dep->head")]
    assert (row.treebanks_won, row.treebanks, row.share, row.chosen) == (2, 3, 2 / 3, "held-out")
    assert table.loc[("nsubj", "3-5", "head->dep")].treebanks_won == 1
    assert ("nsubj", "1-1", "dep->head") not in table.index  # in-sample heads are not what agrees
    det = table.loc[("det", "1-1", "dep->head")]
    assert det.treebanks == 1 and np.isnan(det.share)
    assert len(table) == 3


@pytest.mark.parametrize("name, code", [("en_ewt-ud-dev.conllu", "en"), ("de_gsd-ud-test.conllu", "de"),
                                        ("mytreebank.conllu", "und")])
def test_language_from_ud_file_names(tmp_path, name, code):
    assert language_of(tmp_path / name) == code


@pytest.mark.timeout(300)
def test_ray_engine_gives_the_local_counts_for_the_model_and_its_null_model(tmp_path, sharp_lab, capsys, monkeypatch):
    pytest.importorskip("ray")
    import ray

    from bertviz_lab.lab import null_model
    from bertviz_lab.syntax import job as job_module
    from bertviz_lab.syntax import ray_engine
    from bertviz_lab.syntax.ray_engine import QUIET, RayCluster, RayScoring, score_treebanks_ray
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.syntax.summary import Settings
    from bertviz_lab.treebank import read_conllu

    sentences = read_conllu(SAMPLE_TREEBANK)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = True  # the caller's setting: quiet during the job, restored after
    treebanks = split_treebank(tmp_path / "ud")
    local_runs, ray_jobs = [], []
    original, original_ray = job_module.score_treebank, ray_engine.score_treebanks_ray
    try:
        [(_, remote, remote_nulls)] = list(score_treebanks_ray(sharp_lab, [sentences], RayScoring(batch_size=8, null_seeds=(3, 4)),
                                                                RayCluster(workers=2)))
        # the whole scoring job over two treebanks, null model included: one Ray job (the workers
        # start once), and the driver runs no model
        monkeypatch.setattr(job_module, "score_treebank", lambda *a, **k: local_runs.append(1) or original(*a, **k))
        monkeypatch.setattr(ray_engine, "score_treebanks_ray", lambda *a, **k: ray_jobs.append(1) or original_ray(*a, **k))
        code = main(["score-heads", "--device", "cpu", "--resamples", "50", "--min-arcs", "5", "--conllu",
                     str(treebanks), "--model", sharp_lab.checkpoint_id, "--engine", "ray", "--null-seeds", "2",
                     "--out", str(tmp_path / "ray")])
    finally:
        monkeypatch.undo()
        ray.shutdown()
    assert code == 0 and local_runs == [] and ray_jobs == [1]
    assert context.enable_progress_bars is True and "enable_progress_bars" in QUIET
    assert capsys.readouterr().err.count("sentences scored") == 2
    local_job = job_module.Job([sharp_lab.checkpoint_id], sorted(treebanks.iterdir()), tmp_path / "local",
                               Settings(resamples=50, min_arcs=5, null_seeds=2))
    job_module.run_job(local_job, lambda _: sharp_lab, say=lambda _: None)
    assert pd.read_csv(tmp_path / "local" / "scores.csv").treebank.nunique() == 2
    for table in ("scores.csv", "best_heads.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "ray" / table), pd.read_csv(tmp_path / "local" / table))
    best = pd.read_csv(tmp_path / "local" / "best_heads.csv")  # one row per relation and measure
    assert best[best.measure == "null_model"].value.notna().any()

    assert len(remote_nulls) == 2
    for remote_scores, lab in ((remote, sharp_lab), (remote_nulls[0], null_model(sharp_lab, 3)),
                               (remote_nulls[1], null_model(sharp_lab, 4))):
        local = score_treebank(lab, sentences, batch_size=8)
        assert remote_scores.checkpoint == local.checkpoint
        assert remote_scores.sentences_used == local.sentences_used == len(sentences)
        assert remote_scores.arcs.relations == local.arcs.relations
        for key, hits in local.arcs.hits.items():
            np.testing.assert_array_equal(remote_scores.arcs.hits[key], hits, err_msg=key)
        np.testing.assert_array_equal(remote_scores.arcs.sentence, local.arcs.sentence)
        for key, total in local.stats_sum.items():
            np.testing.assert_allclose(remote_scores.stats_sum[key], total, rtol=1e-5)
    # each null model is another model: its counts differ from the checkpoint's and from the other seed's
    assert any(not np.array_equal(remote_nulls[0].arcs.hits[k], v) for k, v in remote.arcs.hits.items())
    assert any(not np.array_equal(remote_nulls[0].arcs.hits[k], v) for k, v in remote_nulls[1].arcs.hits.items())


def test_gpu_workers_never_outnumber_the_gpus_and_workers_load_the_driver_dtype(tiny_lab):
    """Ray Data waits for its whole actor pool: asking for more one-GPU workers than there are GPUs
    would hang, so the engine caps them (and refuses a cluster without GPUs)."""
    from types import SimpleNamespace

    from bertviz_lab.lab import InputError
    from bertviz_lab.syntax.ray_engine import gpu_workers, weights_dtype

    one_gpu = SimpleNamespace(cluster_resources=lambda: {"CPU": 8.0, "GPU": 1.0})
    with pytest.warns(UserWarning, match="using 1 worker"):
        assert gpu_workers(one_gpu, 2) == 1
    assert gpu_workers(SimpleNamespace(cluster_resources=lambda: {"GPU": 4.0}), 2) == 2
    with pytest.raises(InputError, match="needs GPUs"):
        gpu_workers(SimpleNamespace(cluster_resources=lambda: {"CPU": 2.0}), 2)
    assert weights_dtype(tiny_lab) is None
    import torch

    half = SimpleNamespace(model=torch.nn.Linear(2, 2).to(torch.bfloat16))
    assert weights_dtype(half) == "bfloat16"


def test_a_treebank_with_no_scorable_sentence_stops_the_job_with_a_reason(tmp_path, tiny_lab, capsys):
    treebanks = split_treebank(tmp_path / "ud")
    code = main(["score-heads", "--device", "cpu", "--no-null-model", "--max-length", "3", "--conllu", str(treebanks),
                 "--model", tiny_lab.checkpoint_id, "--out", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "de_beta-ud-dev.conllu: no sentence could be scored" in err and "longer than 3 tokens" in err
    assert "Traceback" not in err


def test_ray_engine_answers_for_unscorable_treebanks_without_starting_ray(tiny_lab):
    pytest.importorskip("ray")
    import ray

    from bertviz_lab.syntax.ray_engine import RayScoring, score_treebanks_ray
    from bertviz_lab.treebank import read_conllu

    sentences = read_conllu(SAMPLE_TREEBANK)
    [(index, scores, null)] = score_treebanks_ray(tiny_lab, [sentences], RayScoring(max_length=3, null_seeds=()))
    assert (index, scores.sentences_used, scores.sentences_skipped, null) == (0, 0, len(sentences), [])
    assert not ray.is_initialized()
