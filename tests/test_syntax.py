"""Syntax probing: treebank reading, word-level attention, counting, baselines, CLI, report."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bertviz_lab.syntax import (ALL, SAMPLE_TREEBANK, Counts, Sentence, TreebankError, probe_treebank,
                                read_conllu, word_attention)

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


@pytest.mark.parametrize("bad, where", [
    (SMALL.replace("4\tobj:x", "x\tobj:x"), ":1:"),  # head not a number -> the sentence's first line
    (SMALL.replace("1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_", "1\tI\tI\tPRON"), ":3:"),  # too few fields
    (SMALL.replace("5\tit\tit\tPRON\t_\t_\t4", "5\tit\tit\tPRON\t_\t_\t9"), "invalid head"),
    (SMALL.replace("4\tknow\tknow\tVERB\t_\t_\t0", "4\tknow\tknow\tVERB\t_\t_\t5"), "root"),
])
def test_malformed_treebanks_name_file_and_line(tmp_path, bad, where):
    path = tmp_path / "bad.conllu"
    path.write_text(bad)
    with pytest.raises(TreebankError) as info:
        read_conllu(path)
    assert str(path) in str(info.value) and where in str(info.value)


def test_word_level_attention_of_split_words(tiny_lab):
    enc = tiny_lab.encode_words(["the", "unbelievable", "cat", "reads"])
    assert enc.tokens == ["[CLS]", "the", "un", "##believ", "##able", "cat", "reads", "[SEP]"]
    rng = np.random.default_rng(0)
    a = rng.random((1, 1, 8, 8))
    a /= a.sum(-1, keepdims=True)
    from bertviz_lab.metrics import to_word_level, word_groups

    groups, _ = word_groups(enc.tokens, enc.word_ids)
    full = to_word_level(a, groups)
    np.testing.assert_allclose(full.sum(-1), 1.0)  # rows sum to 1 before [CLS]/[SEP] are dropped
    words, labels = word_attention(a, enc)
    assert labels == ["the", "unbelievable", "cat", "reads"]
    assert words[0, 0, 1, 2] == pytest.approx(a[0, 0, 2:5, 5].mean())  # from a split word: mean
    assert words[0, 0, 2, 1] == pytest.approx(a[0, 0, 5, 2:5].sum())  # to a split word: sum


def test_counting_in_both_directions_by_hand():
    # words: 0 the, 1 cat, 2 sat, 3 down ; arcs: the->cat det, cat->sat nsubj, down->sat advmod
    s = Sentence(["the", "cat", "sat", "down"], [2, 3, 0, 3], ["det", "nsubj", "root", "advmod"])
    a = np.zeros((1, 2, 4, 4))
    # head 0 points every word at the next one (the->cat right, cat->sat right, sat->down, down->? wraps to the)
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 0)]:
        a[0, 0, i, j] = 1.0
    # head 1: each word attends to itself most (ignored) then to the previous word
    for i in range(4):
        a[0, 1, i, i] = 5.0
        a[0, 1, i, (i - 1) % 4] = 1.0
    c = Counts(1, 2)
    c.add(a, s)
    assert c.total[("det", "dep->head")] == 1 and c.total[(ALL, "dep->head")] == 3
    # head 0: dep->head right for det (the->cat) and nsubj (cat->sat), wrong for advmod (down->the)
    assert c.correct[("det", "dep->head")][0, 0] == 1
    assert c.correct[("nsubj", "dep->head")][0, 0] == 1
    assert c.correct[("advmod", "dep->head")][0, 0] == 0
    # head->dep with head 0: cat->sat (det wants the), sat->down (nsubj wants cat: no; advmod wants down: yes)
    assert c.correct[("det", "head->dep")][0, 0] == 0
    assert c.correct[("advmod", "head->dep")][0, 0] == 1
    # head 1 (previous word, itself excluded): the->down, cat->the, sat->cat, down->sat
    assert c.correct[("advmod", "dep->head")][0, 1] == 1
    assert c.correct[("nsubj", "head->dep")][0, 1] == 1  # sat's choice is cat
    assert c.correct[("det", "head->dep")][0, 1] == 1  # cat's choice is the
    assert c.correct[(ALL, "dep->head")].tolist() == [[2, 1]]
    # offset baseline: det +1, nsubj +1, advmod -1 -> best offset +1 for all arcs, 2 of 3
    assert c.baseline(ALL, "dep->head") == (1, pytest.approx(2 / 3))
    assert c.baseline("advmod", "dep->head") == (-1, 1.0)
    scores = c.head_scores()
    row = scores[(scores.relation == "det") & (scores.direction == "dep->head") & (scores["head"] == 1)]
    assert row.correct.item() == 1 and row.total.item() == 1 and row.accuracy.item() == 1.0


def test_batched_probe_equals_one_at_a_time(sharp_lab):
    sentences = read_conllu(SAMPLE_TREEBANK)[:20]
    one = probe_treebank(sharp_lab, sentences, batch_size=1)
    many = probe_treebank(sharp_lab, sentences, batch_size=8)
    pd.testing.assert_frame_equal(one.head_scores, many.head_scores)
    assert one.counts.general_stats()["entropy"] == pytest.approx(many.counts.general_stats()["entropy"], abs=1e-5)
    short = probe_treebank(sharp_lab, sentences, batch_size=8, max_length=9)
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


def test_cli_on_the_sample_with_the_embedded_model(tmp_path, minilm_lab):
    out = tmp_path / "probe"
    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "probe", "--out", str(out), "--model", "default",
                          "--device", "cpu", "--batch-size", "16"], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["sentences"] == len(read_conllu(SAMPLE_TREEBANK)) and summary["skipped"] == 0
    scores = pd.read_csv(out / "head_scores.csv")
    relations = set(scores.relation)
    assert ALL in relations and {"nsubj", "det", "obj", "case"} <= relations
    expected = minilm_lab.n_layers * minilm_lab.n_heads * len(relations) * 2
    assert len(scores) == expected
    assert scores.groupby(["relation", "direction"]).size().eq(minilm_lab.n_layers * minilm_lab.n_heads).all()
    assert (scores.correct <= scores.total).all()
    np.testing.assert_allclose(scores.accuracy, scores.correct / scores.total, atol=1e-6)
    best = pd.read_csv(out / "best_heads.csv")
    assert list(best.columns) == ["relation", "best_head", "direction", "accuracy", "baseline_offset",
                                  "baseline_accuracy", "count"]
    assert set(best.relation) == relations
    top = best[best.relation == "det"].iloc[0]
    layer, head = (int(v) for v in top.best_head.split("-"))
    det = scores[(scores.relation == "det") & (scores.direction == top.direction)]
    assert top.accuracy == pytest.approx(det.accuracy.max(), abs=1e-6)
    assert det[(det.layer == layer) & (det["head"] == head)].accuracy.item() == pytest.approx(top.accuracy, abs=1e-6)


def test_cli_malformed_file_writes_nothing(tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text(SMALL.replace("4\tobj:x", "x\tobj:x"))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "bertviz_lab", "probe", "--conllu", str(bad), "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 2 and f"{bad}:1:" in run.stderr and "Traceback" not in run.stderr
    assert not out.exists()
