"""Figures of one input's attention: a head's heatmap, the all-heads overview mosaic, the
BertViz-style head view, and the masked-word prediction bars."""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..attention import AttentionView
from ..naming import head_labels, layer_head, layer_labels
from .base import DIVERGING, HEAD_COLOURS, QUANTITIES, SEQUENTIAL, Figure, colorbar_title, diverging_scale, figure, grid_domains, typed


@dataclass(frozen=True)
class MapScale:
    """How one map's colours read: its colour bar's title (quantity and unit, and how it is scaled), the
    top of the scale (None: the map's own largest value) and whether it is a difference (diverging, around 0)."""

    colorbar: str = QUANTITIES["attention"]
    zmax: float | None = 1.0
    diverging: bool = False


def heatmap_figure(view: AttentionView, title: str, filename: str = "attention", scale: MapScale = MapScale(),
                   height: int | None = None) -> Figure:
    """Query rows x key columns; every row and column has its own unique category label."""
    z = view.weights
    nq, nk = len(view.query_labels), len(view.key_labels)
    trace = {
        "type": "heatmap", "z": typed(z), "x": view.key_labels, "y": view.query_labels,
        "colorscale": DIVERGING if scale.diverging else SEQUENTIAL,
        "hovertemplate": "query %{y}<br>key %{x}<br>weight %{z:.4f}<extra></extra>",
        "colorbar": {"thickness": 12, "title": colorbar_title(scale.colorbar)},
    }
    zmax = scale.zmax
    if scale.diverging:
        trace.update(diverging_scale(z, fallback=1.0) if zmax is None else {"zmid": 0, "zmin": -zmax, "zmax": zmax})
    else:
        trace.update({"zmin": 0, "zmax": zmax if zmax is not None else float(max(z.max(), 1e-6))})
    size = height or int(min(1000, max(460, 170 + 26 * max(nq, nk))))
    layout = {
        "title": {"text": title}, "height": size,
        "xaxis": {"title": {"text": "key (attended to)", "standoff": 14}, "type": "category", "tickangle": -60,
                  "automargin": True, "side": "bottom", **short_ticks(view.key_labels)},
        "yaxis": {"title": {"text": "query (attending)", "standoff": 14}, "type": "category", "autorange": "reversed",
                  "automargin": True, **short_ticks(view.query_labels)},
    }
    return figure([trace], layout, filename)


LABEL_CHARACTERS = 18  # tick labels longer than this are shortened (the hover keeps the whole label)


def short_label(label: str, limit: int = LABEL_CHARACTERS) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def short_ticks(labels: Sequence[str]) -> dict[str, Any]:
    """Tick settings that shorten long labels, so one long word does not squash every row."""
    if all(len(label) <= LABEL_CHARACTERS for label in labels):
        return {}
    return {"tickmode": "array", "tickvals": list(labels), "ticktext": [short_label(label) for label in labels]}


@lru_cache(maxsize=1)
def _colour_lut(n: int = 256) -> np.ndarray:
    """RGB lookup table for the sequential scale (white -> dark blue), (n, 3) uint8."""
    stops = np.array([p for p, _ in SEQUENTIAL])
    rgb = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for _, c in SEQUENTIAL], dtype=float)
    x = np.linspace(0, 1, n)
    return np.stack([np.interp(x, stops, rgb[:, ch]) for ch in range(3)], axis=1).round().astype(np.uint8)




def _block_mean(a: np.ndarray, size: int) -> np.ndarray:
    """Downsample the last two axes of a square (..., n, n) array to at most (size, size)."""
    n = a.shape[-1]
    if n <= size:
        return a
    edges = np.linspace(0, n, size + 1).round().astype(int)
    rows = np.add.reduceat(a, edges[:-1], axis=-2) / np.diff(edges)[:, None]
    return np.add.reduceat(rows, edges[:-1], axis=-1) / np.diff(edges)[None, :]


def overview_png(attention: np.ndarray, tile: int = 48, gap: int = 2, top: float | None = None) -> tuple[bytes, int, int]:
    """All heads as one PNG mosaic: layers down, heads across, each head scaled to its own max (``top``
    None) or every head on [0, top] (the page's fixed scale).

    A picture instead of layers x heads heatmap traces keeps the overview small on the wire
    (the bytes grow with the tile size, not with tokens squared times heads).
    """
    from PIL import Image

    layers, heads, n, _ = attention.shape
    thumbs = _block_mean(attention.astype(np.float32), tile)  # (layers, heads, t, t)
    t = thumbs.shape[-1]
    peak = thumbs.max(axis=(-1, -2), keepdims=True) if top is None else np.full((1, 1, 1, 1), top, np.float32)
    scaled = np.clip(np.divide(thumbs, peak, out=np.zeros_like(thumbs), where=peak > 0), 0, 1)
    index = (scaled * 255).round().astype(np.uint8)
    rgb = _colour_lut()[index]  # (layers, heads, t, t, 3)
    height, width = layers * (t + gap) - gap, heads * (t + gap) - gap
    canvas = np.full((height, width, 3), 235, dtype=np.uint8)
    for layer in range(layers):
        for head in range(heads):
            y, x = layer * (t + gap), head * (t + gap)
            canvas[y:y + t, x:x + t] = rgb[layer, head]
    buffer = io.BytesIO()
    Image.fromarray(canvas).save(buffer, format="PNG", optimize=False, compress_level=1)  # speed over bytes
    return buffer.getvalue(), width, height


PER_HEAD_OVERVIEW = MapScale(colorbar=f"{QUANTITIES['attention']} — scaled to each head's max", zmax=None)


def overview_figure(attention: np.ndarray, tile: int = 48, selected: tuple[int, int] | None = None,
                    scale: MapScale = PER_HEAD_OVERVIEW) -> Figure:
    """Every layer x head as a thumbnail in one figure; click a thumbnail to open it. ``scale.zmax`` None:
    each head scaled to its own max (the colour bar then reads as a share of that max); else every head on
    [0, zmax]."""
    layers, heads = attention.shape[:2]
    png, width, height = overview_png(attention, tile=tile, top=scale.zmax)
    t = (width + 2) / heads  # pixels per tile including the gap
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    image = {"type": "image", "source": src, "x0": 0, "y0": 0, "dx": 1, "dy": 1, "hoverinfo": "skip"}
    a = attention.astype(np.float32)
    entropy = -(a * np.log(np.clip(a, 1e-12, None))).sum(-1).mean(-1)  # (layers, heads)
    hover_text = [[f"{layer_head(l, h, capital=False)}<br>mean entropy {entropy[l, h]:.2f} nats<br>click to open"
                   for h in range(heads)] for l in range(layers)]
    # the thumbnails are a picture: this almost transparent layer over them answers hovers and clicks and
    # carries the colour bar the picture was drawn with
    picker = {"type": "heatmap", "z": typed(np.zeros((layers, heads))), "x0": t / 2 - 1, "dx": t,
              "y0": t / 2 - 1, "dy": t, "opacity": 0.01, "text": hover_text, "colorscale": SEQUENTIAL, "zmin": 0,
              "zmax": scale.zmax or 1.0, "showscale": True,
              "colorbar": {"thickness": 12, "lenmode": "pixels", "len": 180,  # the mosaic's height at ~560 px wide
                           "y": 1, "yanchor": "top",  # beside the grid, which starts at the top
                           "title": colorbar_title(scale.colorbar, size=10, chars=34)},
              "hovertemplate": "%{text}<extra></extra>", "name": "overview-picker",
              "customdata": [[[l, h] for h in range(heads)] for l in range(layers)]}
    shapes = []
    if selected is not None:
        l, h = selected
        shapes.append({"type": "rect", "x0": h * t - 1.5, "x1": h * t + t - 0.5, "y0": l * t - 1.5,
                       "y1": l * t + t - 0.5, "line": {"color": "#d62728", "width": 3}})
    how = "each head scaled to its max" if scale.zmax is None else f"every head on one scale, 0–{scale.zmax:.3g}"
    layout = {
        "title": {"text": f"Model overview: every layer and head (darker = more attention; {how})"},
        "height": int(130 + layers * max(60, min(110, 900 / layers))),
        "xaxis": {"range": [-0.5, width - 0.5], "showgrid": False, "zeroline": False, "side": "top",
                  "tickvals": [h * t + t / 2 - 1 for h in range(heads)],
                  "ticktext": head_labels(heads), "constrain": "domain"},
        "yaxis": {"range": [height - 0.5, -0.5], "showgrid": False, "zeroline": False,
                  "tickvals": [l * t + t / 2 - 1 for l in range(layers)],
                  "ticktext": layer_labels(layers), "scaleanchor": "x", "constrain": "domain",
                  "constraintoward": "top"},  # the grid right under its title, not centred in a tall figure
        "margin": {"l": 50, "r": 20, "t": 90, "b": 20}, "shapes": shapes,
    }
    return figure([image, picker], layout, "model-overview")


def head_view_figure(layer_attention: np.ndarray, labels: Sequence[str], layer: int,
                     heads: Sequence[int] | None = None, token: int | None = None,
                     threshold: float = 0.05) -> Figure:
    """BertViz-style head view: lines from each query (left) to the keys it attends to (right).

    One colour per head; opacity grows with the weight (four bands); lines under ``threshold``
    are left out; ``token`` keeps only the lines leaving that query position.
    """
    n_heads, n, _ = layer_attention.shape
    heads = list(range(n_heads)) if heads is None else list(heads)
    y = -np.arange(n, dtype=float)
    bands = [(threshold, 0.25, 0.25), (0.25, 0.5, 0.5), (0.5, 0.75, 0.75), (0.75, 1.01, 1.0)]
    data = []
    for h in heads:
        colour = HEAD_COLOURS[h % len(HEAD_COLOURS)]
        shown = False
        for lo, hi, alpha in bands:
            q, k = np.nonzero((layer_attention[h] >= lo) & (layer_attention[h] < hi))
            if token is not None:
                keep = q == token
                q, k = q[keep], k[keep]
            if not len(q):
                continue
            xs = np.tile([0.0, 1.0, np.nan], len(q))
            ys = np.column_stack([y[q], y[k], np.full(len(q), np.nan)]).ravel()
            data.append({"type": "scatter", "mode": "lines", "x": typed(xs), "y": typed(ys),
                         "line": {"color": colour, "width": 1 + 3 * alpha}, "opacity": alpha,
                         "legendgroup": f"h{h}", "name": f"head {h + 1}", "showlegend": not shown,
                         "hoverinfo": "skip"})
            shown = True
        if not shown:
            data.append({"type": "scatter", "mode": "lines", "x": [None], "y": [None], "name": f"head {h + 1}",
                         "legendgroup": f"h{h}", "line": {"color": colour}, "showlegend": True})
    for side, x in (("query", 0.0), ("key", 1.0)):
        data.append({"type": "scatter", "mode": "text", "x": [x] * n, "y": y.tolist(),
                     "text": list(labels), "textposition": "middle left" if x == 0 else "middle right",
                     "hovertemplate": f"{side} %{{text}}<extra></extra>", "showlegend": False,
                     "textfont": {"size": 13, "color": "#111"}})
    focus = "" if token is None else f", from token {labels[token]}"
    layout = {
        "title": {"text": f"Head view, layer {layer + 1}{focus} (weights >= {threshold:g})"},
        "height": int(min(1400, max(380, 120 + 22 * n))),
        "xaxis": {"range": [-0.6, 1.6], "visible": False},
        "yaxis": {"range": [-n + 0.3, 0.7], "visible": False},
        "legend": {"orientation": "v", "x": 1.0, "y": 1.0},
        "margin": {"l": 20, "r": 20, "t": 60, "b": 20},
    }
    return figure(data, layout, f"head-view-layer{layer + 1}")


def predictions_figure(mlm: Sequence[Any], note: str | None = None) -> Figure:
    """Top-k predictions per masked position as horizontal bars."""
    if not mlm:
        layout = {"title": {"text": "Masked-word predictions"}, "height": 220,
                  "xaxis": {"visible": False}, "yaxis": {"visible": False},
                  "annotations": [{"text": note or "no masked positions", "showarrow": False,
                                   "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}]}
        return figure([], layout, "predictions")
    cells = grid_domains(len(mlm), min(3, len(mlm)), 0.12, 0.18)
    data, layout, annotations = [], {}, []
    for cell, p in zip(cells, mlm):
        ax, x0, y1, width = cell.axis, cell.x0, cell.y1, cell.width
        tokens = [q.token for q in p.predictions]
        probs = [q.probability for q in p.predictions]
        data.append({"type": "bar", "orientation": "h", "x": probs, "y": tokens, "xaxis": f"x{ax}",
                     "yaxis": f"y{ax}", "marker": {"color": "#2b6cb0"}, "text": [f"{v:.3f}" for v in probs],
                     "textposition": "auto", "hovertemplate": "%{y}: %{x:.4f}<extra></extra>", "showlegend": False})
        layout[f"xaxis{ax}"] = {"domain": cell.x_domain, "anchor": f"y{ax}",
                                "range": [0, min(1.0, max(probs) * 1.3 + 0.02)],
                                "title": {"text": "probability"}}
        layout[f"yaxis{ax}"] = {"domain": cell.y_domain, "anchor": f"x{ax}", "autorange": "reversed",
                                "type": "category"}
        label = f"position {p.position}" + (f" (was '{p.original}')" if p.original else "")
        annotations.append({"text": f"<b>{label}</b>", "x": x0 + width / 2, "y": y1 + 0.01, "xref": "paper",
                            "yref": "paper", "showarrow": False, "yanchor": "bottom"})
    layout.update({"title": {"text": "Masked-word predictions"}, "annotations": annotations,
                   "height": 100 + cells[0].rows * 260})
    return figure(data, layout, "predictions")


def classes_figure(classes: Sequence[Any], model: str = "") -> Figure:
    """A sequence classifier's classes as horizontal bars, most probable on top (``Analysis.classes``)."""
    if not classes:
        return figure([], {"title": {"text": "No classifier head: no classes"}, "height": 160,
                           "xaxis": {"visible": False}, "yaxis": {"visible": False}}, "classes")
    probs = [c.probability for c in classes]
    data = [{"type": "bar", "orientation": "h", "x": probs, "y": [c.label for c in classes],
             "marker": {"color": "#2b6cb0"}, "text": [f"{v:.3f}" for v in probs], "textposition": "auto",
             "hovertemplate": "%{y}: %{x:.4f}<extra></extra>", "showlegend": False}]
    top = classes[0]  # a short weights name goes under the title in small type; the page names long ones above
    short = model if model and len(model) <= 70 else ""
    title = f"Predicted class: {top.label} (P = {top.probability:.3f})" + (f"<br><sup>weights: {short}</sup>" if short else "")
    layout = {"title": {"text": title}, "margin": {"t": 70 if short else 50, "l": 90},
              "xaxis": {"range": [0, 1], "title": {"text": "probability"}},
              "yaxis": {"autorange": "reversed", "type": "category"}, "height": 170 + 40 * len(classes)}
    return figure(data, layout, "classes")


def lens_figure(lens: Sequence[Any], note: str | None = None) -> Figure:
    """The MLM lens of the first masked position: layers (rows, 1 at the top) x rank (columns), each
    cell the word the MLM head ranks there on that layer's state, coloured by its probability; the
    model's final answer in bold wherever it appears, and its rank per layer in the row label."""
    if not lens:
        layout = {"title": {"text": "MLM lens: the prediction layer by layer"}, "height": 200,
                  "xaxis": {"visible": False}, "yaxis": {"visible": False},
                  "annotations": [{"text": note or "mask a token to follow its prediction through the layers",
                                   "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}]}
        return figure([], layout, "mlm-lens")
    first = lens[0]
    rows = first.layers
    k = len(rows[0].tokens)
    labels = [f"layer {r.layer} (answer #{r.final_rank})" for r in rows]
    text = [[f"<b>{t}</b>" if t == first.final else t for t in r.tokens] for r in rows]
    z = [list(r.probabilities) for r in rows]
    trace = {"type": "heatmap", "z": z, "x": [f"#{i + 1}" for i in range(k)], "y": labels, "text": text,
             "texttemplate": "%{text}", "colorscale": SEQUENTIAL, "zmin": 0,
             "zmax": max(max(row) for row in z) or 1.0,  # the table's largest probability: small ones stay visible
             "hovertemplate": "%{y}, %{x}: %{text} (probability %{z:.3f} on that layer's state)<extra></extra>",
             # a short figure: the bar's title sits on top, in one word (the hover says what it is the probability of)
             "colorbar": {"thickness": 12, "title": {"text": "probability", "side": "top", "font": {"size": 11}}}}
    more = f"; {len(lens) - 1} more masked position(s) in the CLI's --lens" if len(lens) > 1 else ""
    layout = {"title": {"text": f"MLM lens at position {first.position}: the model's MLM head on each layer's state "
                                f"(final answer <b>{first.final}</b>{more})<br><sup>{rank_sentence(first)}</sup>"},
              "height": 120 + 34 * len(rows), "xaxis": {"type": "category", "side": "top"},
              "yaxis": {"type": "category", "autorange": "reversed", "automargin": True}}
    return figure([trace], layout, "mlm-lens")


def rank_sentence(lens: Any) -> str:
    """The one sentence that reads a row label of the lens, with the first layer's rank as the example."""
    row = lens.layers[0]
    return (f"answer #{row.final_rank} = the rank of the final answer '{lens.final}' among layer {row.layer}'s "
            f"predictions (#1 = that layer's top word)")


def explain_figure(attribution: Any, tokens: Sequence[str]) -> Figure:
    """Why the model predicted its word (``Attribution``) or its class (``ClassAttribution``): one row per
    attribution method, one column per context token; red raised it, blue lowered it. Each row is scaled to
    its own largest magnitude (methods have different units); the hover shows the raw score."""
    is_class = hasattr(attribution, "label")
    what = "the class logit" if is_class else "log P(word)"
    title = (f"Why class '{attribution.label}' (P = {attribution.probability:.3f})" if is_class
             else f"Why '{attribution.target}' at position {attribution.position}")
    methods = list(attribution.scores)
    raw = np.array([attribution.scores[m] for m in methods], dtype=float)  # (methods, context tokens)
    scale = np.abs(raw).max(axis=1, keepdims=True)
    shown = np.divide(raw, scale, out=np.zeros_like(raw), where=scale > 0)
    labels = [f"{j} {tokens[j]}" for j in attribution.context]
    trace = {"type": "heatmap", "z": shown.tolist(), "x": labels, "y": methods, "customdata": raw.tolist(),
             "colorscale": DIVERGING, "zmid": 0, "zmin": -1, "zmax": 1,
             "hovertemplate": "%{y}, %{x}: %{customdata:+.4f}<extra></extra>",
             "colorbar": {"thickness": 12, "len": 1.0,
                          "title": colorbar_title(f"effect on {what}, scaled per method (1 = its largest)"),
                          "tickvals": [-1, 0, 1], "ticktext": ["lowered", "0", "raised"]}}
    layout = {"title": {"text": f"{title}: each context token's effect (red raised it, blue lowered it)"},
              "height": 240 + 40 * len(methods), "xaxis": {"type": "category", "tickangle": -40},
              "yaxis": {"type": "category", "autorange": "reversed", "automargin": True}}
    return figure([trace], layout, "explain")


def score_parts_figure(parts: Any, tokens: Sequence[str], head: int, model: str = "") -> Figure:
    """One head's pre-softmax score parts side by side (``lens.ScoreParts``; ``head`` 0-based), each on a
    diverging scale centred on 0 (a part raises or lowers a key's score), then the attention they make."""
    from .base import GridStyle, heatmap_grid, with_diverging

    labels = [f"{i} {t}" for i, t in enumerate(tokens)]
    panels = [(name, parts.parts[p, head]) for p, name in enumerate(parts.names)] + [("attention", parts.attention[head])]
    title = (f"Layer {parts.layer}, head {head + 1}: softmax({' + '.join(parts.names)})"
             + (f"<br><sup>weights: {model}</sup>" if model else ""))
    style = GridStyle(columns=len(panels), height_per_row=max(300, 14 * len(tokens)), row_labels_once=True,
                      hover="query %{y}<br>key %{x}<br>%{z:.4f}", x_title="key", y_title="query",
                      colorbar=["score term (logit)"] * len(parts.names) + ["attention weight (0–1)"])
    fig = heatmap_grid(panels, labels, labels, title, "score-parts", style)
    for p in range(len(parts.names)):
        with_diverging(fig, p, parts.parts[p, head], "score term (logit)")
    return fig
