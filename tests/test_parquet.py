"""Large tables as Parquet beside their CSV (per-head scores, per-sentence per-head records, an index's tokens):
pandas reads them back as they are, and they hold what the CSV holds."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bertviz_lab.syntax.scoring import ArcTable
from bertviz_lab.syntax.summary import sentence_head_records

pytest.importorskip("pyarrow")


def test_per_sentence_records_count_each_sentences_words_per_relation_and_head():
    # 2 sentences, 1 layer x 2 heads; sentence 0 has two nsubj words and one obj, sentence 1 one nsubj
    hits = np.array([[[1, 0]], [[1, 1]], [[0, 1]], [[0, 0]]], dtype=bool)  # (arcs, layers, heads)
    arcs = ArcTable(1, 2, np.array([0, 0, 0, 1]), np.array([0, 0, 1, 0]), ["nsubj", "obj"],
                    np.zeros(4, bool), {"dep->head": hits, "head->dep": ~hits}, np.zeros((4, 1), bool),
                    np.zeros(4, bool))
    frame = sentence_head_records(arcs)
    dep = frame[frame.direction == "dep->head"].set_index(["sentence", "relation", "head"])
    assert dep.loc[(0, "nsubj", 1), ["correct", "total"]].tolist() == [2, 2]
    assert dep.loc[(0, "nsubj", 2), ["correct", "total"]].tolist() == [1, 2]
    assert dep.loc[(0, "obj", 2), ["correct", "total"]].tolist() == [1, 1]
    assert dep.loc[(1, "nsubj", 1), ["correct", "total"]].tolist() == [0, 1]
    assert len(frame) == 3 * 2 * 2 and set(frame.layer) == {1}  # (sentence, relation) groups x heads x directions
    back = frame[frame.direction == "head->dep"].set_index(["sentence", "relation", "head"])
    assert back.loc[(0, "nsubj", 2), "correct"] == 1


def test_score_heads_and_index_write_parquet_that_reads_back_as_the_csv(tiny_lab, tmp_path, capsys):
    from bertviz_lab.cli import main
    from bertviz_lab.treebank import SAMPLE_TREEBANK

    assert main(["score-heads", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--out", str(tmp_path / "s"),
                 "--resamples", "20", "--no-null-model", "--min-arcs", "5"]) == 0
    csv, parquet = pd.read_csv(tmp_path / "s" / "head_scores.csv"), pd.read_parquet(tmp_path / "s" / "head_scores.parquet")
    pd.testing.assert_frame_equal(parquet[csv.columns].round(6), csv, check_dtype=False, atol=1e-6)
    records = pd.read_parquet(tmp_path / "s" / "sentence_head_scores.parquet")
    dep = records[(records.direction == "dep->head") & (records.relation == "nsubj")]
    totals = dep.groupby(["layer", "head"])[["correct", "total"]].sum()
    scores = csv[(csv.direction == "dep->head") & (csv.relation == "nsubj")].set_index(["layer", "head"])
    np.testing.assert_allclose(totals.correct / totals.total, scores.loc[totals.index, "accuracy"], atol=1e-6)
    assert main(["index", "--model", tiny_lab.checkpoint_id, "--device", "cpu", "--conllu", str(SAMPLE_TREEBANK),
                 "--max-sentences", "4", "--out", str(tmp_path / "i")]) == 0
    import json

    tokens = pd.read_parquet(tmp_path / "i" / "tokens.parquet")
    assert tokens.to_dict(orient="records") == json.loads((tmp_path / "i" / "index.json").read_text())["records"]
    capsys.readouterr()
