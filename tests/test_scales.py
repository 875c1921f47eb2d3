"""Scales that say what they show (issue 43, item 4): every colour bar of every server-drawn figure is
titled with its quantity and unit; the page-wide "fixed 0–1 / per head" choice reaches every attention
map, fixed for weights whose rows sum to 1 and per head for raw norms; the payload carries what the
page's own heatmap needs for either scale and the line under it."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bertviz_lab.attention.sources import with_source
from bertviz_lab.bert.sources.source_registry import SOURCES
from bertviz_lab.figures import analysis as views
from bertviz_lab.figures import interventions as intervention_views
from bertviz_lab.figures import qk as qk_views
from bertviz_lab.figures import syntax as syntax_views
from bertviz_lab.figures.attention import explain_figure, lens_figure
from bertviz_lab.figures.base import QUANTITIES, ROWS_SUM_TO_ONE, SCALES, resolve_scale
from bertviz_lab.figures.payload import ROWS_ABOUT, view_payload
from bertviz_lab.interventions import compare, make_intervention
from bertviz_lab.lens import mlm_lens
from bertviz_lab.syntax.scoring import score_treebank
from bertviz_lab.syntax.summary import Settings, compare_checkpoints, summarise
from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

TEXT = "the cat sat on the [MASK] ."
ATTENTION = "attention weight (0–1, rows sum to 1)"


def plain(title: str) -> str:
    """A colour bar title as one line (the figures break it with <br> to run along the bar)."""
    return title.replace("<br>", " ")


def colour_bars(fig: dict) -> list[tuple[int, str]]:
    """(trace index, title) of every colour bar a figure shows: heatmaps show one unless told not to
    (Plotly's default), scatter markers when they ask for one."""
    bars = []
    for i, trace in enumerate(fig["data"]):
        if trace.get("type") == "heatmap" and trace.get("showscale", True):
            bars.append((i, plain(trace.get("colorbar", {}).get("title", {}).get("text", ""))))
        marker = trace.get("marker") or {}
        if marker.get("showscale"):
            bars.append((i, plain(marker.get("colorbar", {}).get("title", {}).get("text", ""))))
    return bars


def switch_titles(fig: dict) -> list[str]:
    """The colour bar titles the figure's own scale buttons set."""
    return [plain(t) for menu in fig["layout"].get("updatemenus", []) for button in menu["buttons"]
            for t in button["args"][0].get("colorbar.title.text", [])]


@pytest.fixture(scope="module")
def analysis(tiny_lab):
    return tiny_lab.analyze(TEXT)


@pytest.fixture(scope="module")
def syntax_summary(tiny_lab):
    sentences = read_conllu(SAMPLE_TREEBANK)[:6]
    scores = score_treebank(tiny_lab, sentences)
    settings = Settings(resamples=20, min_arcs=1)
    return summarise(scores, settings=settings), compare_checkpoints(scores, scores, settings=settings)


def every_figure(lab, analysis, syntax_summary) -> dict[str, dict]:
    """Each server figure function's output for one small analysis (and a small syntax run)."""
    opts = views.ViewOptions(layer=1, head=2)
    normed = with_source(lab, analysis, "norm")
    comparison = compare(lab, TEXT, make_intervention("left-only", sinks="strict"))
    summary, difference = syntax_summary
    relation = str(summary.best_heads.relation.iloc[0])
    n = analysis.n_layers * analysis.n_heads
    rng = np.random.default_rng(0)
    points = [{"token": t, "sentence": 0, "position": i, "segment": 0, "value_norm": 1.0 + i}
              for i, t in enumerate(analysis.tokens)]
    attribution = SimpleNamespace(scores={"erasure": [0.2, -0.1], "gradient x input": [0.05, 0.3]}, context=[1, 2],
                                  target="mat", position=5)
    agree = pd.DataFrame({"model": ["m", "m"], "share": [1.0, 0.5], "head": ["1-2", "2-1"],
                          "direction": ["dep->head", "head->dep"], "relation": ["det", "nsubj"],
                          "treebanks_won": [2, 1], "treebanks": [2, 2]})
    figures = {
        "single head": views.single_head(analysis, opts)[0],
        "single head, per head": views.single_head(analysis, opts, scale="per-head")[0],
        "single head, norm": views.single_head(normed, opts)[0],
        "overview": views.overview(analysis),
        "overview, per head": views.overview(analysis, scale="per-head"),
        "overview, norm": views.overview(normed),
        "aggregates": views.aggregates(analysis, opts),
        "aggregates, per head": views.aggregates(analysis, opts, scale="per-head"),
        "aggregates, norm": views.aggregates(normed, opts),
        "head summary": views.summary(analysis),
        "head summary, per head": views.summary(analysis, scale="per-head"),
        "lens": lens_figure(mlm_lens(lab, analysis)),
        "explain": explain_figure(attribution, analysis.tokens),
        "comparison": intervention_views.comparison_figure(comparison, opts),
        "comparison, per head": intervention_views.comparison_figure(comparison, opts, scale="per-head"),
        "js divergence": intervention_views.js_figure(comparison),
        "offsets": intervention_views.offsets_figure(comparison, 1),
        "ablation": intervention_views.ablation_figure(rng.normal(size=(analysis.n_layers, analysis.n_heads))),
        "patching": intervention_views.patching_figure(rng.normal(size=(analysis.n_layers, analysis.n_heads)),
                                                       "are", "is"),
        "positions": intervention_views.position_figure(np.eye(4), np.eye(4)),
        "relation heatmap": syntax_views.relation_heatmap(summary, relation, "dep->head"),
        "relation grid": syntax_views.relation_figure(summary, relation),
        "uuas": syntax_views.uuas_figure(summary),
        "syntax difference": syntax_views.difference_figure(difference, relation, "dep->head", analysis.n_layers,
                                                            analysis.n_heads),
        "syntax statistics": syntax_views.stats_figure(summary),
        "agreement": syntax_views.agreement_figure(agree, "m"),
        "qk space": qk_views.qk_figure(rng.normal(size=(2 * len(points), 2)), points, 0, 0, color_by="value_norm"),
        "head similarity": qk_views.head_similarity_figure(rng.random((n, n)), analysis.n_layers, analysis.n_heads, 1),
    }
    return figures


def test_every_colour_bar_of_every_figure_is_titled(tiny_lab, analysis, syntax_summary):
    figures = every_figure(tiny_lab, analysis, syntax_summary)
    for name, fig in figures.items():
        bars = colour_bars(fig)
        assert bars, f"{name}: no colour bar at all"
        for index, title in bars:
            assert title.strip(), f"{name}: trace {index}'s colour bar has no title"
        assert all(t.strip() for t in switch_titles(fig)), f"{name}: a scale button empties a colour bar's title"
    bars = {name: [title for _, title in colour_bars(fig)] for name, fig in figures.items()}
    assert bars["single head"] == [ATTENTION]
    assert bars["single head, per head"] == [ATTENTION + " — scaled to this head's max"]
    assert bars["single head, norm"] == ["‖α f(x)‖: vector norm (not normalised) — scaled to this head's max"]
    assert bars["head summary"] == ["entropy (nats) — scaled to this panel's max",
                                    "share of a query's weight (0–1)"]
    assert bars["comparison"] == [ATTENTION, "Δ attention (intervened − baseline)"]
    assert bars["js divergence"] == ["JS divergence (nats), mean over queries"]
    assert bars["patching"] == ["Δ logit difference (are − is)"]
    assert bars["positions"] == ["cosine similarity (−1 to 1)"] * 2
    assert bars["uuas"] == ["UUAS (share of gold arcs in the tree, 0–1)"]
    assert bars["syntax difference"] == ["Δ accuracy (B − A)"]
    assert bars["head similarity"] == ["JS divergence (nats): 0 = the heads attend alike"]
    assert bars["aggregates"] == [ATTENTION, "rollout or flow weight (0–1, rows sum to 1)"]  # flow: up to 24 tokens


def test_fixed_scale_reads_attention_on_0_to_1_and_per_head_on_each_heads_max(tiny_lab, analysis):
    opts = views.ViewOptions(layer=1, head=2)
    head = analysis.attention[1, 2]
    assert views.single_head(analysis, opts)[0]["data"][0]["zmax"] == 1.0  # auto: attention rows sum to 1
    assert views.single_head(analysis, opts, scale="per-head")[0]["data"][0]["zmax"] == pytest.approx(head.max())
    normed = with_source(tiny_lab, analysis, "norm")
    # raw norms: per head by default; fixed is one scale for every head (the largest norm of any head)
    assert views.single_head(normed, opts)[0]["data"][0]["zmax"] == pytest.approx(normed.attention[1, 2].max())
    fixed = views.single_head(normed, opts, scale="fixed")[0]["data"][0]
    assert fixed["zmax"] == pytest.approx(normed.attention.max()) and fixed["zmax"] != 1.0
    assert plain(fixed["colorbar"]["title"]["text"]).endswith("— one scale for every head")
    grid = views.aggregates(analysis, opts)
    assert [t["zmax"] for t in grid["data"]] == [1.0] * len(grid["data"])
    buttons = grid["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in buttons] == ["fixed 0–1", "per-panel scales"]
    assert buttons[1]["args"][0]["zmax"][0] == pytest.approx(head.max())  # the head's own max
    per_head = views.aggregates(analysis, opts, scale="per-head")["data"]
    assert per_head[0]["zmax"] == pytest.approx(max(float(head.max()), float(analysis.attention[1].mean(0).max()),
                                                    float(analysis.attention.mean(1).mean(0).max())), rel=1e-5)
    overview = views.overview(analysis)
    assert overview["data"][1]["zmax"] == 1.0 and "every head on one scale, 0–1" in overview["layout"]["title"]["text"]
    assert "each head scaled to its max" in views.overview(analysis, scale="per-head")["layout"]["title"]["text"]
    shares = views.summary(analysis)["data"]
    assert [t["zmax"] for t in shares[1:]] == [1.0] * (len(shares) - 1)  # entropy (first) keeps its range


def test_the_scale_choice_resolves_per_source():
    assert SCALES == {"fixed 0–1": "fixed", "per head": "per-head"}
    assert resolve_scale("auto", "attention") == "fixed" and resolve_scale("auto", "norm") == "per-head"
    assert resolve_scale("auto", "flow") == "fixed" and resolve_scale("auto", "decompx") == "per-head"
    assert resolve_scale("per head", "attention") == "per-head" and resolve_scale("fixed", "norm") == "fixed"
    with pytest.raises(ValueError, match="fixed, per-head, auto"):
        resolve_scale("log", "attention")


def test_every_source_has_a_quantity_a_row_line_and_rows_that_sum_to_one_where_said(tiny_lab):
    assert set(QUANTITIES) == set(ROWS_ABOUT) == set(SOURCES)
    assert ROWS_SUM_TO_ONE <= set(SOURCES)
    analysis = tiny_lab.analyze("the cat sat on the mat")
    for name in SOURCES:
        weights = with_source(tiny_lab, analysis, name).attention
        sums_to_one = bool(np.allclose(weights.sum(-1), 1.0, atol=1e-3))
        assert sums_to_one == (name in ROWS_SUM_TO_ONE), name
        assert ("rows sum to 1" in QUANTITIES[name]) == sums_to_one, name


def test_the_payload_carries_both_scales_the_line_under_the_map_and_token_positions(tiny_lab):
    a = tiny_lab.analyze("unbelievable cats sat")
    meta, _ = view_payload(a, views.ViewOptions())
    assert meta["scale"] == "fixed" and meta["fixed_max"] == 1.0 and meta["source"] == "attention"
    assert plain(meta["colorbar_titles"]["fixed"]) == ATTENTION
    assert plain(meta["colorbar_titles"]["per-head"]) == ATTENTION + " — scaled to this head's max"
    assert meta["about"].startswith("Each row sums to 1") and "attention sink" in meta["about"]
    assert meta["token_index"] == list(range(len(a.tokens)))
    assert view_payload(a, views.ViewOptions(), scale="per-head")[0]["scale"] == "per-head"
    words, _ = view_payload(a, views.ViewOptions(word_level=True, hide_special=True))
    groups = {}
    for position, word in enumerate(a.word_ids):
        if word is not None:
            groups.setdefault(word, position)
    assert words["token_index"] == [groups[w] for w in sorted(groups)]  # each word's first piece
    normed, _ = view_payload(with_source(tiny_lab, a, "norm"), views.ViewOptions())
    assert normed["scale"] == "per-head" and normed["fixed_max"] == pytest.approx(max(map(max, normed["scales"])))
    assert normed["about"].startswith("Each row is a query token") and "do not sum to 1" in normed["about"]


def test_the_lens_says_what_its_rank_is(tiny_lab, analysis):
    lens = mlm_lens(tiny_lab, analysis)
    title = lens_figure(lens)["layout"]["title"]["text"].replace("<br>", " ").replace("<sup>", "").replace("</sup>", "")
    first = lens[0].layers[0]
    assert (f"answer #{first.final_rank} = the rank of the final answer '{lens[0].final}' among layer 1's predictions "
            "(#1 = that layer's top word)") in title
