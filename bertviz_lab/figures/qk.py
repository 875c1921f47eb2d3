"""Query–key space of one head and the heads-by-heads similarity (attention/qk_space.py)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..naming import head_name
from .base import SEQUENTIAL, Figure, figure


def qk_figure(coords: np.ndarray, points: Sequence[dict], layer: int, head: int, method: str = "pca",
              color_by: str = "position") -> Figure:
    """Queries (circles) and keys (triangles) of one head in one 2-D space (layer and head 0-based):
    after AttentionViz's key translation and scaling, a query lies near the keys it attends to."""
    if color_by not in ("position", "sentence"):
        raise ValueError("color_by must be 'position' or 'sentence'")
    n = len(points)
    values = [p[color_by] for p in points]
    text = [f"{p['token']} (sentence {p['sentence'] + 1}, position {p['position']})" for p in points]
    traces = []
    for kind, rows, symbol in (("query", slice(0, n), "circle"), ("key", slice(n, 2 * n), "triangle-up")):
        xy = coords[rows]
        traces.append({"type": "scattergl", "mode": "markers", "name": f"{kind}s", "x": xy[:, 0].tolist(),
                       "y": xy[:, 1].tolist(), "text": text,
                       "marker": {"symbol": symbol, "size": 7, "color": values, "colorscale": "Viridis",
                                  "showscale": kind == "query", "colorbar": {"title": {"text": color_by}}},
                       "hovertemplate": f"{kind}: %{{text}}<extra></extra>"})
    sentences = 1 + max(p["sentence"] for p in points) if points else 0
    layout = {"title": {"text": f"Head {head_name(layer, head)} (layer-head): queries and keys in one space ({method.upper()}, keys "
                                f"translated and scaled as AttentionViz does; {sentences} sentence(s))"},
              "height": 620, "xaxis": {"zeroline": False}, "yaxis": {"zeroline": False, "scaleanchor": "x"},
              "legend": {"orientation": "h"}}
    return figure(traces, layout, f"qk-space-{head_name(layer, head)}")


def head_similarity_figure(divergence: np.ndarray, layers: int, heads: int, sentences: int) -> Figure:
    """Heads x heads Jensen–Shannon divergence of their attention (dark = alike)."""
    labels = [head_name(i // heads, i % heads) for i in range(layers * heads)]
    trace = {"type": "heatmap", "z": divergence.tolist(), "x": labels, "y": labels, "colorscale": SEQUENTIAL,
             "reversescale": True, "zmin": 0, "colorbar": {"title": {"text": "JS (nats)"}},
             "hovertemplate": "%{y} vs %{x}: JS %{z:.3f}<extra></extra>"}
    layout = {"title": {"text": f"How alike the heads attend: Jensen–Shannon divergence, mean over {sentences} "
                                f"sentence(s) (dark = alike)"},
              "height": 760, "xaxis": {"type": "category", "tickangle": -90}, "yaxis": {"type": "category",
                                                                                        "autorange": "reversed"}}
    return figure([trace], layout, "head-similarity")
