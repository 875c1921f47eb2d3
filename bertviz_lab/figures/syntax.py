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
from ..syntax.directions import CLARK_DIRECTIONS, normalize_direction
from ..syntax.predictors import best_words
from ..syntax.scoring import DIRECTIONS, live_arcs
from ..syntax.summary import SyntaxSummary
from ..treebank import Sentence
from .base import DIVERGING, SEQUENTIAL, Figure, GridStyle, colorbar_title, figure, heatmap_grid, layer_head_figure

ANSWER_COLUMNS = ("relation", "arcs", "best head (chosen on half the sentences)",
                  "its accuracy on the other half [95% interval]", "baseline on that half: best fixed offset",
                  "verdict")
ANSWER_NOTE = ("One row per relation: the head that finds the relation best, chosen on half the sentences; how "
               "often it finds it on the other half (the share of arcs, with a 95% bootstrap interval over "
               "sentences); the best fixed offset (e.g. \"the next word\") chosen and scored the same way; and "
               "the verdict the paired interval of head minus offset gives. Every number, in sample and held out, "
               "with the random-weights floor and the head ensembles, is in the full CSV.")


def markdown_text(text: str) -> str:
    """User text (a treebank's words and labels, file names) made inert in Markdown and HTML: tags
    become entities, and the characters that open emphasis, code, links, images and tables are escaped."""
    return re.sub(r"([\\`*_\[\]|~])", r"\\\1", html.escape(str(text), quote=False))


def plotly_text(text: str) -> str:
    """User text for a Plotly label: its tags (<b>, <a href>) shown as text, not rendered."""
    return html.escape(str(text), quote=False)


def relation_heatmap(summary: SyntaxSummary, relation: str, direction: str) -> Figure:
    """Every head's accuracy on one relation, read as one of Clark's directions (dep->head, head->dep or
    an alias of them; anything else is a ValueError naming the choices)."""
    direction = normalize_direction(direction, CLARK_DIRECTIONS)
    values = summary.accuracy_map(relation, direction)
    row = summary.best_heads[summary.best_heads.relation == relation]
    base = f"; best fixed offset {offset_text(int(row.baseline_offset.iloc[0]))} scores {row.baseline_accuracy.iloc[0]:.2f}" \
        if len(row) else ""
    total = int(summary.head_scores[(summary.head_scores.relation == relation)].total.iloc[0])
    return layer_head_figure(values, f"{plotly_text(relation)} ({direction}, n={total}): accuracy per head{base}",
                             f"syntax-{relation}-{direction.replace('->', '-')}", value_label="accuracy",
                             colorbar="accuracy (share of arcs found, 0–1)")


def uuas_figure(summary: SyntaxSummary) -> Figure:
    chain = summary.uuas[summary.uuas.predictor == "right-branching"].uuas.iloc[0]
    punct = summary.settings.uuas_punct
    return layer_head_figure(summary.uuas_map(), "Tree decoding (Htut et al. 2019): UUAS of each head's maximum "
                             f"spanning tree; right-branching baseline {chain:.2f}; punctuation arcs {punct}d",
                             "syntax-uuas", value_label="UUAS", colorbar="UUAS (share of gold arcs in the tree, 0–1)")


def short_verdict(low: float, high: float) -> str:
    """The verdict of the paired interval [low, high] of head minus baseline, in a table cell's words
    (``conclusions.verdict`` says the same in a sentence)."""
    if pd.isna(low) or pd.isna(high):
        return "too few arcs for an interval"
    if low > 0:
        return "above the baseline"
    if high < 0:
        return "below the baseline"
    return "not distinguishable from the baseline"


def relation_records(best: pd.DataFrame) -> list[dict]:
    """Per relation, the held-out figures a person reads (issue 60): the head chosen on half the sentences, its
    accuracy on the other half with its 95% interval, the best fixed offset chosen and scored the same way, and the
    verdict of the paired interval of head minus offset. Nothing shown was chosen on the sentences it is scored on.
    ``None`` where a relation has too few arcs in a half. The CLI's --json and the tables below share these."""
    records = []
    for _, row in best.iterrows():
        held = not pd.isna(row.get("heldout_accuracy", np.nan))
        low, high = row.get("heldout_difference_ci_low", np.nan), row.get("heldout_difference_ci_high", np.nan)
        records.append({"relation": str(row["relation"]), "arcs": int(row["count"]),
                        "best_head": str(row["heldout_head"]) if held else None,
                        "direction": str(row["heldout_direction"]) if held else None,
                        **{k: float(row[f"heldout_{k}"]) if held else None for k in ("accuracy", "ci_low", "ci_high")},
                        "baseline_offset": int(row["heldout_baseline_offset"]) if held else None,
                        "baseline_accuracy": float(row["heldout_baseline_accuracy"]) if held else None,
                        "verdict": short_verdict(low, high)})
    return records


def relation_answers(best: pd.DataFrame | list[dict]) -> pd.DataFrame:
    """``relation_records`` (or best_heads, whose records they are) as a table in plain headers (ANSWER_COLUMNS),
    one short row per relation."""
    def cells(r: dict) -> tuple:
        if r["best_head"] is None:
            return r["relation"], r["arcs"], "—", "—", "—", r["verdict"]
        layer, head = r["best_head"].split("-")
        return (r["relation"], r["arcs"], f"layer {layer}, head {head} ({r['direction']})",
                f"{r['accuracy']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]",
                f"{offset_text(r['baseline_offset'])}: {r['baseline_accuracy']:.2f}", r["verdict"])
    records = best if isinstance(best, list) else relation_records(best)
    return pd.DataFrame([cells(r) for r in records], columns=list(ANSWER_COLUMNS))


def best_heads_figure(summary: SyntaxSummary) -> Figure:
    """Per relation: best head (in-sample) and held-out, the offset baseline and the null model's
    best head, each with its 95% bootstrap interval as an error bar."""
    best = summary.best_heads
    series = [("best head (in-sample)", "accuracy", "ci_low", "ci_high", "#2b6cb0"),
              ("best head, held-out", "heldout_accuracy", "heldout_ci_low", "heldout_ci_high", "#63b3ed"),
              ("best fixed offset", "baseline_accuracy", "baseline_ci_low", "baseline_ci_high", "#a0aec0"),
              ("null model's best head (mean over seeds)", "null_accuracy", "null_ci_low", "null_ci_high", "#e53e3e"),
              ("head ensemble (<= 4 heads), held-out", "ensemble_accuracy", "ensemble_ci_low", "ensemble_ci_high",
               "#2f855a")]
    data = []
    for name, col, lo, hi, colour in series:
        if col not in best or best[col].isna().all():
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
    direction = normalize_direction(direction, CLARK_DIRECTIONS)
    rows = compare[(compare.relation == relation) & (compare.direction == direction)].sort_values(["layer", "head"])
    values = rows.difference.to_numpy().reshape(layers, heads)
    fig = layer_head_figure(values, f"{plotly_text(relation)} ({direction}): accuracy of B minus A per head",
                            "syntax-difference",
                            diverging=True, value_label="B - A", colorbar="Δ accuracy (B − A)")
    fig["data"][0]["colorscale"] = DIVERGING
    return fig


def offset_text(offset: int) -> str:
    """A signed word offset with its direction: '+1 (next word)', '-2 (2 words left)'."""
    if offset == 0:
        return "0 (the word itself)"
    side = ("next word" if offset == 1 else f"{offset} words right") if offset > 0 else \
        ("previous word" if offset == -1 else f"{-offset} words left")
    return f"{offset:+d} ({side})"


ARC_BASE = 0.5  # arcs start and end this far above/below the words' line: arrowheads stay clear of the words
GOLD, MATCH, REVERSED, MISS = "#2b6cb0", "#2f855a", "#dd6b20", "#a0aec0"
ARC_LEGEND = ((GOLD, "solid", "gold arc (treebank)"), (MATCH, "solid", "predicted = a gold arc"),
              (REVERSED, "dash", "predicted = a gold arc reversed"), (MISS, "dot", "predicted, not a gold arc"))
LABEL_PX = 7.0  # width of one character of an arc label (11 px font), for keeping labels apart
ASSUMED_PLOT_PX = (1300.0, 420.0)  # the arcs plot's drawing area (full-width work tab); labels are spaced for it


def arc_height(span: int) -> float:
    """How high an arc over ``span`` words rises: logarithmic, so a 30-word arc does not flatten the short ones."""
    return 0.45 + 0.8 * float(np.log2(1 + abs(span)))


def _arc(x0: float, x1: float, up: bool, colour: str, width: float, dash: str = "solid") -> dict:
    sign = 1 if up else -1
    base, control = sign * ARC_BASE, sign * (ARC_BASE + 2 * arc_height(x1 - x0))  # the apex is at base + height
    return {"type": "path", "path": f"M {x0},{base} Q {(x0 + x1) / 2},{control} {x1},{base}",
            "line": {"color": colour, "width": width, "dash": dash}}


def arrowheads(arcs: list[tuple[float, float, bool, str]], n_words: int, y_span: float) -> dict:
    """One marker trace of arrowheads, one where each arc (x0 -> x1, above or below, colour) lands on x1: a
    triangle just before the arc's end, turned along the curve (its angle estimated for ``ASSUMED_PLOT_PX``), above
    (or below) the word rather than on it. One trace, not an annotation per arrow: Plotly lays out each annotation
    on its own, and 39 of them cost a typed sentence's parse ~170 ms in Chromium (benchmarks/bench_parse_browser.py)."""
    x_unit, y_unit = ASSUMED_PLOT_PX[0] / max(n_words, 1), ASSUMED_PLOT_PX[1] / y_span  # px per data unit
    xs, ys, angles, colours = [], [], [], []
    for x0, x1, up, colour in arcs:
        sign = 1 if up else -1
        base, control = sign * ARC_BASE, sign * (ARC_BASE + 2 * arc_height(x1 - x0))
        t = 0.94  # the marker's centre: a point just before the end, on the curve
        xs.append((1 - t) ** 2 * x0 + 2 * t * (1 - t) * (x0 + x1) / 2 + t ** 2 * x1)
        ys.append((1 - t) ** 2 * base + 2 * t * (1 - t) * control + t ** 2 * base)
        dx, dy = (x1 - (x0 + x1) / 2) * x_unit, (base - control) * y_unit  # the tangent at the end, in px, y up
        angles.append(round(float(np.degrees(np.arctan2(dx, dy))), 1))  # clockwise from a triangle pointing up
        colours.append(colour)
    return {"type": "scatter", "mode": "markers", "x": xs, "y": ys, "name": "arrowheads", "showlegend": False,
            "hoverinfo": "skip", "marker": {"symbol": "triangle-up", "size": 9, "angle": angles, "color": colours}}


def spaced_labels(labels: list[tuple[float, float, str]], n_words: int, y_span: float) -> list[float]:
    """Heights for arc labels (x, y, text) so that no two overlap: a label whose box meets one already
    placed moves up by a label's height until it is free (boxes estimated for ``ASSUMED_PLOT_PX``)."""
    x_unit = ASSUMED_PLOT_PX[0] / max(n_words, 1)  # px per word
    y_unit = ASSUMED_PLOT_PX[1] / y_span  # px per data unit
    height = 15.0 / y_unit
    placed: list[tuple[float, float, float]] = []  # (left, right, bottom) in data units
    out = [0.0] * len(labels)
    for i in sorted(range(len(labels)), key=lambda k: labels[k][1]):
        x, y, text = labels[i]
        half = (len(text) * LABEL_PX + 6) / 2 / x_unit
        while any(x - half < right and left < x + half and abs(y - bottom) < height for left, right, bottom in placed):
            y += height
        placed.append((x - half, x + half, y))
        out[i] = y
    return out


REFERENCES = {"gold": ("gold arc (treebank)", "gold arcs", "gold arc", "{k} of {n} gold arcs"),
              "parser": ("parser's arc (not gold)", "the parser's arcs", "parser's arc", "{k} of the parser's {n} arcs")}


def arcs_figure(sentence: Sentence, word_attn: np.ndarray, layer: int, head: int,
                reference: str = "gold") -> tuple[Figure, str]:
    """One sentence's arcs, every one drawn and listed head → dependent, as UD draws them: the gold
    arcs above the words, the head's predicted arcs below. A word's predicted head is the word it
    attends to most (Clark et al.'s dep->head predictor), so each word gets one arc from the word it
    attends to most; green where that is the gold arc, orange where it is a gold arc reversed. The
    summary lists, per gold arc, which of Clark's two predictors recovers it. ``reference="parser"`` draws
    a parser's arcs in the gold arcs' place and says so in the legend, title and summary."""
    legend_name, plural, singular, counted = REFERENCES[reference]
    n = len(sentence.words)
    predicted = live_arcs(word_attn, layer, head)  # (word, the word it attends to most)
    attended_by = best_words(np.swapaxes(word_attn[layer, head], -1, -2))  # Clark's head->dep predictor
    gold = {(d, sentence.heads[d] - 1): sentence.relations[d] for d in range(n) if sentence.heads[d] > 0}
    top = ARC_BASE + max((arc_height(d - h) for d, h in gold), default=1.0) + 0.6
    bottom = ARC_BASE + max((arc_height(d - h) for d, h in predicted), default=1.0) + 0.3
    shapes, annotations, lines, labels, ends = [], [], [], [], []
    for (d, h), rel in gold.items():
        shapes.append(_arc(h, d, True, GOLD, 2))
        ends.append((h, d, True, GOLD))  # a dependency arc points from head to dependent
        labels.append(((d + h) / 2, ARC_BASE + arc_height(d - h) + 0.05, plotly_text(rel)))
    arcs_top, heights = top, [y for _, y, _ in labels]
    for _ in range(4):  # labels moved up make the plot taller, which makes each label shorter in data units
        heights = spaced_labels(labels, n, top + bottom)
        fitted = max([arcs_top] + [y + 0.9 * (top + bottom) / ASSUMED_PLOT_PX[1] * 20 for y in heights])
        if fitted <= top:
            break
        top = fitted
    for (x, _, text), y in zip(labels, heights):
        annotations.append({"x": x, "y": y, "text": text, "showarrow": False, "yanchor": "bottom",
                            "font": {"size": 11, "color": GOLD}, "bgcolor": "rgba(255,255,255,0.85)",
                            "name": "relation"})
    for d, h in predicted:  # drawn from the predicted head h to the word d that attends to it
        colour, width, dash = ((MATCH, 2.5, "solid") if (d, h) in gold else (REVERSED, 2, "dash") if (h, d) in gold
                               else (MISS, 1.2, "dot"))
        shapes.append(_arc(h, d, False, colour, width, dash))
        ends.append((h, d, False, colour))
    for (d, h), rel in gold.items():
        dep_to_head = predicted[d][1] == h  # d attends most to its head
        head_to_dep = attended_by[d] == h  # the word attending most to d is its head
        mark = "✓" if dep_to_head or head_to_dep else "✗"
        how = " and ".join(x for x, ok in zip(DIRECTIONS, (dep_to_head, head_to_dep)) if ok) or "not recovered"
        lines.append(f"- {mark} **{markdown_text(rel)}**: {markdown_text(sentence.words[h])} → "
                     f"{markdown_text(sentence.words[d])} ({how})")
    recovered = sum(1 for x in lines if x.startswith("- ✓"))
    staggered = n > 24  # long sentences: every other word a line lower, so neighbours' words do not collide
    words_y = [(-0.2 if i % 2 else 0.2) if staggered else 0 for i in range(n)]
    data = [{"type": "scatter", "mode": "text", "x": list(range(n)), "y": words_y,
             "text": [plotly_text(w) for w in sentence.words], "textposition": "middle center",
             "textfont": {"size": 14 if n <= 24 else 12, "color": "#111"}, "hoverinfo": "text", "showlegend": False},
            arrowheads(ends, n, top + bottom)]
    legend = [(GOLD, "solid", legend_name)] + [(c, d, name.replace("gold arc", singular)) for c, d, name in ARC_LEGEND[1:]]
    data += [{"type": "scatter", "mode": "lines", "x": [None], "y": [None], "name": name,
              "line": {"color": colour, "dash": dash, "width": 2}, "hoverinfo": "skip"}
             for colour, dash, name in legend]  # the legend: one entry per kind of arc drawn
    title = (f"{layer_head(layer, head)}: {plural} (above) and the head's predicted arcs (below), "
             "each head → dependent")
    layout = {"title": {"text": title}, "shapes": shapes, "annotations": annotations, "height": 560,
              "showlegend": True, "legend": {"orientation": "h", "x": 0, "y": -0.02, "yanchor": "top"},
              "xaxis": {"visible": False, "range": [-0.8, n - 0.2]},
              "yaxis": {"visible": False, "range": [-bottom, top]},
              "margin": {"l": 20, "r": 20, "t": 70, "b": 40}}
    summary = (f"{layer_head(layer, head)} recovers {counted.format(k=recovered, n=len(gold))}. Arcs read head → dependent, "
               "as UD draws them. The figure draws Clark's dep->head predictor (each word's most-attended word as "
               "its head); this list also counts head->dep (the word attending most to a word as its head):\n\n"
               + "\n".join(lines))
    return figure(data, layout, f"arcs-{layer_head_file(layer, head)}"), summary


def relation_figure(summary: SyntaxSummary, relation: str) -> Figure:
    panels = [(direction, summary.accuracy_map(relation, direction)) for direction in DIRECTIONS]
    row = summary.best_heads[summary.best_heads.relation == relation]
    base = f" (best fixed offset {offset_text(int(row.baseline_offset.iloc[0]))}: {row.baseline_accuracy.iloc[0]:.2f})" \
        if len(row) else ""
    return heatmap_grid(panels, head_labels(summary.heads), layer_labels(summary.layers),
                        title=f"{plotly_text(relation)}: accuracy per head{base}", filename="syntax-relation",
                        style=GridStyle(columns=2, height_per_row=40 * summary.layers + 60, zmax_shared=True,
                                        hover="layer %{y}, head %{x}<br>accuracy %{z:.3f}", x_title="head",
                                        y_title="layer", colorbar="accuracy (share of arcs found, 0–1)"))


def stats_figure(summary: SyntaxSummary) -> Figure:
    stats = summary.general_stats
    return heatmap_grid([(k, stats[k]) for k in HEAD_STATS if k in stats], head_labels(summary.heads),
                        layer_labels(summary.layers),
                        title="General head statistics over the treebank (mean over sentences)",
                        filename="head-statistics",
                        style=GridStyle(columns=4, height_per_row=32 * summary.layers + 80,
                                        hover="layer %{y}, head %{x}<br>%{z:.3f}", x_title="head", y_title="layer",
                                        colorbar=["entropy (nats)" if k == "entropy" else "share of a query's weight"
                                                  for k in HEAD_STATS if k in stats]))


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
             "hovertemplate": "%{y}, head %{x}<br>best in %{text}<extra></extra>",
             "colorbar": {"thickness": 12, "title": colorbar_title("share of treebanks where it is the best head")}}
    layout = {"title": {"text": f"Same best head across treebanks: {plotly_text(model)}"},
              "height": 140 + 22 * max(len(relations), 4),
              "xaxis": {"type": "category", "title": {"text": "head (layer-head)"}},
              "yaxis": {"type": "category", "autorange": "reversed", "automargin": True}}
    return figure([trace], layout, "head-agreement")


def sentence_agreement_figure(shares: dict[str, np.ndarray], arcs: int) -> Figure:
    """Every head's agreement with one sentence's parsed arcs, one panel per Clark direction, on one 0–1 scale."""
    layers, heads = next(iter(shares.values())).shape
    return heatmap_grid(list(shares.items()), head_labels(heads), layer_labels(layers),
                        title=f"Every head's agreement with the parser's {arcs} arcs (a parser's, not gold)",
                        filename="sentence-agreement",
                        style=GridStyle(columns=2, height_per_row=34 * layers + 70, zmax_shared=True,
                                        hover="layer %{y}, head %{x}<br>%{z:.2f} of the arcs", x_title="head",
                                        y_title="layer", colorbar="share of the parser's arcs recovered (0–1)"))
