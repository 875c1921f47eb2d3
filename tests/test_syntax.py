"""Syntax probing: treebank reading, word-level attention, counting, baselines, CLI, report."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import run_cli

from bertviz_lab.syntax.run import LONG_COLUMNS, best_heads_wide
from bertviz_lab.syntax.scoring import ALL, ArcCollector, score_treebank, word_attention
from bertviz_lab.syntax.summary import Settings, summarise
from bertviz_lab.treebank import SAMPLE_TREEBANK, Sentence, TreebankError, read_conllu

ROOT = Path(__file__).resolve().parent.parent
SMALL = """# sent_id = a
# text = I don't know it.
1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\t_\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\t_\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\t_\t_\t0\troot\t_\t_
4.1\tgot\tget\tVERB\t_\t_\t_\t_\t4:conj\t_
5\tit\tit\tPRON\t_\t_\t4\tobj:x\t_\t_
6\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_

"""


def test_reader_skips_ranges_and_empty_nodes_and_strips_subtypes(tmp_path):
    path = tmp_path / "small.conllu"
    path.write_text(SMALL)
    (s,) = read_conllu(path)
    assert s.words == ["I", "do", "n't", "know", "it", "."]
    assert s.heads == [4, 4, 4, 0, 4, 4]
    assert s.relations == ["nsubj", "aux", "advmod", "root", "obj", "punct"]
    assert read_conllu(path, full_relations=True)[0].relations[4] == "obj:x"


@pytest.mark.parametrize("bad, line, words", [
    (SMALL.replace("4\tobj:x", "x\tobj:x"), ":1:", "line 9: HEAD 'x' of word 5"),  # the sentence, then the word's line
    (SMALL.replace("1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_", "1\tI\tI\tPRON"), ":3:", "field"),  # too few fields
    (SMALL.replace("5\tit\tit\tPRON\t_\t_\t4", "5\tit\tit\tPRON\t_\t_\t9"), ":1:", "invalid head 9"),
    (SMALL.replace("4\tknow\tknow\tVERB\t_\t_\t0", "4\tknow\tknow\tVERB\t_\t_\t5"), ":1:", "exactly one root"),
    # one root, but "I" and "it" point at each other: a cycle, not a tree
    (SMALL.replace("1\tI\tI\tPRON\t_\t_\t4", "1\tI\tI\tPRON\t_\t_\t5").replace(
        "5\tit\tit\tPRON\t_\t_\t4", "5\tit\tit\tPRON\t_\t_\t1"), ":1:", "form a cycle"),
])
def test_malformed_treebanks_name_file_and_line(tmp_path, bad, line, words):
    """Each error names the file, the line its sentence starts on, and what is wrong."""
    path = tmp_path / "bad.conllu"
    path.write_text(bad)
    with pytest.raises(TreebankError) as info:
        read_conllu(path)
    assert f"{path}{line} " in str(info.value) and words in str(info.value)


def test_word_level_attention_of_split_words(tiny_lab):
    enc = tiny_lab.encode_words(["the", "unbelievable", "cat", "reads"])
    assert enc.tokens == ["[CLS]", "the", "un", "##believ", "##able", "cat", "reads", "[SEP]"]
    rng = np.random.default_rng(0)
    a = rng.random((1, 1, 8, 8))
    a /= a.sum(-1, keepdims=True)
    from bertviz_lab.attention import to_word_level, word_groups

    groups, _ = word_groups(enc.tokens, enc.word_ids)
    full = to_word_level(a, groups)
    np.testing.assert_allclose(full.sum(-1), 1.0)  # rows sum to 1 before [CLS]/[SEP] are dropped
    words, labels = word_attention(a, enc)
    assert labels == ["the", "unbelievable", "cat", "reads"]
    assert words[0, 0, 1, 2] == pytest.approx(a[0, 0, 2:5, 5].mean())  # from a split word: mean
    assert words[0, 0, 2, 1] == pytest.approx(a[0, 0, 5, 2:5].sum())  # to a split word: sum


# "the cat sat down ." with gold heads the->cat, cat->sat, sat=root, down->sat, .->sat.
HAND = Sentence(["the", "cat", "sat", "down", "."], [2, 3, 0, 3, 3], ["det", "nsubj", "root", "advmod", "punct"])
HAND_ATTENTION = np.array([  # rows attend (query), columns are attended to (key)
    [0.10, 0.30, 0.50, 0.05, 0.05],  # the  -> sat
    [0.20, 0.10, 0.60, 0.05, 0.05],  # cat  -> sat
    [0.02, 0.08, 0.10, 0.30, 0.50],  # sat  -> .   (the verb attends to the final period)
    [0.05, 0.05, 0.80, 0.05, 0.05],  # down -> sat
    [0.05, 0.15, 0.60, 0.10, 0.10],  # .    -> sat
])


def hand_table():
    collector = ArcCollector(1, 1)
    collector.add(0, HAND, HAND_ATTENTION[None, None])
    return collector.table()


def hits(table, direction):
    return dict(zip(HAND.relations, table.hits[direction][:, 0, 0].tolist()))


def test_dep_to_head_by_hand():
    # each word's most-attended other word: the->sat x, cat->sat v, sat->. (root: never), down->sat v, .->sat v
    assert hits(hand_table(), "dep->head") == {"det": False, "nsubj": True, "root": False, "advmod": True,
                                               "punct": True}


def test_head_to_dep_is_clarks_transpose_by_hand():
    # Clark's "transpose": a word's predicted head is the other word that attends to it most.
    # the <- cat (0.20) v; cat <- the (0.30) x; sat <- down (root: never); down <- sat (0.30) v; . <- sat (0.50) v.
    # sat is right for two dependents (down and .). The misreading "the head's own argmax is the dependent"
    # would score only the punct arc (sat's argmax is .) and nothing else: 1 of 4 instead of 3 of 5.
    assert hits(hand_table(), "head->dep") == {"det": True, "nsubj": False, "root": False, "advmod": True,
                                               "punct": True}


def test_all_counts_root_words_as_misses_and_offsets_follow_clark():
    summary = summarise(score_table(hand_table()), settings=Settings(resamples=0, min_arcs=1))
    scores = summary.head_scores
    overall = scores[(scores.relation == ALL)].set_index("direction")
    assert overall.loc["dep->head", "total"] == 5 and overall.loc["dep->head", "correct"] == 3
    assert overall.loc["head->dep", "correct"] == 3
    best = summary.best_heads.set_index("relation")
    assert "root" not in best.index  # no head can predict it; it is only a miss inside "all"
    # Clark's offset baseline predicts clamp(i + offset + 1, 0, n) for offsets -3..+2:
    # +1 is right for the and cat (2 of 5); root is predicted by -3 (clamped to ROOT); advmod by -1; punct by -2.
    assert (best.loc[ALL, "baseline_offset"], best.loc[ALL, "baseline_accuracy"]) == (1, pytest.approx(0.4))
    assert best.loc["advmod", "baseline_offset"] == -1 and best.loc["punct", "baseline_offset"] == -2
    root = scores[scores.relation == "root"]
    assert (root.correct == 0).all()


def score_table(table):
    from bertviz_lab.lab import CheckpointInfo
    from bertviz_lab.syntax.scoring import TreebankScores

    return TreebankScores(table, CheckpointInfo("hand", "hand-made", "0" * 64, False), 1, 0)


def test_tree_decoding_by_hand():
    table = hand_table()
    # The symmetrised map A + A.T has its maximum spanning tree on the--cat? No: its heaviest edges are
    # down-sat 1.10, cat-sat 0.68, the-sat 0.52, sat-. 1.10; the tree is the star around sat.
    tree = table.hits["tree"][:, 0, 0].tolist()
    assert tree == [False, True, False, True, True]  # the-cat is not in the star; root has no arc
    # right-branching chain the-cat-sat-down-. recovers the-cat, cat-sat, down-sat but not .-sat
    assert table.chain_hits.tolist() == [True, True, False, True, False]


def test_spanning_trees_equal_scipy():
    scipy_sparse = pytest.importorskip("scipy.sparse.csgraph")
    from bertviz_lab.syntax.predictors import spanning_tree_edges

    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 15):
        maps = rng.random((3, 4, n, n))
        edges = spanning_tree_edges(maps)
        for layer in range(3):
            for head in range(4):
                sym = maps[layer, head] + maps[layer, head].T
                np.fill_diagonal(sym, 0)
                mst = scipy_sparse.minimum_spanning_tree(-(sym + 10.0) * (1 - np.eye(n))).toarray() != 0
                assert np.array_equal(edges[layer, head], mst | mst.T)


def test_batched_scoring_equals_one_at_a_time(sharp_lab):
    sentences = read_conllu(SAMPLE_TREEBANK)[:20]
    settings = Settings(resamples=50, min_arcs=1)
    one = summarise(score_treebank(sharp_lab, sentences, batch_size=1), settings=settings)
    many = summarise(score_treebank(sharp_lab, sentences, batch_size=8), settings=settings)
    pd.testing.assert_frame_equal(one.head_scores, many.head_scores)
    pd.testing.assert_frame_equal(one.best_heads, many.best_heads)
    assert one.general_stats["entropy"] == pytest.approx(many.general_stats["entropy"], abs=1e-5)
    short = score_treebank(sharp_lab, sentences, batch_size=8, max_length=9)
    assert short.sentences_skipped > 0 and short.sentences_used + short.sentences_skipped == 20


def test_sample_treebank_is_large_and_well_formed():
    sentences = read_conllu(SAMPLE_TREEBANK)
    assert len(sentences) >= 60
    assert len({s.text for s in sentences}) == len(sentences)
    for s in sentences:  # every word reaches the root without cycles
        for i in range(1, len(s.words) + 1):
            seen, j = set(), i
            while j:
                assert j not in seen
                seen.add(j)
                j = s.heads[j - 1]


def test_cli_scores_published_weights_with_intervals(tmp_path, minilm_lab):
    out = tmp_path / "scores"
    run = run_cli("score-heads", "--json", "--out", str(out), "--device", "cpu",
                          "--batch-size", "16", "--resamples", "200", "--min-arcs", "20", "--uuas-punct", "exclude",
                          "--null-seeds", "2")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["sentences"] == len(read_conllu(SAMPLE_TREEBANK)) and summary["skipped"] == 0
    # attention is studied on the published weights by default, and every output says so
    assert summary["model_sha256"] == minilm_lab.checkpoint_info().sha256
    assert "fine-tuned" not in summary["model"]
    scores = pd.read_csv(out / "head_scores.csv")
    assert set(scores.model_sha256) == {minilm_lab.checkpoint_info().sha256}
    relations = set(scores.relation)
    assert ALL in relations and {"nsubj", "det", "obj", "case", "root"} <= relations
    assert scores.groupby(["relation", "direction"]).size().eq(minilm_lab.n_layers * minilm_lab.n_heads).all()
    np.testing.assert_allclose(scores.accuracy, scores.correct / scores.total, atol=1e-6)
    assert ((scores.ci_low <= scores.accuracy + 1e-9) & (scores.accuracy <= scores.ci_high + 1e-9)).all()
    long = pd.read_csv(out / "best_heads.csv")  # one row per relation and measure
    assert list(long.columns) == ["model", "model_sha256", "source", *LONG_COLUMNS]
    best = best_heads_wide(long)  # back to one row per relation: every number of the wide row is there
    for column in ("best_head", "direction", "accuracy", "ci_low", "ci_high", "heldout_accuracy", "baseline_offset",
                   "baseline_accuracy", "p_value_in_sample", "heldout_p_value", "heldout_difference",
                   "heldout_difference_ci_low", "heldout_difference_ci_high", "heldout_verdict", "null_accuracy",
                   "tree_recall", "count"):
        assert column in best.columns
    assert best.relation.iloc[0] == ALL and (best["count"][1:] >= 20).all()
    top = best[best.relation == "det"].iloc[0]
    layer, head = (int(v) for v in top.best_head.split("-"))
    det = scores[(scores.relation == "det") & (scores.direction == top.direction)]
    assert top.accuracy == pytest.approx(det.accuracy.max(), abs=1e-6)
    assert det[(det.layer == layer) & (det["head"] == head)].accuracy.item() == pytest.approx(top.accuracy, abs=1e-6)
    assert set(best.null_seeds) == {2}
    # --json carries the held-out figures the summary prints, from the same wide row
    answers = {r["relation"]: r for r in summary["relations"]}
    row = best[best.relation == "det"].iloc[0]
    assert answers["det"]["best_head"] == row.heldout_head and answers["det"]["arcs"] == row["count"]
    assert answers["det"]["accuracy"] == pytest.approx(row.heldout_accuracy, abs=1e-6)
    assert answers["det"]["baseline_offset"] == row.heldout_baseline_offset
    printed = run_cli("score-heads", "--out", str(tmp_path / "again"), "--device", "cpu", "--batch-size", "16",
                      "--resamples", "200", "--min-arcs", "20", "--null-seeds", "2")
    assert printed.returncode == 0, printed.stderr  # without --json: the result itself, not only the files
    layer, head = row.heldout_head.split("-")
    assert f"layer {layer}, head {head} ({row.heldout_direction})" in printed.stdout
    assert f"{row.heldout_accuracy:.2f} [{row.heldout_ci_low:.2f}, {row.heldout_ci_high:.2f}]" in printed.stdout
    assert answers["det"]["verdict"] in printed.stdout and "wrote " in printed.stdout
    uuas = pd.read_csv(out / "uuas.csv")
    assert len(uuas) == minilm_lab.n_layers * minilm_lab.n_heads + 1 and "right-branching" in set(uuas.predictor)
    assert set(uuas.punctuation) == {"excluded"}
    for table in (best, uuas):  # every output names the weights
        assert set(table.model_sha256) == {minilm_lab.checkpoint_info().sha256}
    report = (out / "report.html").read_text()
    assert report.count("Plotly.newPlot") >= 3 and "punctuation arcs excluded" in report
    assert minilm_lab.checkpoint_info().sha256[:12] in report or "all-MiniLM-L6-v2" in report


def test_cli_malformed_file_writes_nothing(tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text(SMALL.replace("4\tobj:x", "x\tobj:x"))
    out = tmp_path / "out"
    run = run_cli("score-heads", "--conllu", str(bad), "--out", str(out))
    assert run.returncode == 2 and f"{bad}:1:" in run.stderr and "Traceback" not in run.stderr
    assert not out.exists()


def test_cli_compares_two_checkpoints_on_the_same_sentences(tmp_path, default_lab, minilm_lab):
    out = tmp_path / "compare"
    run = run_cli("score-heads", "--out", str(out), "--device", "cpu",
                          "--max-sentences", "30", "--resamples", "50", "--min-arcs", "10", "--no-null-model",
                          "--compare-model", "default")
    assert run.returncode == 0, run.stderr
    diff = pd.read_csv(out / "compare_scores.csv")
    assert diff.model_a.str.contains(minilm_lab.checkpoint_info().sha256[:12]).all()
    assert diff.model_b.str.contains(default_lab.checkpoint_info().sha256[:12]).all()
    assert "fine-tuned by bertviz-lab" in diff.model_b.iloc[0]
    np.testing.assert_allclose(diff.difference, diff.accuracy_b - diff.accuracy_a, atol=2e-6)  # CSV keeps 6 decimals
    # layers `default` did not fine-tune are the published weights exactly: their heads score the same
    from bertviz_lab.resources import DEFAULT_MLM_HEAD

    tuned = {i + 1 for i in json.loads((DEFAULT_MLM_HEAD / "run.json").read_text())["fine_tuned_layers"]}  # 1-based
    published = ~diff.layer.isin(tuned)
    assert (diff[published].difference == 0).all() and (diff[~published].difference != 0).any()
    assert set(diff[diff.difference != 0].layer) <= tuned


def test_score_heads_scores_the_models_typed():
    """`--model default` is the fine-tuned checkpoint (it was silently swapped for the published one);
    the published weights are the default only when no --model is given; repeats score once."""
    from bertviz_lab.cli import build_parser
    from bertviz_lab.cli.scoring_commands import score_request

    def models(*argv):
        return score_request(build_parser().parse_args(["score-heads", "--out", "x", *argv])).models

    assert models() == ["minilm-original"]
    assert models("--model", "default") == ["default"]
    assert models("--model", "default", "--model", "minilm-original", "--model", "default") == ["default",
                                                                                                  "minilm-original"]
