"""Plotly figures as plain JSON-ready dicts (data, layout, config), no model code.

Figures are built as dicts rather than ``go.Figure`` objects: validation of large figures
costs tens of milliseconds per view switch, and the dicts are what Plotly.js receives anyway.
Numeric arrays travel base64-encoded as float32 (Plotly's typed-array ``bdata`` form).
"""
from __future__ import annotations

import base64
import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..naming import head_labels, layer_labels

Figure = dict[str, Any]
HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173"]
# Explicit scales (light = little attention, dark = much); Plotly.js's built-in "Blues" runs the other way.
SEQUENTIAL = [[0.0, "#f7fbff"], [0.125, "#deebf7"], [0.25, "#c6dbef"], [0.375, "#9ecae1"], [0.5, "#6baed6"],
              [0.625, "#4292c6"], [0.75, "#2171b5"], [0.875, "#08519c"], [1.0, "#08306b"]]
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]
FONT = {"family": "DejaVu Sans, Arial, sans-serif", "size": 12}


def typed(array: np.ndarray) -> dict[str, Any]:
    """Plotly typed array: base64 float32 with shape (half the bytes of float64, no JSON floats)."""
    arr = np.ascontiguousarray(array, dtype=np.float32)
    out: dict[str, Any] = {"dtype": "f4", "bdata": base64.b64encode(arr.tobytes()).decode("ascii")}
    if arr.ndim > 1:
        out["shape"] = ", ".join(str(s) for s in arr.shape)
    return out


TITLE_CHARS, SUBTITLE_CHARS = 58, 84  # what fits a ~560 px figure (the views column of a 1024 px window)
TITLE_FONT = 15
TITLE_TOP = 44  # px above the title: the app's plot label and Plotly's toolbar sit there


def wrapped_title(text: str) -> tuple[str, int]:
    """A title broken into lines that fit a narrow figure (Plotly never wraps titles: a long one is cut
    at both ends), and its number of lines. Parts after ``<br>`` in ``<sup>`` are subtitles, wrapped
    wider since their font is smaller."""
    lines = []
    for i, part in enumerate(text.split("<br>")):
        sub = part.startswith("<sup>") and part.endswith("</sup>")
        inner = part[5:-6] if sub else part
        width = SUBTITLE_CHARS if sub or i > 0 else TITLE_CHARS
        pieces = textwrap.wrap(inner, width, break_on_hyphens=False) or [""]
        lines += [f"<sup>{p}</sup>" if sub else p for p in pieces]
    return "<br>".join(lines), len(lines)


def fit_title(layout: dict[str, Any], text: str) -> None:
    """Set ``layout``'s title to ``text`` wrapped to fit, with room above it and below it (for a scale switch)."""
    wrapped, lines = wrapped_title(text)
    title = layout.get("title") if isinstance(layout.get("title"), dict) else {}
    layout["title"] = {"yref": "container", "y": 1, "yanchor": "top", "pad": {"t": TITLE_TOP}, **title, "text": wrapped,
                       "font": {"size": TITLE_FONT, **title.get("font", {})}}
    margin = dict(layout.get("margin") or {})
    buttons = 36 if layout.get("updatemenus") else 0  # a scale switch sits between the title and the plot
    margin["t"] = max(margin.get("t", 60), TITLE_TOP + 16 + 20 * lines + buttons)
    layout["margin"] = margin


def figure(data: list[dict[str, Any]], layout: dict[str, Any], filename: str) -> Figure:
    base_layout = {"font": FONT, "margin": {"l": 90, "r": 30, "t": 60, "b": 90}, "template": "plotly_white",
                   "paper_bgcolor": "white", "plot_bgcolor": "white"}
    base_layout.update(layout)
    title = base_layout.get("title")
    if isinstance(title, dict) and title.get("text"):
        fit_title(base_layout, title["text"])
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}}
    return {"data": data, "layout": base_layout, "config": config}


def empty_figure(message: str, height: int = 220) -> Figure:
    """A blank figure that says why it is blank (no stale picture of an earlier input)."""
    layout = {"height": height, "xaxis": {"visible": False}, "yaxis": {"visible": False},
              "annotations": [{"text": message, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}]}
    return figure([], layout, "empty")


def to_json(fig: Figure) -> str:
    return json.dumps(fig, separators=(",", ":"))


@dataclass(frozen=True)
class Cell:
    """One panel of a subplot grid, in paper coordinates (0..1), with its Plotly axis suffix."""

    index: int
    row: int
    column: int
    rows: int
    x0: float
    y1: float
    width: float
    height: float

    @property
    def x_domain(self) -> list[float]:
        """[left, right] in paper coordinates, inside [0, 1] despite float rounding (Plotly checks)."""
        return [max(0.0, round(self.x0, 9)), min(1.0, round(self.x0 + self.width, 9))]

    @property
    def y_domain(self) -> list[float]:
        return [max(0.0, round(self.y1 - self.height, 9)), min(1.0, round(self.y1, 9))]

    @property
    def axis(self) -> str:
        return "" if self.index == 0 else str(self.index + 1)


def grid_domains(n_panels: int, columns: int, gap_x: float, gap_y: float) -> list[Cell]:
    """Where each of ``n_panels`` panels sits in a grid of ``columns`` columns, row by row."""
    rows = (n_panels + columns - 1) // columns
    width = (1 - gap_x * (columns - 1)) / columns
    height = (1 - gap_y * (rows - 1)) / rows
    cells = []
    for i in range(n_panels):
        r, c = divmod(i, columns)
        cells.append(Cell(i, r, c, rows, c * (width + gap_x), 1 - r * (height + gap_y), width, height))
    return cells


UNITS = {"entropy": "entropy (nats)"}  # panel names that carry a unit


@dataclass(frozen=True)
class GridStyle:
    """How a grid of heatmaps is laid out and read, apart from what it shows: every caller sets
    several of these together, and one object keeps ``heatmap_grid``'s call short and its defaults in one place.

    Colour scales: ``zmax_shared`` gives every panel one scale and one colour bar; ``groups`` (a
    group id per panel, None for a panel of its own) gives the panels of a group one scale, so
    panels that invite comparison (baseline and intervened, a head and its layer) are read on the
    same colours. With groups, a button in the figure switches to per-panel scales and back.
    ``row_labels_once``: the row labels only left of the first column (every panel has the same rows),
    which leaves the panels of a narrow figure more width."""

    columns: int
    height_per_row: int = 320
    zmax_shared: bool = False
    groups: Sequence[int | None] | None = None
    row_labels_once: bool = False
    hover: str = "query %{y}<br>key %{x}<br>weight %{z:.4f}"
    x_title: str = ""
    y_title: str = ""
    reverse_y: bool = True


def heatmap_grid(panels: Sequence[tuple[str, np.ndarray]], x_labels: Sequence[str], y_labels: Sequence[str],
                 title: str, filename: str, style: GridStyle) -> Figure:
    """Several heatmaps side by side, each on its own axes, sharing the category labels, laid out by ``style``."""
    zmax_shared = style.zmax_shared
    cells = grid_domains(len(panels), style.columns, 0.06 if zmax_shared else 0.09, 0.16)
    groups = list(style.groups) if style.groups is not None else [0 if zmax_shared else None] * len(panels)
    own = [float(max(z.max(), 1e-6)) for _, z in panels]
    group_max = {g: max(m for m, h in zip(own, groups) if h == g) for g in set(groups) if g is not None}
    last_of_group = {g: max(i for i, h in enumerate(groups) if h == g) for g in group_max}
    data, layout, annotations = [], {}, []
    for cell, (name, z), group in zip(cells, panels, groups):
        i, r, c, rows, ax = cell.index, cell.row, cell.column, cell.rows, cell.axis
        x0, y1, width, height = cell.x0, cell.y1, cell.width, cell.height
        data.append({"type": "heatmap", "z": typed(z), "x": list(x_labels), "y": list(y_labels),
                     "xaxis": f"x{ax}", "yaxis": f"y{ax}", "colorscale": SEQUENTIAL, "zmin": 0,
                     "zmax": group_max[group] if group is not None else own[i],
                     "showscale": group is None or last_of_group[group] == i,
                     "colorbar": {"thickness": 10} if zmax_shared else
                     {"thickness": 8, "len": height * 0.9, "y": y1 - height / 2, "yanchor": "middle",
                      "x": x0 + width + 0.005, "xanchor": "left", "tickfont": {"size": 9}},
                     "hovertemplate": f"{name}<br>{style.hover}<extra></extra>"})
        layout[f"xaxis{ax}"] = {"domain": cell.x_domain, "anchor": f"y{ax}", "type": "category",
                                "tickangle": -60, "tickfont": {"size": 10}, "automargin": True,
                                "title": {"text": style.x_title if r == rows - 1 else "", "standoff": 10}}
        layout[f"yaxis{ax}"] = {"domain": cell.y_domain, "anchor": f"x{ax}", "type": "category",
                                "autorange": "reversed" if style.reverse_y else True, "tickfont": {"size": 10},
                                "showticklabels": c == 0 or not style.row_labels_once,
                                "title": {"text": style.y_title if c == 0 else ""}}
        annotations.append({"text": f"<b>{UNITS.get(name, name)}</b>", "x": x0 + width / 2, "y": y1 + 0.02, "xref": "paper",
                            "yref": "paper", "showarrow": False, "xanchor": "center", "yanchor": "bottom"})
    layout.update({"title": {"text": title}, "annotations": annotations,
                   "height": 120 + cells[0].rows * style.height_per_row, "margin": {"l": 80, "r": 30, "t": 90, "b": 90}})
    grouped = [i for i, g in enumerate(groups) if g is not None]
    if not zmax_shared and grouped:
        layout["updatemenus"] = [scale_switch(grouped, [group_max[groups[i]] for i in grouped], [own[i] for i in grouped],
                                              [data[i]["showscale"] for i in grouped])]
    return figure(data, layout, filename)


def scale_switch(traces: list[int], shared: list[float], own: list[float], shown: list[bool]) -> dict[str, Any]:
    """The figure's own "shared scale / per-panel scales" buttons (Plotly restyle, no server round trip)."""
    return {"type": "buttons", "direction": "right", "x": 1.0, "xanchor": "right", "y": 1.0, "yanchor": "bottom",
            "pad": {"b": 30}, "showactive": True, "active": 0, "font": {"size": 11},
            "buttons": [{"label": "shared scale", "method": "restyle",
                         "args": [{"zmax": shared, "showscale": shown}, traces]},
                        {"label": "per-panel scales", "method": "restyle",
                         "args": [{"zmax": own, "showscale": [True] * len(traces)}, traces]}]}


def diverging_scale(values: np.ndarray, fallback: float = 1e-6) -> dict[str, Any]:
    """Trace settings for a diverging scale centred on 0, symmetric around the largest |value|."""
    bound = float(np.abs(values).max()) or fallback
    return {"colorscale": DIVERGING, "zmid": 0, "zmin": -bound, "zmax": bound}


def with_diverging(fig: Figure, trace_index: int, values: np.ndarray) -> Figure:
    """Give one heatmap of a grid (whose z is ``values``) a diverging scale (for differences)."""
    trace = fig["data"][trace_index]
    colorbar = dict(trace.get("colorbar") or {})
    colorbar.setdefault("x", 1.0)
    trace.update({**diverging_scale(values), "showscale": True, "colorbar": colorbar})
    return fig


def layer_head_figure(values: np.ndarray, title: str, filename: str, diverging: bool = False,
                      value_label: str = "value") -> Figure:
    """A layers x heads heatmap with 1-based L/H labels."""
    layers, heads = values.shape
    trace = {"type": "heatmap", "z": typed(values), "x": head_labels(heads), "y": layer_labels(layers),
             "colorbar": {"thickness": 12},
             "hovertemplate": f"layer %{{y}}, head %{{x}}<br>{value_label} %{{z:.4f}}<extra></extra>"}
    if diverging:
        trace.update(diverging_scale(values))
    else:
        trace.update({"colorscale": SEQUENTIAL, "zmin": 0})
    layout = {"title": {"text": title}, "height": 120 + 38 * layers,
              "xaxis": {"type": "category", "title": {"text": "head"}},
              "yaxis": {"type": "category", "autorange": "reversed", "title": {"text": "layer"}}}
    return figure([trace], layout, filename)
