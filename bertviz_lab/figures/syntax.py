"""Figures and tables of a syntax run: per-relation heatmaps, the best heads with error bars
beside the held-out, baseline and null-model accuracies, tree-decoding UUAS, the difference of
two checkpoints, and the gold-vs-attention arcs of one sentence."""
from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from ..attention import HEAD_STATS
from ..naming import head_labels, layer_head, layer_head_file, layer_labels
from ..syntax.predictors import best_words
from ..syntax.scoring import DIRECTIONS, live_arcs
from ..syntax.summary import SyntaxSummary
from ..treebank import Sentence
from .base import DIVERGING, SEQUENTIAL, Figure, figure, heatmap_grid, layer_head_figure

TABLE_COLUMNS = ["relation", "count", "best_head", "direction", "accuracy", "ci_low", "ci_high", "heldout_head",
                 "heldout_accuracy", "baseline_offset", "baseline_accuracy", "p_value_in_sample",
                 "heldout_difference", "heldout_p_value", "heldout_verdict", "null_best_head",
                 "null_accuracy", "tree_recall", "chain_recall"]


def markdown_text(text: str) -> str:
    """User text (a treebank's words and labels, file names) made inert in Markdown and HTML: tags
    become entities, and the characters that open emphasis, code, links, images and tables are escaped."""
    return re.sub(r"([\\`*_\[\]|~])", r"\\\1", html.escape(str(text), quote=False))


def plotly_text(text: str) -> str:
    """User text for a Plotly label: its tags (<b>, <a href>) shown as text, not rendered."""
    return html.escape(str(text), quote=False)


def relation_heatmap(summary: SyntaxSummary, relation: str, direction: str) -> Figure:
    values = summary.accuracy_map(relation, direction)
    row = summary.best_heads[summary.best_heads.relation == relation]
    base = f"; best fixed offset {offset_text(int(row.baseline_offset.iloc[0]))} scores {row.baseline_accuracy.iloc[0]:.2f}" \
        if len(row) else ""
    total = int(summary.head_scores[(summary.head_scores.relation == relation)].total.iloc[0])
    return layer_head_figure(values, f"{plotly_text(relation)} ({direction}, n={total}): accuracy per head{base}",
                             f"syntax-{relation}-{direction.replace('->', '-')}", value_label="accuracy")


def uuas_figure(summary: SyntaxSummary) -> Figure:
    chain = summary.uuas[summary.uuas.predictor == "right-branching"].uuas.iloc[0]
    punct = summary.settings.uuas_punct
    return layer_head_figure(summary.uuas_map(), "Tree decoding (Htut et al. 2019): UUAS of each head's maximum "
                             f"spanning tree; right-branching baseline {chain:.2f}; punctuation arcs {punct}d",
                             "syntax-uuas",
                             value_label="UUAS")


def best_heads_table(summary: SyntaxSummary) -> pd.DataFrame:
    table = summary.best_heads[[c for c in TABLE_COLUMNS if c in summary.best_heads]].copy()
    return table.round(3)


def best_heads_figure(summary: SyntaxSummary) -> Figure:
    """Per relation: best head (in-sample) and held-out, the offset baseline and the null model's
    best head, each with its 95% bootstrap interval as an error bar."""
    best = summary.best_heads
    series = [("best head (in-sample)", "accuracy", "ci_low", "ci_high", "#2b6cb0"),
              ("best head, held-out", "heldout_accuracy", "heldout_ci_low", "heldout_ci_high", "#63b3ed"),
              ("best fixed offset", "baseline_accuracy", "baseline_ci_low", "baseline_ci_high", "#a0aec0"),
              ("null model's best head (mean over seeds)", "null_accuracy", "null_ci_low", "null_ci_high", "#e53e3e")]
    data = []
    for name, col, lo, hi, colour in series:
        if best[col].isna().all():
            continue
        y = best[col].to_numpy(dtype=float)
        data.append({"type": "bar", "name": name, "x": [plotly_text(r) for r in best.relation], "y": y.tolist(),
                     "marker": {"color": colour},
                     "error_y": {"type": "data", "symmetric": False, "array": (best[hi] - y).tolist(),
                                 "arrayminus": (y - best[lo]).tolist(), "thickness": 1.2, "width": 3},
                     "hovertemplate": f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>"})
    layout = {"title": {"text": f"Best head per relation with 95% intervals ({summary.checkpoint.name})"},
              "barmode": "group", "height": 420, "yaxis": {"title": {"text": "accuracy"}, "range": [0, 1.05]},
              "xaxis": {"tickangle": -45}, "legend": {"orientation": "h", "y": 1.12}}
    return figure(data, layout, "syntax-best-heads")


def difference_figure(compare: pd.DataFrame, relation: str, direction: str, layers: int, heads: int) -> Figure:
    rows = compare[(compare.relation == relation) & (compare.direction == direction)].sort_values(["layer", "head"])
    values = rows.difference.to_numpy().reshape(layers, heads)
    fig = layer_head_figure(values, f"{plotly_text(relation)} ({direction}): accuracy of B minus A per head",
                            "syntax-difference",
                            diverging=True, value_label="B - A")
    fig["data"][0]["colorscale"] = DIVERGING
    return fig


def offset_text(offset: int) -> str:
    """A signed word offset with its direction: '+1 (next word)', '-2 (2 words left)'."""
    if offset == 0:
        return "0 (the word itself)"
    side = ("next word" if offset == 1 else f"{offset} words right") if offset > 0 else \
        ("previous word" if offset == -1 else f"{-offset} words left")
    return f"{offset:+d} ({side})"


def _arc(x0: float, x1: float, up: bool, colour: str, width: float, dash: str = "solid") -> dict:
    height = 0.35 + 0.22 * abs(x1 - x0)
    y = height if up else -height
    return {"type": "path", "path": f"M {x0},0 Q {(x0 + x1) / 2},{2 * y} {x1},0",
            "line": {"color": colour, "width": width, "dash": dash}}


def _arrowhead(x0: float, x1: float, up: bool, colour: str) -> dict:
    """An arrowhead where the arc from x0 lands on x1 (the annotation's arrow along the curve's end)."""
    height = 0.35 + 0.22 * abs(x1 - x0)
    cy = 2 * (height if up else -height)  # the quadratic Bezier's control point is ((x0 + x1) / 2, cy)
    t = 0.85  # a point just before the end, on the curve
    bx = (1 - t) ** 2 * x0 + 2 * t * (1 - t) * (x0 + x1) / 2 + t ** 2 * x1
    by = 2 * t * (1 - t) * cy
    return {"x": x1, "y": 0.08 if up else -0.08, "ax": bx, "ay": by, "xref": "x", "yref": "y", "axref": "x",
            "ayref": "y", "showarrow": True, "arrowhead": 2, "arrowsize": 1.2, "arrowwidth": 1.5,
            "arrowcolor": colour, "text": ""}


def arcs_figure(sentence: Sentence, word_attn: np.ndarray, layer: int, head: int) -> tuple[Figure, str]:
    """Gold dependency arcs above the words; the head's strongest word-to-word attention below
    (green where it recovers a gold arc in either direction). The summary lists, per gold arc,
    which of Clark's two predictors recovers it."""
    n = len(sentence.words)
    predicted = live_arcs(word_attn, layer, head)
    attended_by = best_words(np.swapaxes(word_attn[layer, head], -1, -2))  # Clark's head->dep predictor
    gold = {(d, sentence.heads[d] - 1): sentence.relations[d] for d in range(n) if sentence.heads[d] > 0}
    undirected = {frozenset(k) for k in gold}
    shapes, annotations, lines = [], [], []
    for (d, h), rel in gold.items():
        shapes.append(_arc(d, h, True, "#2b6cb0", 2))
        annotations.append(_arrowhead(h, d, True, "#2b6cb0"))  # a dependency arc points from head to dependent
        annotations.append({"x": (d + h) / 2, "y": 0.35 + 0.22 * abs(d - h) + 0.05, "text": plotly_text(rel),
                            "showarrow": False,
                            "font": {"size": 11, "color": "#2b6cb0"}, "yanchor": "bottom"})
    for src, dst in predicted:
        hit = frozenset((src, dst)) in undirected
        shapes.append(_arc(src, dst, False, "#2f855a" if hit else "#a0aec0", 2.5 if hit else 1.2,
                           "solid" if hit else "dot"))
        annotations.append(_arrowhead(src, dst, False, "#2f855a" if hit else "#a0aec0"))  # to the attended word
    for (d, h), rel in gold.items():
        dep_to_head = predicted[d][1] == h  # d attends most to its head
        head_to_dep = attended_by[d] == h  # the word attending most to d is its head
        mark = "✓" if dep_to_head or head_to_dep else "✗"
        how = " and ".join(x for x, ok in zip(DIRECTIONS, (dep_to_head, head_to_dep)) if ok) or "not recovered"
        lines.append(f"- {mark} **{markdown_text(rel)}**: {markdown_text(sentence.words[d])} → "
                     f"{markdown_text(sentence.words[h])} ({how})")
    recovered = sum(1 for x in lines if x.startswith("- ✓"))
    span = max(0.35 + 0.22 * (n - 1), 1.0) * 2
    data = [{"type": "scatter", "mode": "text+markers", "x": list(range(n)), "y": [0] * n,
             "text": [plotly_text(w) for w in sentence.words], "textposition": "middle center", "marker": {"size": 1, "color": "white"},
             "textfont": {"size": 14, "color": "#111"}, "hoverinfo": "text", "showlegend": False}]
    layout = {"title": {"text": f"Gold arcs head → dependent (above) vs {layer_head(layer, head, capital=False)}: each "
                                "word → its most-attended word (below; green = a gold arc)"},
              "shapes": shapes, "annotations": annotations, "height": 520,
              "xaxis": {"visible": False, "range": [-0.8, n - 0.2]},
              "yaxis": {"visible": False, "range": [-span * 0.55, span * 0.6]},
              "margin": {"l": 20, "r": 20, "t": 70, "b": 20}}
    summary = f"{layer_head(layer, head)} recovers {recovered} of {len(gold)} gold arcs:\n\n" + "\n".join(lines)
    return figure(data, layout, f"arcs-{layer_head_file(layer, head)}"), summary


def relation_figure(summary: SyntaxSummary, relation: str) -> Figure:
    panels = [(direction, summary.accuracy_map(relation, direction)) for direction in DIRECTIONS]
    row = summary.best_heads[summary.best_heads.relation == relation]
    base = f" (best fixed offset {offset_text(int(row.baseline_offset.iloc[0]))}: {row.baseline_accuracy.iloc[0]:.2f})" \
        if len(row) else ""
    return heatmap_grid(panels, head_labels(summary.heads), layer_labels(summary.layers),
                        title=f"{plotly_text(relation)}: accuracy per head{base}", filename="syntax-relation", columns=2,
                        height_per_row=40 * summary.layers + 60, hover="layer %{y}, head %{x}<br>accuracy %{z:.3f}",
                        x_title="head", y_title="layer", zmax_shared=True)


def stats_figure(summary: SyntaxSummary) -> Figure:
    stats = summary.general_stats
    return heatmap_grid([(k, stats[k]) for k in HEAD_STATS if k in stats], head_labels(summary.heads),
                        layer_labels(summary.layers),
                        title="General head statistics over the treebank (mean over sentences)",
                        filename="head-statistics", columns=4, height_per_row=32 * summary.layers + 80,
                        hover="layer %{y}, head %{x}<br>%{z:.3f}", x_title="head", y_title="layer")


def head_order(label: str) -> tuple:
    """"3-5 dep->head" sorts by layer, head, then direction; anything else first."""
    found = re.match(r"(\d+)-(\d+)(.*)", str(label))
    return (int(found[1]), int(found[2]), found[3]) if found else (0, 0, str(label))


def agreement_figure(agree: pd.DataFrame, model: str) -> Figure:
    """Relation x head and direction: the share of treebanks (with enough arcs of the relation) in
    which that held-out head is the relation's best; relations found in one treebank only are left out."""
    rows = agree[(agree.model == model) & agree.share.notna()].copy()
    rows["head"] = rows["head"].astype(str) + " " + rows["direction"].astype(str)
    relations = sorted(rows.relation.unique())
    heads = sorted(rows["head"].unique(), key=head_order)
    grid = rows.pivot_table(index="relation", columns="head", values="share", fill_value=0.0).reindex(
        index=relations, columns=heads, fill_value=0.0)
    won = rows.pivot_table(index="relation", columns="head", values="treebanks_won", fill_value=0).reindex(
        index=relations, columns=heads, fill_value=0)
    total = rows.groupby("relation").treebanks.max().reindex(relations)
    text = [[f"{int(won.loc[r, h])} of {int(total[r])} treebanks" for h in heads] for r in relations]
    trace = {"type": "heatmap", "z": grid.to_numpy().tolist(), "x": [str(h) for h in heads],
             "y": [plotly_text(r) for r in relations], "text": text, "colorscale": SEQUENTIAL, "zmin": 0, "zmax": 1,
             "hovertemplate": "%{y}, head %{x}<br>best in %{text}<extra></extra>", "colorbar": {"thickness": 12}}
    layout = {"title": {"text": f"Same best head across treebanks: {plotly_text(model)}"},
              "height": 140 + 22 * max(len(relations), 4),
              "xaxis": {"type": "category", "title": {"text": "head (layer-head)"}},
              "yaxis": {"type": "category", "autorange": "reversed", "automargin": True}}
    return figure([trace], layout, "head-agreement")
