"""What the page draws from (the payload views.js switches layers and heads with) and the
small things a reader notices: units, arrow directions, offset signs, long labels, [mask]."""
import numpy as np
import pandas as pd
import pytest

from bertviz_lab.figures.analysis import ViewOptions
from bertviz_lab.figures.payload import CODE16_MAX_TOKENS, dequantise, quantise, view_payload


def test_payload_round_trip_is_within_the_quantisation_step(tiny_lab):
    a = tiny_lab.analyze("the cat sat on the mat because it was tired")
    meta, codes = view_payload(a, ViewOptions(layer=1, head=2))
    assert (meta["layer"], meta["head"], meta["bits"], meta["codes_bytes"]) == (1, 2, 16, len(codes))
    assert meta["labels"] == [f"{i} {t}" for i, t in enumerate(a.tokens)]
    weights = dequantise(meta, codes)
    step = a.attention.max(axis=(-1, -2), keepdims=True) / 65535  # one code of each head
    assert np.all(np.abs(weights - a.attention) <= step / 2 + 1e-7)
    assert meta["heatmap"]["data"][0]["z"] is None  # the template carries no numbers


def test_payload_word_level_and_hidden_specials_match_the_python_view(tiny_lab):
    from bertviz_lab.attention import Display, attention_view

    a = tiny_lab.analyze("unbelievably tokenized words", pair="and a second sentence")
    meta, codes = view_payload(a, ViewOptions(hide_special=True, word_level=True, pair_filter="A->B"))
    view = attention_view(a.attention, a.tokens, a.word_ids, a.segment_ids, Display(hide_special=True, word_level=True))
    assert meta["labels"] == view.query_labels and meta["segments"] == view.query_segments
    assert meta["pair_filter"] == "A->B"  # applied by the page (rows A, columns B), not here
    np.testing.assert_allclose(dequantise(meta, codes), view.weights, atol=1e-4)
    assert any("word level" in note for note in meta["notes"])


def test_payloads_switch_to_eight_bit_codes_above_the_limit():
    from bertviz_lab.figures.payload import weights_payload

    for n, bits in ((CODE16_MAX_TOKENS, 16), (CODE16_MAX_TOKENS + 1, 8)):
        weights = np.full((1, 1, n, n), 1.0 / n, dtype=np.float32)  # (layers, heads, query, key)
        meta, codes = weights_payload(weights, [str(i) for i in range(n)], [0] * n)
        assert meta["bits"] == bits and len(codes) == n * n * bits // 8


def test_eight_bit_codes_err_by_at_most_half_a_step():
    rng = np.random.default_rng(0)
    n = CODE16_MAX_TOKENS + 1
    weights = rng.random((1, 2, n, n)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)  # (layers, heads, query, key), rows sum to 1
    codes, scales = quantise(weights, 8)
    assert len(codes) == weights.size  # one byte a weight
    meta = {"bits": 8, "labels": list(range(n)), "layers": 1, "heads": 2, "scales": scales.tolist()}
    error = np.abs(dequantise(meta, codes) - weights)
    assert error.max() <= scales.max() / 255 / 2 + 1e-7


def test_long_labels_are_shortened_on_the_axis_but_not_in_the_hover():
    from bertviz_lab.attention import AttentionView
    from bertviz_lab.figures.attention import heatmap_figure

    labels = ["0 [CLS]", "1 antidisestablishmentarianism", "2 [SEP]"]
    view = AttentionView(np.eye(3, dtype=np.float32), labels, labels, [0, 1, 2], [0, 1, 2], [])
    fig = heatmap_figure(view, "t")
    y = fig["layout"]["yaxis"]
    assert y["tickvals"] == labels and y["ticktext"][1] == "1 antidisestablis…" and fig["data"][0]["y"] == labels
    assert "tickvals" not in heatmap_figure(AttentionView(np.eye(2), ["0 a", "1 b"], ["0 a", "1 b"], [0, 1], [0, 1],
                                                          []), "t")["layout"]["yaxis"]


@pytest.mark.parametrize("offset, text", [(1, "+1 (next word)"), (-1, "-1 (previous word)"),
                                          (-3, "-3 (3 words left)"), (2, "+2 (2 words right)")])
def test_offsets_say_their_direction(offset, text):
    from bertviz_lab.figures.syntax import offset_text

    assert offset_text(offset) == text


def test_dependency_arcs_have_arrowheads_on_the_dependent():
    from bertviz_lab.figures.syntax import arcs_figure
    from bertviz_lab.treebank import Sentence

    # "dogs bark loudly": bark is the root; dogs <- bark (nsubj), loudly <- bark (advmod)
    sentence = Sentence(["dogs", "bark", "loudly"], [2, 0, 2], ["nsubj", "root", "advmod"])
    attention = np.zeros((1, 1, 3, 3))
    attention[0, 0] = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]  # dogs->bark, bark->loudly, loudly->dogs
    fig, summary = arcs_figure(sentence, attention, 0, 0)
    heads = next(t for t in fig["data"] if t.get("name") == "arrowheads")  # one marker trace, not annotations
    assert not any(a.get("showarrow") for a in fig["layout"]["annotations"])
    # each arrowhead sits just before its arc's end, on the curve: x is 94% of the way from head to dependent
    arrows = [(x, y, round(x), angle, colour) for x, y, angle, colour
              in zip(heads["x"], heads["y"], heads["marker"]["angle"], heads["marker"]["color"])]
    gold = sorted(end for x, y, end, _, _ in arrows if y > 0)
    assert gold == [0, 2]  # heads point at their dependents (words 0 and 2), never at the head (1)
    # below, each word's predicted head is the word it attends to most, and the arc runs from that head to
    # the word: dogs(0) attends to bark(1) and bark(1) to loudly(2), so both arrive from the right;
    # loudly(2) attends to dogs(0), so its arrow arrives from the left
    below = sorted((end, int(np.sign(x - end)), colour) for x, y, end, _, colour in arrows if y < 0)
    assert below == [(0, 1, "#2f855a"),  # bark -> dogs is the gold nsubj arc: green
                     (1, 1, "#dd6b20"),  # loudly -> bark is the gold advmod arc reversed: orange
                     (2, -1, "#a0aec0")]  # dogs -> loudly is no gold arc: grey
    for x, y, end, angle, _ in arrows:  # clear of the words, turned to point down onto (or up onto) the word
        assert abs(y) >= 0.5
        pointing_down = 90 < abs(angle) <= 180
        assert pointing_down == (y > 0), (x, y, angle)
        assert (angle > 0) == (end > x) or angle in (0, 180), (x, end, angle)  # leaning toward the dependent
    legend = [t["name"] for t in fig["data"] if t.get("showlegend", True) and t.get("name")]
    assert legend == ["gold arc (treebank)", "predicted = a gold arc", "predicted = a gold arc reversed",
                      "predicted, not a gold arc"]
    assert "nsubj**: bark → dogs" in summary and "advmod**: bark → loudly" in summary  # head → dependent


def test_arc_labels_never_overlap_at_forty_words():
    from bertviz_lab.figures.syntax import ASSUMED_PLOT_PX, LABEL_PX, arcs_figure
    from bertviz_lab.treebank import Sentence

    n = 40  # every word depends on the next one, so forty same-height labels sit side by side
    sentence = Sentence([f"w{i}" for i in range(n)], [i + 2 for i in range(n - 1)] + [0],
                        ["nmod:poss"] * (n - 1) + ["root"])
    fig, _ = arcs_figure(sentence, np.random.default_rng(0).random((1, 1, n, n)), 0, 0)
    labels = [a for a in fig["layout"]["annotations"] if a.get("name") == "relation"]
    assert len(labels) == n - 1
    y0, y1 = fig["layout"]["yaxis"]["range"]
    x_px, y_px = ASSUMED_PLOT_PX[0] / n, ASSUMED_PLOT_PX[1] / (y1 - y0)
    boxes = [(a["x"] * x_px - (len(a["text"]) * LABEL_PX) / 2, a["x"] * x_px + (len(a["text"]) * LABEL_PX) / 2,
              a["y"] * y_px, a["y"] * y_px + 14) for a in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]), (a, b)
    assert all(a["y"] + 0.5 < y1 for a in labels)  # every label inside the plot


def test_head_summary_names_the_unit_of_entropy(tiny_lab):
    from bertviz_lab.figures import analysis as views

    fig = views.summary(tiny_lab.analyze("the cat sat"))
    names = [a["text"] for a in fig["layout"]["annotations"]]
    assert "<b>entropy (nats)</b>" in names


def test_lower_case_mask_is_the_mask_token(tiny_lab):
    a = tiny_lab.analyze("the [mask] sat on the [Mask]")
    assert a.tokens.count("[MASK]") == 2
    assert [p.position for p in a.mlm] == [i for i, t in enumerate(a.tokens) if t == "[MASK]"]


def test_the_open_heads_codes_are_its_slice_of_every_heads(tiny_lab):
    """The page draws the open head from ``open_head_codes`` before every head's codes arrive: they must be
    exactly that head's weights (layer 2, head 3 here, not the first head's)."""
    from bertviz_lab.figures.payload import open_head_codes

    a = tiny_lab.analyze("the cat sat on the mat")
    meta, codes = view_payload(a, ViewOptions(layer=1, head=2))
    first = np.frombuffer(open_head_codes(meta, codes), dtype="<u2").reshape(len(a.tokens), len(a.tokens))
    np.testing.assert_allclose(first * meta["scales"][1][2] / 65535, a.attention[1, 2], atol=1e-4)
    assert not np.allclose(first * meta["scales"][0][0] / 65535, a.attention[0, 0], atol=1e-3)


@pytest.mark.parametrize("bits, n", [(16, 7), (8, CODE16_MAX_TOKENS + 3)])
def test_codes_are_each_weight_times_its_heads_factor_rounded(bits, n):
    """The head-by-head quantiser gives, byte for byte, the whole-array formula: rint(w * (2**bits - 1) / the
    head's largest weight), a head of zeros scaled by 1 (all codes 0), little-endian."""
    rng = np.random.default_rng(1)
    weights = rng.random((2, 3, n, n)).astype(np.float32)  # (layers, heads, query, key)
    weights[1, 2] = 0.0
    codes, scales = quantise(weights, bits)
    top = 2 ** bits - 1
    tops = weights.max(axis=(-1, -2))
    tops[tops <= 0] = 1.0
    expected = np.rint(weights * (top / tops)[..., None, None]).astype("<u2" if bits == 16 else np.uint8)
    assert codes == expected.tobytes()
    assert scales.dtype == np.float64 and scales[1, 2] == 1.0 and scales[0, 0] == tops[0, 0]
    assert max(codes[-(n * n * (bits // 8)):]) == 0  # the zero head


def test_the_drop_ins_codes_are_each_weight_times_127_over_its_heads_largest_rounded():
    """light_codes (the BertViz drop-in's deflated 7-bit codes) shares the head-by-head quantiser: byte for byte
    rint(w * 127 / the head's largest weight), a head of zeros scaled by 1."""
    import zlib

    from bertviz_lab.figures.payload import LIGHT_LEVELS, light_codes

    rng = np.random.default_rng(2)
    weights = rng.random((2, 3, 9, 9)).astype(np.float32)  # (layers, heads, query, key)
    weights[0, 1] = 0.0
    deflated, scales = light_codes(weights)
    tops = weights.max(axis=(-1, -2))
    tops[tops <= 0] = 1.0
    expected = np.rint(weights * (LIGHT_LEVELS / tops)[..., None, None]).astype(np.uint8)
    assert zlib.decompress(deflated) == expected.tobytes()
    assert scales[0, 1] == 1.0 and scales[1, 0] == tops[1, 0]


def test_relation_answers_read_the_held_out_half_and_the_paired_interval():
    from bertviz_lab.figures.syntax import ANSWER_COLUMNS, relation_answers, relation_records

    nan = float("nan")
    best = pd.DataFrame([  # the in-sample head (2-1, 0.9) differs from the held-out one: the table shows held out
        {"relation": "det", "count": 40, "best_head": "2-1", "heldout_head": "3-9", "heldout_direction": "dep->head",
         "heldout_accuracy": 0.8, "heldout_ci_low": 0.7, "heldout_ci_high": 0.9, "heldout_baseline_offset": 1,
         "heldout_baseline_accuracy": 0.6, "heldout_difference_ci_low": 0.05, "heldout_difference_ci_high": 0.3},
        {"relation": "amod", "count": 30, "best_head": "1-1", "heldout_head": "2-5", "heldout_direction": "head->dep",
         "heldout_accuracy": 0.5, "heldout_ci_low": 0.3, "heldout_ci_high": 0.7, "heldout_baseline_offset": -1,
         "heldout_baseline_accuracy": 0.55, "heldout_difference_ci_low": -0.2, "heldout_difference_ci_high": 0.1},
        {"relation": "obl", "count": 12, "best_head": "1-2", "heldout_head": nan, "heldout_direction": nan,
         "heldout_accuracy": nan, "heldout_ci_low": nan, "heldout_ci_high": nan, "heldout_baseline_offset": nan,
         "heldout_baseline_accuracy": nan, "heldout_difference_ci_low": nan, "heldout_difference_ci_high": nan}])
    table = relation_answers(best)
    assert list(table.columns) == list(ANSWER_COLUMNS)
    assert table.iloc[0].tolist() == ["det", 40, "layer 3, head 9 (dep->head)", "0.80 [0.70, 0.90]",
                                      "+1 (next word): 0.60", "above the baseline"]
    assert table.iloc[1].tolist() == ["amod", 30, "layer 2, head 5 (head->dep)", "0.50 [0.30, 0.70]",
                                      "-1 (previous word): 0.55", "not distinguishable from the baseline"]
    assert table.iloc[2].tolist() == ["obl", 12, "—", "—", "—", "too few arcs for an interval"]
    assert relation_records(best)[2]["best_head"] is None


def test_one_inputs_faithfulness_rows_that_tie_share_a_row():
    from bertviz_lab.app.result_titles import collapsed_ties

    table = pd.DataFrame({"ranking": ["a", "b", "c", "d"], "rho": [0.6, 0.6, 0.6, 0.2],
                          "aopc": [0.05, 0.05, 0.07, 0.05], "suff": [0.0, 0.0, 0.0, 0.0]})
    out = collapsed_ties(table)  # a and b tie on every score; c differs in AOPC; d in rho
    assert out["ranking"].tolist() == ["a = b", "c", "d"]
    assert out.iloc[0].tolist() == ["a = b", 0.6, 0.05, 0.0]
