"""The Positions lesson (mlm/twin_lesson.py, tasks/positions_lesson.py, figures/twin_lesson.py): tiny twins the test
trains and exports, side by side on one sentence."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_twins import corpus, exported, words_and_tokenizer  # noqa: F401  (module fixtures: tiny exported twins)

from bertviz_lab.attention.metrics import js_divergence
from bertviz_lab.lab import InputError, load
from bertviz_lab.mlm.twin_lesson import UNCHANGED, permutations
from bertviz_lab.tasks.positions_lesson import LessonRequest, positions_lesson

pytestmark = pytest.mark.slow  # trains tiny twins (a few seconds) once for the module
TEXT = "the teacher said that a student who reads every [MASK] will pass the exam"


@pytest.fixture
def twins_here(exported, monkeypatch):  # noqa: F811
    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    return exported


def loader(name):
    """A tiny twin, sharpened: two training steps leave its predictions near uniform, so every order would look alike;
    larger query/key weights, position table and MLM transform make order visible wherever the scheme lets it be."""
    lab = load(name, device="cpu")
    with torch.no_grad():
        for key, value in lab.model.named_parameters():
            if key.endswith(("query.weight", "key.weight")):
                value.mul_(8)
            elif "position_embeddings" in key:
                value.mul_(30)
            elif key.endswith("predictions.transform.dense.weight") or key.endswith("predictions.decoder.weight"):
                value.mul_(4)
    return lab


def test_js_divergence_by_hand():
    p = np.array([[[1.0, 0.0]], [[0.5, 0.5]]])  # (2 orders, 1 masked position, vocab 2): the lesson's shapes
    q = np.array([[[0.0, 1.0]], [[0.5, 0.5]]])
    assert js_divergence(p, q).tolist() == pytest.approx([math.log(2), 0.0])
    # (0.9, 0.1) vs (0.1, 0.9): M = (0.5, 0.5); KL(p||M) = 0.9 ln 1.8 + 0.1 ln 0.2, the same for q
    half = 0.9 * math.log(1.8) + 0.1 * math.log(0.2)
    assert float(js_divergence(np.array([[0.9, 0.1]]), np.array([[0.1, 0.9]]))) == pytest.approx(half, rel=1e-5)


def test_a_permutation_moves_only_the_other_tokens():
    ids = torch.arange(10, 20)
    rows = permutations(ids, keep=[0, 4, 9], shuffles=6, seed=3)
    assert rows.shape == (6, 10) and (rows[:, [0, 4, 9]] == ids[[0, 4, 9]]).all()
    for row in rows:
        assert sorted(row.tolist()) == ids.tolist()
    assert (rows != ids).any(dim=1).sum() >= 5  # (at most one of six draws may leave 7 tokens in place)
    assert torch.equal(rows, permutations(ids, keep=[0, 4, 9], shuffles=6, seed=3))  # seeded


def test_only_the_twin_without_positions_ignores_the_order(twins_here):
    lesson = positions_lesson(LessonRequest(("twin-none", "twin-learned", "twin-rotary"), TEXT, shuffles=12), loader)
    none, learned, rotary = lesson.views
    assert none.shuffle.positions == learned.shuffle.positions == [10]  # the typed [MASK]
    assert float(none.shuffle.js.max()) < UNCHANGED and none.shuffle.top_kept == 1.0, none.shuffle.js.max()
    assert "does not move" in lesson.conclusions()[0] and "cannot see word order" in lesson.conclusions()[0]
    for view in (learned, rotary):
        low, high = view.shuffle.interval["ci"]
        assert low > UNCHANGED and view.shuffle.interval["value"] == pytest.approx(view.shuffle.js.mean(), abs=1e-4)
        conclusion = view.shuffle.conclusion(view.twin)
        assert f"[{low:.3g}, {high:.3g}]" in conclusion and "moves the prediction" in conclusion
    assert none.geometry is None and learned.geometry is not None and rotary.geometry is not None
    record = lesson.to_json()
    assert record["twins"] == ["twin-none", "twin-learned", "twin-rotary"] and len(record["conclusions"]) == 3


def test_no_mask_typed_masks_the_middle_word_and_the_numbers_are_the_attention(twins_here):
    lesson = positions_lesson(LessonRequest(("twin-learned", "twin-alibi"), "the student reads the exam", layer=2,
                                            head=1, shuffles=5), loader)
    view = lesson.views[0]
    tokens = view.analysis.tokens
    assert view.shuffle.chosen_for_you and tokens[view.shuffle.positions[0]] == "reads"
    attention = view.analysis.attention  # (layers, heads, query, key)
    np.testing.assert_allclose(view.head_attention, attention[1, 0])
    n = len(tokens)
    by_hand = [np.mean([attention[l, h, i, i - 1] for h in range(attention.shape[1]) for i in range(1, n)])
               for l in range(attention.shape[0])]
    np.testing.assert_allclose(view.previous, by_hand, rtol=1e-5)
    far = [np.mean([sum(attention[l, h, i, j] * abs(i - j) for j in range(n)) for h in range(attention.shape[1])
                    for i in range(n)]) for l in range(attention.shape[0])]
    np.testing.assert_allclose(view.distance, far, rtol=1e-5)


def test_the_request_says_what_is_wrong_in_one_sentence(twins_here):
    with pytest.raises(InputError, match="choose two to four twins to set side by side \\(got 1\\)"):
        LessonRequest(("twin-none", "twin-none"), TEXT)
    with pytest.raises(InputError, match="\\(got 5\\)"):
        LessonRequest(("twin-none", "twin-learned", "twin-rotary", "twin-alibi", "twin-relative"), TEXT)
    with pytest.raises(InputError, match="no twin called 'twin-wavelet'; the twins are twin-learned"):
        LessonRequest(("twin-none", "twin-wavelet"), TEXT)
    with pytest.raises(InputError, match="the twins have 2 layers of 2 heads"):
        positions_lesson(LessonRequest(("twin-none", "twin-learned"), TEXT, layer=3), loader)


def test_the_lesson_figures_title_every_panel(twins_here):
    from bertviz_lab.figures.lesson_figures import lesson_distance, lesson_lengths, lesson_maps, lesson_shuffle

    lesson = positions_lesson(LessonRequest(("twin-none", "twin-sinusoidal"), TEXT, shuffles=5), loader)
    maps = lesson_maps(lesson.views, 1, 2)
    titles = [a["text"] for a in maps["layout"]["annotations"]]
    assert "<b>twin-none: L1 H2</b>" in titles and "<b>twin-none: no positions at all</b>" in titles
    assert any("sinusoid" in t.lower() for t in titles)
    assert len([t for t in maps["data"] if t["type"] == "heatmap"]) == 3  # two maps, one geometry (none has none)
    assert [t["name"] for t in lesson_distance(lesson.views)["data"][:2]] == ["twin-none", "twin-sinusoidal"]
    shuffle = lesson_shuffle(lesson.views)
    assert shuffle["data"][0]["x"] == ["twin-none", "twin-sinusoidal"] and "[MASK]" in shuffle["layout"]["title"]["text"]
    assert "bench_twins.py" in lesson_lengths(lesson.views, {})["layout"]["annotations"][0]["text"]  # empty_figure
    measured = {"twin-none": {"top1": {"1x": {"value": 0.2, "ci": [0.1, 0.3]}}},
                "twin-sinusoidal": {"top1": {"1x": {"value": 0.3, "ci": [0.2, 0.4]},
                                             "2x": {"problem": "cannot reach position 33"}}}}
    lengths = lesson_lengths(lesson.views, measured)
    assert lengths["data"][1]["y"] == [0.3]
    assert "<sup>twin-sinusoidal cannot reach position 33 (2x)</sup>" in lengths["layout"]["title"]["text"]


def test_the_page_compares_the_twins_through_its_api(twins_here, tiny_lab):
    """The Positions tab's one event (api_name positions_lesson) on a page whose model list holds the twins."""
    import json

    import gradio_client
    from conftest import launch

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.positions_tab import OUTPUTS

    demo = build_demo(tiny_lab)
    try:
        client = gradio_client.Client(launch(demo), verbose=False)
        out = dict(zip(OUTPUTS, client.predict(["twin-none", "twin-learned"], TEXT, 2, 1,
                                               api_name="/positions_lesson")))
        n = len(tiny_lab.tokenizer.encode(TEXT).ids)
        assert out["lesson_message"].startswith(f"**{n} tokens; layer 2, head 1.** What shuffling the other words does")
        assert "twin-none: the prediction does not move when the other words are shuffled" in out["lesson_message"]
        maps = json.loads(out["lesson_maps"]["plot"])
        assert "<b>twin-learned: L2 H1</b>" in [a["text"] for a in maps["layout"]["annotations"]]
        assert json.loads(out["lesson_shuffle"]["plot"])["data"][0]["x"] == ["twin-none", "twin-learned"]
        refused = dict(zip(OUTPUTS, client.predict(["twin-none"], TEXT, 1, 1, api_name="/positions_lesson")))
        assert refused["lesson_message"] == "⚠️ choose two to four twins to set side by side (got 1)"
    finally:
        demo.close()
