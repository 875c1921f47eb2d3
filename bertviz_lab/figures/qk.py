"""Query–key space of one head and the heads-by-heads similarity (attention/qk_space.py)."""
from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..attention.qk_space import labelled_points
from ..naming import head_name
from .base import SEQUENTIAL, Figure, colorbar_title, figure

COLOURINGS = {"position": "position", "sentence": "sentence", "segment": "token type (sentence A / B)",
              "upos": "part of speech (treebank)", "value_norm": "value-vector norm ||v||"}
CATEGORICAL = ("segment", "upos")
# 20 colours no two alike (Trubetskoy's "20 distinct colours"), for categories such as the 17 UD parts of
# speech; the light ones are outlined, so they stay visible on white
PALETTE20 = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45", "#fabed4",
             "#469990", "#dcbeff", "#9a6324", "#ffe119", "#800000", "#aaffc3", "#808000", "#ffd8b1", "#000075",
             "#a9a9a9", "#000000"]
LABELLED_TOKENS = 20  # the most frequent tokens are written on the plot


@dataclass(frozen=True)
class PointSide:
    """Queries or keys: one name for both halves of the joint embedding (queries are its first
    rows, keys start at ``offset``) and how their markers look, passed as one."""

    kind: str  # "query" or "key"
    plural: str
    offset: int  # the first row of this side in the joint coordinates
    symbol: str


def qk_figure(coords: np.ndarray, points: Sequence[dict], layer: int, head: int, method: str = "pca",
              color_by: str = "position") -> Figure:
    """Queries (circles) and keys (triangles) of one head in one 2-D space (layer and head 0-based):
    after AttentionViz's key translation and scaling, a query lies near the keys it attends to.
    Coloured by position, sentence or value-vector norm (a scale), or by token type or part of
    speech (one legend entry per value, queries and keys alike)."""
    if color_by not in COLOURINGS:
        raise ValueError(f"color_by must be one of {', '.join(COLOURINGS)}")
    if points and color_by not in points[0]:
        raise ValueError(f"these points have no {color_by!r} (part of speech needs treebank sentences)")
    n = len(points)
    text = [point_text(p) for p in points]
    traces = []
    for side in (PointSide("query", "queries", 0, "circle"), PointSide("key", "keys", n, "triangle-up")):
        if color_by in CATEGORICAL:
            values = [("A" if p["segment"] == 0 else "B") if color_by == "segment" else p["upos"] for p in points]
            for i, value in enumerate(sorted(set(values))):
                rows = [j for j, v in enumerate(values) if v == value]
                marker = {"color": PALETTE20[i % len(PALETTE20)], "line": {"color": "#555", "width": 0.5}}
                trace = _scatter(coords, side, rows, text, marker, f"{side.plural}: {value}")
                traces.append({**trace, "legendgroup": value})
        else:
            values = [p[color_by] for p in points]
            marker = {"color": values, "colorscale": "Viridis", "showscale": side.kind == "query",
                      "colorbar": {"title": colorbar_title(COLOURINGS[color_by])}}
            traces.append(_scatter(coords, side, list(range(n)), text, marker, side.plural))
    sentences = 1 + max(p["sentence"] for p in points) if points else 0
    layout = {"title": {"text": f"Head {head_name(layer, head)} (layer-head): queries and keys in one space ({method.upper()}, keys "
                                f"translated and scaled as AttentionViz does; {sentences} sentence(s); colour: "
                                f"{COLOURINGS[color_by]})"},
              "height": 620, "xaxis": {"zeroline": False}, "yaxis": {"zeroline": False, "scaleanchor": "x"},
              "legend": {"orientation": "h"},
              "annotations": [{"x": float(coords[row, 0]), "y": float(coords[row, 1]), "text": html.escape(token),
                               "showarrow": False, "yshift": 9, "font": {"size": 10, "color": "#222"},
                               "bgcolor": "rgba(255,255,255,0.7)", "borderpad": 0,
                               "name": "token label"}
                              for row, token in labelled_points(coords, [p["token"] for p in points], LABELLED_TOKENS)]}
    return figure(traces, layout, f"qk-space-{head_name(layer, head)}")


def point_text(point: dict) -> str:
    """What a point's hover says: its token, part of speech when known, position and sentence."""
    pos = f", {point['upos']}" if point.get("upos") else ""
    return f"{html.escape(point['token'])}{pos} (position {point['position']}, sentence {point['sentence'] + 1})"


def _scatter(coords: np.ndarray, side: PointSide, rows: list[int], text: list[str], marker: dict, name: str) -> dict:
    xy = coords[[side.offset + r for r in rows]]
    return {"type": "scattergl", "mode": "markers", "name": name, "x": xy[:, 0].tolist(), "y": xy[:, 1].tolist(),
            "text": [text[r] for r in rows], "marker": {"symbol": side.symbol, "size": 7, **marker},
            "hovertemplate": f"{side.kind}: %{{text}}<extra></extra>"}


def head_similarity_figure(divergence: np.ndarray, layers: int, heads: int, sentences: int) -> Figure:
    """Heads x heads Jensen–Shannon divergence of their attention (dark = alike)."""
    labels = [head_name(i // heads, i % heads) for i in range(layers * heads)]
    opens = [[[j // heads, j % heads] for j in range(layers * heads)] for _ in range(layers * heads)]
    trace = {"type": "heatmap", "z": divergence.tolist(), "x": labels, "y": labels, "colorscale": SEQUENTIAL,
             "customdata": opens,  # (layer, head) of the column, 0-based: the page opens it on a click
             "reversescale": True, "zmin": 0,
             "colorbar": {"title": colorbar_title("JS divergence (nats): 0 = the heads attend alike")},
             "hovertemplate": "%{y} vs %{x}: JS %{z:.3f}<extra></extra>"}
    layout = {"title": {"text": f"How alike the heads attend: Jensen–Shannon divergence, mean over {sentences} "
                                f"sentence(s) (dark = alike; click a cell to open its column's head)"},
              "height": 760, "xaxis": {"type": "category", "tickangle": -90}, "yaxis": {"type": "category",
                                                                                        "autorange": "reversed"}}
    return figure([trace], layout, "head-similarity")
