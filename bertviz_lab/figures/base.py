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
TITLE_TOP = 54  # px above the title: the app's plot label and Plotly's toolbar sit there


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


# ---- what a colour bar says, and which scale an attention map is read on ------------------------
SCALES = {"fixed 0–1": "fixed", "per head": "per-head"}  # the page's choice: label -> value ("auto" also accepted)
# sources whose rows are distributions (each row sums to 1): read on a fixed 0–1 scale by default
ROWS_SUM_TO_ONE = frozenset({"attention", "alti", "value-zeroing", "rollout", "flow"})
QUANTITIES = {  # what one cell of a source's map is, with its unit: the title of its colour bar
    "attention": "attention weight (0–1, rows sum to 1)",
    "norm": "‖α f(x)‖: vector norm (not normalised)",
    "norm-residual": "norm with residual and LayerNorm (not normalised)",
    "globenc": "GlobEnc contribution: norm (not normalised)",
    "alti": "ALTI contribution (0–1, rows sum to 1)",
    "value-zeroing": "value-zeroing score (0–1, rows sum to 1)",
    "decompx": "DecompX contribution: norm (not normalised)",
    "rollout": "rollout weight (0–1, rows sum to 1)",
    "flow": "attention flow (0–1, rows sum to 1)",
}
COLORBAR_CHARS = 30  # a colour bar's title runs along it (side "right"): lines of at most this many characters
GRID_BAR = {"size": 9, "chars": 38}  # a grid panel's bar: smaller, so two lines fit between two panels


def resolve_scale(scale: str, source: str = "attention") -> str:
    """"fixed" or "per-head" for a scale choice (a value or a label of ``SCALES``, or "auto": fixed for
    the sources whose rows sum to 1, per head for raw norms, whose range differs from head to head)."""
    if scale == "auto":
        return "fixed" if source in ROWS_SUM_TO_ONE else "per-head"
    value = SCALES.get(scale, scale)
    if value not in SCALES.values():
        raise ValueError(f"scale must be one of {', '.join([*SCALES.values(), 'auto'])}; got {scale!r}")
    return value


def quantity(source: str = "attention") -> str:
    """The colour bar title of a map of ``source`` (quantity and unit)."""
    return QUANTITIES.get(source, f"{source} weight")


def fixed_top(source: str, values: np.ndarray) -> float:
    """The top of a fixed scale: 1 for weights whose rows sum to 1, else the largest value of ``values``
    (every head shown on one scale)."""
    return 1.0 if source in ROWS_SUM_TO_ONE else float(max(np.max(values), 1e-6))


def scale_note(mode: str, source: str = "attention", whose: str = "this head's") -> str:
    """What follows the quantity in a colour bar title: how the colours are scaled."""
    if mode == "per-head":
        return f" — scaled to {whose} max"
    return "" if source in ROWS_SUM_TO_ONE else " — one scale for every head"


def colorbar_title(text: str, size: int = 11, chars: int = COLORBAR_CHARS) -> dict[str, Any]:
    """A colour bar title along the bar (side "right"), broken into lines that a bar's length holds."""
    lines = textwrap.wrap(text, chars, break_on_hyphens=False) or [""]
    return {"text": "<br>".join(lines), "side": "right", "font": {"size": size}}


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
    ``fixed_max``: the grouped panels on [0, fixed_max] (the page's "fixed 0–1"); the button then switches
    between that and per-panel scales. ``colorbar``: the colour bars' title (quantity and unit), one
    for every panel or one per panel; how the bar is scaled is added to it.
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
    colorbar: str | Sequence[str] = ""
    fixed_max: float | None = None


@dataclass(frozen=True)
class GridScales:
    """Per panel: the top of its scale as first drawn, whether its colour bar shows, its colour bar title;
    and the same for the figure's "per-panel scales" button."""

    zmax: list[float]
    shown: list[bool]
    titles: list[str]
    own: list[float]
    own_titles: list[str]


def grid_scales(panels: Sequence[tuple[str, np.ndarray]], style: GridStyle) -> GridScales:
    """Which scale each panel of a grid is read on, and what its colour bar says about it."""
    n = len(panels)
    groups = list(style.groups) if style.groups is not None else [0 if style.zmax_shared else None] * n
    names = [style.colorbar] * n if isinstance(style.colorbar, str) else list(style.colorbar)
    names = [name or UNITS.get(panel, "") for name, (panel, _) in zip(names, panels)]  # "": the caller forgot
    own = [float(max(z.max(), 1e-6)) for _, z in panels]
    members = {g: [i for i, h in enumerate(groups) if h == g] for g in set(groups) if g is not None}
    group_max = {g: max(own[i] for i in idx) for g, idx in members.items()}
    shown = [g is None or members[g][-1] == i for i, g in enumerate(groups)]
    own_titles = [f"{name} — scaled to this panel's max" if name else "" for name in names]
    if style.fixed_max is not None:  # grouped panels on [0, fixed_max]; a panel of its own keeps its range
        return GridScales([own[i] if g is None else style.fixed_max for i, g in enumerate(groups)], shown,
                          [own_titles[i] if g is None else names[i] for i, g in enumerate(groups)], own, own_titles)
    zmax = [own[i] if g is None else group_max[g] for i, g in enumerate(groups)]
    titles = [f"{names[i]} — scaled to these panels' max" if g is not None and names[i]
              and len(members[g]) > 1 else own_titles[i] for i, g in enumerate(groups)]
    return GridScales(zmax, shown, titles, own, own_titles)


def heatmap_grid(panels: Sequence[tuple[str, np.ndarray]], x_labels: Sequence[str], y_labels: Sequence[str],
                 title: str, filename: str, style: GridStyle) -> Figure:
    """Several heatmaps side by side, each on its own axes, sharing the category labels, laid out by ``style``."""
    zmax_shared = style.zmax_shared
    # a bar with its title between two panels needs a wider gap than one bar right of them all
    cells = grid_domains(len(panels), style.columns, 0.06 if zmax_shared else 0.15, 0.16)
    scales = grid_scales(panels, style)
    data, layout, annotations = [], {}, []
    for cell, (name, z) in zip(cells, panels):
        i, r, c, rows, ax = cell.index, cell.row, cell.column, cell.rows, cell.axis
        x0, y1, width, height = cell.x0, cell.y1, cell.width, cell.height
        bar = {"thickness": 10, "title": colorbar_title(scales.titles[i])} if zmax_shared else \
            {"thickness": 8, "len": height * 0.9, "y": y1 - height / 2, "yanchor": "middle", "x": x0 + width + 0.005,
             "xanchor": "left", "tickfont": {"size": 9}, "title": colorbar_title(scales.titles[i], **GRID_BAR)}
        data.append({"type": "heatmap", "z": typed(z), "x": list(x_labels), "y": list(y_labels),
                     "xaxis": f"x{ax}", "yaxis": f"y{ax}", "colorscale": SEQUENTIAL, "zmin": 0,
                     "zmax": scales.zmax[i], "showscale": scales.shown[i], "colorbar": bar,
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
    switchable = [i for i, g in enumerate(style.groups or []) if g is not None]
    if not zmax_shared and switchable:
        layout["updatemenus"] = [scale_switch(switchable, scales, "fixed 0–1" if style.fixed_max is not None
                                              else "shared scale")]
    return figure(data, layout, filename)


def scale_switch(traces: list[int], scales: GridScales, first: str = "shared scale") -> dict[str, Any]:
    """The figure's own "shared (or fixed) scale / per-panel scales" buttons (Plotly restyle, no server round
    trip); each colour bar's title follows the scale it shows."""
    def pick(values: list) -> list:
        return [values[i] for i in traces]

    def titles(texts: list[str]) -> list[str]:
        return [colorbar_title(t, **GRID_BAR)["text"] for t in pick(texts)]

    return {"type": "buttons", "direction": "right", "x": 1.0, "xanchor": "right", "y": 1.0, "yanchor": "bottom",
            "pad": {"b": 30}, "showactive": True, "active": 0, "font": {"size": 11},
            "buttons": [{"label": first, "method": "restyle",
                         "args": [{"zmax": pick(scales.zmax), "showscale": pick(scales.shown),
                                   "colorbar.title.text": titles(scales.titles)}, traces]},
                        {"label": "per-panel scales", "method": "restyle",
                         "args": [{"zmax": pick(scales.own), "showscale": [True] * len(traces),
                                   "colorbar.title.text": titles(scales.own_titles)}, traces]}]}


def diverging_scale(values: np.ndarray, fallback: float = 1e-6) -> dict[str, Any]:
    """Trace settings for a diverging scale centred on 0, symmetric around the largest |value|."""
    bound = float(np.abs(values).max()) or fallback
    return {"colorscale": DIVERGING, "zmid": 0, "zmin": -bound, "zmax": bound}


def with_diverging(fig: Figure, trace_index: int, values: np.ndarray, title: str = "") -> Figure:
    """Give one heatmap of a grid (whose z is ``values``) a diverging scale (for differences), its colour bar
    titled ``title`` (e.g. "Δ attention (intervened − baseline)")."""
    trace = fig["data"][trace_index]
    colorbar = dict(trace.get("colorbar") or {})
    colorbar.setdefault("x", 1.0)
    if title:
        colorbar["title"] = colorbar_title(title, **GRID_BAR)
    trace.update({**diverging_scale(values), "showscale": True, "colorbar": colorbar})
    return fig


def layer_head_figure(values: np.ndarray, title: str, filename: str, diverging: bool = False,
                      value_label: str = "value", colorbar: str = "") -> Figure:
    """A layers x heads heatmap with 1-based L/H labels; its colour bar titled ``colorbar`` (quantity and
    unit), ``value_label`` when not given."""
    layers, heads = values.shape
    trace = {"type": "heatmap", "z": typed(values), "x": head_labels(heads), "y": layer_labels(layers),
             "colorbar": {"thickness": 12, "title": colorbar_title(colorbar or value_label)},
             "hovertemplate": f"layer %{{y}}, head %{{x}}<br>{value_label} %{{z:.4f}}<extra></extra>"}
    if diverging:
        trace.update(diverging_scale(values))
    else:
        trace.update({"colorscale": SEQUENTIAL, "zmin": 0})
    layout = {"title": {"text": title}, "height": 120 + 38 * layers,
              "xaxis": {"type": "category", "title": {"text": "head"}},
              "yaxis": {"type": "category", "autorange": "reversed", "title": {"text": "layer"}}}
    return figure([trace], layout, filename)
