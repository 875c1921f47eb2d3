"""Display transforms, aggregates and statistics with hand-computed expectations."""
import numpy as np
import pytest

from bertviz_lab import export
from bertviz_lab.attention import Display, attention_view, head_statistics, rollout, to_word_level, word_groups
from bertviz_lab.figures import analysis as views


def random_rows(rng, *shape):
    a = rng.random(shape)
    return a / a.sum(-1, keepdims=True)


def test_word_level_sums_to_and_averages_from():
    tokens = ["[CLS]", "un", "##believ", "##able", "cats", "[SEP]"]
    word_ids = [None, 0, 0, 0, 1, None]
    groups, labels = word_groups(tokens, word_ids)
    assert groups == [[0], [1, 2, 3], [4], [5]]
    assert labels == ["[CLS]", "unbelievable", "cats", "[SEP]"]
    a = random_rows(np.random.default_rng(0), 6, 6)
    w = to_word_level(a, groups)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)  # rows still sum to 1
    np.testing.assert_allclose(w[2, 1], a[4, 1:4].sum())  # to a word: sum over its pieces
    np.testing.assert_allclose(w[1, 2], a[1:4, 4].mean())  # from a word: mean over its pieces
    np.testing.assert_allclose(w[1, 1], a[1:4, 1:4].sum(-1).mean())


def test_hide_special_renormalises_and_labels_are_unique():
    tokens = ["[CLS]", "the", "cat", "the", "[SEP]"]
    a = random_rows(np.random.default_rng(1), 5, 5)
    view = attention_view(a, tokens, [None, 0, 1, 2, None], [0] * 5, Display(hide_special=True))
    assert view.query_labels == ["1 the", "2 cat", "3 the"]
    np.testing.assert_allclose(view.weights.sum(-1), 1.0)
    np.testing.assert_allclose(view.weights[0], a[1, 1:4] / a[1, 1:4].sum())
    assert any("renormalised" in n for n in view.notes)


def test_pair_filters_select_segments():
    tokens = ["[CLS]", "a", "[SEP]", "b", "c", "[SEP]"]
    seg = [0, 0, 0, 1, 1, 1]
    a = random_rows(np.random.default_rng(2), 6, 6)
    view = attention_view(a, tokens, [None, 0, None, 1, 2, None], seg, Display(pair_filter="A->B"))
    assert view.query_index == [0, 1, 2] and view.key_index == [3, 4, 5]
    np.testing.assert_array_equal(view.weights, a[:3, 3:])


def test_rollout_identity_attention_stays_identity_and_rows_sum_to_one():
    eye = np.broadcast_to(np.eye(4), (3, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(rollout(eye)[-1], np.eye(4), atol=1e-6)
    a = random_rows(np.random.default_rng(3), 3, 2, 4, 4)
    r = rollout(a)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-5)
    first = 0.5 * a[0].mean(0) + 0.5 * np.eye(4)
    second = 0.5 * a[1].mean(0) + 0.5 * np.eye(4)
    np.testing.assert_allclose(r[1], second @ first, atol=1e-5)


def test_head_statistics_on_known_patterns():
    tokens = ["[CLS]", "the", "cat", ",", "sat", "[SEP]"]
    n = len(tokens)
    prev = np.zeros((n, n))
    prev[0, 0] = 1
    for i in range(1, n):
        prev[i, i - 1] = 1
    to_cls = np.zeros((n, n))
    to_cls[:, 0] = 1
    uniform = np.full((n, n), 1 / n)
    a = np.stack([np.stack([prev, to_cls, uniform])])  # (1 layer, 3 heads, n, n)
    s = head_statistics(a, tokens)
    assert s["to previous"][0, 0] == pytest.approx(1.0)
    assert s["to [CLS]"][0, 1] == pytest.approx(1.0)
    assert s["to next"][0, 0] == pytest.approx(0.0)
    assert s["entropy"][0, 2] == pytest.approx(np.log(n), rel=1e-5)
    assert s["entropy"][0, 0] == pytest.approx(0.0, abs=1e-6)
    assert s["to punctuation"][0, 2] == pytest.approx(1 / n, rel=1e-5)
    assert s["to itself"][0, 0] == pytest.approx(1 / n, rel=1e-5)  # only [CLS] attends to itself


def test_csv_export_has_one_row_per_weight(tiny_lab, tmp_path):
    import pandas as pd

    a = tiny_lab.analyze("the cat sat on the mat")
    path = export.export_csv(a, tmp_path)
    frame = pd.read_csv(path)
    n = len(a.tokens)
    assert len(frame) == a.n_layers * a.n_heads * n * n
    row = frame[(frame.layer == 2) & (frame["head"] == 3) & (frame.query_index == 1) & (frame.key_index == 4)]
    assert row.key_token.item() == "on" and row.query_token.item() == "the"
    assert row.weight.item() == pytest.approx(float(a.attention[1, 2, 1, 4]), rel=1e-5)
    npz = np.load(export.export_npz(a, tmp_path))
    np.testing.assert_array_equal(npz["attention"], a.attention)


def test_single_head_figure_has_one_row_per_token_even_with_repeats(tiny_lab):
    a = tiny_lab.analyze("the cat sat on the mat the cat")
    fig, _ = views.single_head(a, views.ViewOptions(layer=1, head=2))
    trace = fig["data"][0]
    assert len(trace["y"]) == len(set(trace["y"])) == len(a.tokens)
    assert fig["config"]["toImageButtonOptions"]["filename"] == "attention-L2-H3"
