"""The Positions lesson's figures (issue 58): two to four position-scheme twins side by side on one sentence.

``lesson_maps``: each twin's attention at the chosen head (row 1) and its scheme's position geometry (row 2);
``lesson_distance``: attention by distance per layer on this sentence (mean distance, previous- and next-token
share); ``lesson_shuffle``: the shuffle demonstration (mean JS divergence over seeded orders with its interval);
``lesson_lengths``: masked-word top-1 on held-out text at 1x, 2x and 4x the training length (the twins' benchmark).
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np

from ..mlm.twin_lesson import UNCHANGED, TwinView
from .base import DIVERGING, SEQUENTIAL, Figure, colorbar_title, empty_figure, figure, grid_domains, typed

TWIN_COLOURS = {"learned": "#1f77b4", "sinusoidal": "#ff7f0e", "relative": "#2ca02c", "disentangled": "#d62728",
                "rotary": "#9467bd", "alibi": "#8c564b", "none": "#7f7f7f"}


def colour(view: TwinView) -> str:
    return TWIN_COLOURS.get(view.scheme, "#17becf")


def lesson_maps(views: Sequence[TwinView], layer: int, head: int) -> Figure:
    """Row 1: attention of layer ``layer``, head ``head`` (1-based) of every twin; row 2: each scheme's geometry."""
    k = len(views)
    cells = grid_domains(2 * k, k, 0.05, 0.24)
    data, layout, notes = [], {}, []
    for view, cell in zip(views, cells[:k]):
        ax = cell.axis  # numeric axes (token positions; the message lists the tokens): Plotly draws them faster
        data.append({"type": "heatmap", "z": typed(view.head_attention),
                     "xaxis": f"x{ax}", "yaxis": f"y{ax}", "colorscale": SEQUENTIAL, "zmin": 0, "zmax": 1,
                     "showscale": cell.index == k - 1,
                     "colorbar": {"thickness": 10, "len": 0.4, "y": 0.8, "title": colorbar_title("attention (0–1)")},
                     "hovertemplate": f"{view.twin}<br>query position %{{y}}<br>key position %{{x}}<br>%{{z:.3f}}"
                                      "<extra></extra>"})
        layout[f"xaxis{ax}"] = {"domain": cell.x_domain, "anchor": f"y{ax}", "title": {"text": "key position"},
                                "tickfont": {"size": 9}}
        layout[f"yaxis{ax}"] = {"domain": cell.y_domain, "anchor": f"x{ax}", "autorange": "reversed",
                                "tickfont": {"size": 9}, "title": {"text": "query position" if cell.column == 0 else ""}}
        notes.append(title_note(f"{view.twin}: L{layer} H{head}", cell))
    for view, cell in zip(views, cells[k:]):
        ax, g = cell.axis, view.geometry
        layout[f"xaxis{ax}"] = {"domain": cell.x_domain, "anchor": f"y{ax}", "showticklabels": False}
        layout[f"yaxis{ax}"] = {"domain": cell.y_domain, "anchor": f"x{ax}", "showticklabels": False,
                                "autorange": "reversed"}
        if g is None:
            layout[f"xaxis{ax}"]["visible"] = layout[f"yaxis{ax}"]["visible"] = False
            notes.append(title_note(f"{view.twin}: no positions at all", cell))
            notes.append({"text": "nothing tells one<br>position from another", "x": cell.x0 + cell.width / 2,
                          "y": cell.y1 - cell.height / 2, "xref": "paper", "yref": "paper", "showarrow": False})
            continue
        values = np.asarray(g.values, dtype=float)
        top = float(np.nanmax(np.abs(values))) or 1.0
        data.append({"type": "heatmap", "z": typed(values), "x": list(g.columns), "y": list(g.rows),
                     "xaxis": f"x{ax}", "yaxis": f"y{ax}", "colorscale": DIVERGING, "zmin": -top, "zmax": top,
                     "showscale": False,
                     "hovertemplate": f"{g.row_title} %{{y}}<br>{g.column_title} %{{x}}<br>%{{z:.3f}}<extra></extra>"})
        layout[f"xaxis{ax}"].update(type="category", title={"text": g.column_title})
        layout[f"yaxis{ax}"].update(type="category", title={"text": g.row_title if cell.column == 0 else ""})
        notes.append(title_note(g.title, cell))
    layout.update({"title": {"text": f"Attention at layer {layer}, head {head} (top) and each scheme's "
                                     "positions (bottom; colour: each panel's own scale)"},
                   "annotations": notes, "height": 640, "margin": {"l": 50, "r": 30, "t": 90, "b": 50}})
    return figure(data, layout, "positions-lesson-maps")


def title_note(text: str, cell, chars: int = 44) -> dict:
    """A panel's title above it, wrapped to the panel's width (two lines at most, then cut)."""
    lines = textwrap.wrap(text, chars) or [""]
    shown = "<br>".join(lines[:2]) + ("…" if len(lines) > 2 else "")
    return {"text": f"<b>{shown}</b>", "x": cell.x0 + cell.width / 2, "y": cell.y1 + 0.01, "xref": "paper",
            "yref": "paper", "showarrow": False, "xanchor": "center", "yanchor": "bottom", "font": {"size": 11}}


def lesson_distance(views: Sequence[TwinView]) -> Figure:
    """Per layer, mean over heads: the mean attention distance, and the share on the previous and next token."""
    panels = [("mean attention distance (tokens)", "distance"), ("share on the previous token", "previous"),
              ("share on the next token", "following")]
    cells = grid_domains(3, 3, 0.08, 0.0)
    data, layout, notes = [], {}, []
    for cell, (name, field) in zip(cells, panels):
        ax = cell.axis
        for view in views:
            values = getattr(view, field)
            data.append({"type": "scatter", "mode": "lines+markers", "x": list(range(1, len(values) + 1)),
                         "y": typed(values), "name": view.twin, "legendgroup": view.twin,
                         "showlegend": cell.index == 0, "line": {"color": colour(view)},
                         "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                         "hovertemplate": f"{view.twin}<br>layer %{{x}}<br>%{{y:.3f}}<extra></extra>"})
        layout[f"xaxis{ax}"] = {"domain": cell.x_domain, "anchor": f"y{ax}", "title": {"text": "layer"}, "dtick": 1}
        layout[f"yaxis{ax}"] = {"domain": cell.y_domain, "anchor": f"x{ax}", "rangemode": "tozero"}
        notes.append(title_note(name, cell))
    layout.update({"title": {"text": "Attention by distance on this sentence, per layer (mean over heads and queries; "
                                     "one sentence, so no interval)"},
                   "annotations": notes, "height": 400, "legend": {"orientation": "h", "y": -0.32},
                   "margin": {"l": 60, "r": 30, "t": 90, "b": 120}})
    return figure(data, layout, "positions-lesson-distance")


def lesson_shuffle(views: Sequence[TwinView]) -> Figure:
    """Mean JS divergence of the masked word's distribution after shuffling the other words, 95 % interval."""
    names = [v.twin for v in views]
    values = [v.shuffle.interval["value"] for v in views]
    low = [v.shuffle.interval["value"] - v.shuffle.interval["ci"][0] for v in views]
    high = [v.shuffle.interval["ci"][1] - v.shuffle.interval["value"] for v in views]
    first = views[0].shuffle
    masked = ", ".join(views[0].analysis.tokens[p] if not first.chosen_for_you else
                       f"{views[0].analysis.tokens[p]} (masked for you)" for p in first.positions)
    data = [{"type": "bar", "x": names, "y": values, "marker": {"color": [colour(v) for v in views]},
             "text": [f"{v:.3g}" if v >= UNCHANGED else "0" for v in values], "textposition": "outside",
             "cliponaxis": False,
             "error_y": {"type": "data", "symmetric": False, "array": high, "arrayminus": low},
             "hovertemplate": "%{x}<br>mean JS %{y:.4f} nats<extra></extra>"}]
    layout = {"title": {"text": f"Shuffle the other words: how far the prediction at {masked} moves "
                                f"({len(first.js)} seeded orders; mean and 95 % interval)"},
              "yaxis": {"title": {"text": "JS divergence (nats)"}, "rangemode": "tozero"}, "height": 360}
    return figure(data, layout, "positions-lesson-shuffle")


def lesson_lengths(views: Sequence[TwinView], measures: dict) -> Figure:
    """Masked-word top-1 on held-out text at 1x, 2x and 4x the training length, per twin (the twins' benchmark)."""
    if not measures:
        return empty_figure("The twins' held-out measures are not in this twins folder (run benchmarks/bench_twins.py).")
    data, notes = [], []
    for view in views:
        rows = measures.get(view.twin, {}).get("top1", {})
        xs, ys, low, high, missing = [], [], [], [], []
        for factor in ("1x", "2x", "4x"):
            record = rows.get(factor, {})
            if "value" in record:
                xs.append(factor), ys.append(record["value"])
                low.append(record["value"] - record["ci"][0]), high.append(record["ci"][1] - record["value"])
            elif record.get("problem"):
                missing.append((factor, record["problem"].split(":")[0]))
        data.append({"type": "bar", "name": view.twin, "x": xs, "y": ys, "marker": {"color": colour(view)},
                     "error_y": {"type": "data", "symmetric": False, "array": high, "arrayminus": low},
                     "hovertemplate": f"{view.twin}<br>%{{x}} the training length<br>top-1 %{{y:.3f}}<extra></extra>"})
        if missing:  # "twin-learned cannot reach position 129 (2x, 4x)"
            notes.append(f"{view.twin} {missing[0][1]} ({', '.join(f for f, _ in missing)})")
    title = ("Longer than trained: masked-word top-1 on held-out text at 1x, 2x and 4x the training length (95 % "
             "intervals over blocks)")
    layout = {"title": {"text": title + "".join(f"<br><sup>{note}</sup>" for note in notes)},
              "barmode": "group", "yaxis": {"title": {"text": "top-1 accuracy"}, "rangemode": "tozero"},
              "xaxis": {"title": {"text": "input length, times the training length"}}, "height": 400}
    return figure(data, layout, "positions-lesson-lengths")
