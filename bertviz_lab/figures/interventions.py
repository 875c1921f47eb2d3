"""Figures and tables for interventions: baseline vs intervened attention and their difference,
per-head divergence, prediction changes, offset profiles, sweeps, position-embedding similarity."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..attention import Display, attention_view
from ..interventions import Comparison, DirectionalRow, RelativeBiasTable
from ..interventions.sweeps import RelativeEmbeddingSimilarity, RotaryBands
from ..naming import head_labels, layer_head, layer_head_file, layer_name
from .analysis import ViewOptions
from .base import (
    DIVERGING,
    GRID_BAR,
    ROWS_SUM_TO_ONE,
    Figure,
    GridStyle,
    colorbar_title,
    diverging_scale,
    figure,
    heatmap_grid,
    layer_head_figure,
    quantity,
    resolve_scale,
    typed,
    with_diverging,
)

OFFSETS = [str(o) for o in range(-5, 6)]


def fixed_max(source: str, scale: str) -> float | None:
    """The top of the compared panels' scale: 1 under the fixed scale for weights whose rows sum to 1; None
    (their shared max) otherwise."""
    return 1.0 if resolve_scale(scale, source) == "fixed" and source in ROWS_SUM_TO_ONE else None


def comparison_figure(c: Comparison, opts: ViewOptions, scale: str = "auto") -> Figure:
    """Baseline, intervened and their difference for one head; ``scale``: "fixed", "per-head" or "auto"
    (the page's colour scale for the first two panels; the difference is always centred on 0)."""
    opts = opts.clamp(c.baseline)
    source = c.baseline.source
    l, h = opts.layer, opts.head
    b, p = c.baseline.attention[l, h], c.intervened.attention[l, h]
    views = [attention_view(z, c.baseline.tokens, c.baseline.word_ids, c.baseline.segment_ids,
                            Display(opts.hide_special, opts.word_level, opts.pair_filter))
             for z in (b, p)]
    diff = views[1].weights - views[0].weights
    # what was done goes in the title: as a panel's name it would run into the next panel's
    fig = heatmap_grid([("baseline", views[0].weights), ("intervened", views[1].weights), ("intervened - baseline", diff)],
                       views[0].key_labels, views[0].query_labels,
                       title=f"{layer_head(l, h)}: baseline vs intervened ({c.intervention.describe()})",
                       filename=f"intervention-{layer_head_file(l, h)}",
                       style=GridStyle(columns=3, height_per_row=460, groups=[0, 0, None],  # baseline and intervened: one scale
                                       row_labels_once=True, colorbar=quantity(source), fixed_max=fixed_max(source, scale)))
    unit = "attention" if source == "attention" else quantity(source).split(" (")[0]
    return with_diverging(fig, 2, diff, f"Δ {unit} (intervened − baseline)")


def js_figure(c: Comparison) -> Figure:
    return layer_head_figure(c.js, f"Jensen-Shannon divergence per head, baseline vs {c.intervention.describe()}",
                             "intervention-js-divergence", value_label="JS (nats)",
                             colorbar="JS divergence (nats), mean over queries")


def offsets_figure(c: Comparison, layer: int, scale: str = "auto") -> Figure:
    """Each head's mean weight by relative offset, before and after, and the change; ``scale`` as
    ``comparison_figure``."""
    heads = head_labels(c.baseline.n_heads)
    change = c.offsets_after[layer] - c.offsets_before[layer]
    fig = heatmap_grid([("before", c.offsets_before[layer]), ("after", c.offsets_after[layer]),
                              ("after - before", change)],
                             OFFSETS, heads, title=f"Mean attention by relative offset (key - query), layer {layer + 1}",
                             filename=f"offset-profile-{layer_name(layer)}",
                             style=GridStyle(columns=3, height_per_row=380, hover="head %{y}, offset %{x}<br>%{z:.4f}",
                                             x_title="offset", y_title="head", groups=[0, 0, None], row_labels_once=True,
                                             colorbar="mean attention weight at that offset (0–1)",
                                             fixed_max=fixed_max(c.baseline.source, scale)))
    return with_diverging(fig, 2, change, "Δ mean attention weight (after − before)")


CHANGE_COLUMNS = ["position", "token", "baseline top-1", "p(top-1) baseline", "p(top-1) intervened", "change",
                  "intervened top-1", "p(intervened top-1)"]


def changes_table(c: Comparison) -> pd.DataFrame:
    rows = [(x.position, x.token, x.baseline_top, round(x.baseline_probability, 4), round(x.intervened_probability, 4),
             round(x.change, 4), x.intervened_top, round(x.intervened_top_probability, 4)) for x in c.changes]
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS)


DIRECTIONAL_COLUMNS = ["position", "token", "scored", "target", "p both", "p left only", "p right only",
                       "p left control", "p right control"]


def directional_table(rows: list[DirectionalRow]) -> pd.DataFrame:
    """P(target) per condition; the controls hide as many random keys as the directional masks."""
    return pd.DataFrame([{"position": r.position, "token": r.token, "scored": r.scored, "target": r.target,
                          "p both": round(r.both, 4), "p left only": round(r.left_only, 4),
                          "p right only": round(r.right_only, 4), "p left control": round(r.left_control, 4),
                          "p right control": round(r.right_control, 4)} for r in rows],
                        columns=DIRECTIONAL_COLUMNS)


DIRECTIONAL_CONDITIONS = (("both sides", "both", "#2b6cb0"), ("left only", "left_only", "#dd6b20"),
                          ("right only", "right_only", "#2f855a"),
                          ("left control (as many random keys hidden)", "left_control", "#fbd38d"),
                          ("right control (as many random keys hidden)", "right_control", "#9ae6b4"))


def directional_figure(rows: list[DirectionalRow]) -> Figure:
    """The directional sweep at a glance (issue 60): per masked position, P(target) with both sides of the
    context, with the left or the right side only, and with each side's control (as many random keys hidden), as
    grouped bars on 0-1, so "the right side alone predicts it" reads without the table."""
    x = [f"{r.position} {r.token} → {r.target}" for r in rows]
    data = [{"type": "bar", "name": name, "x": x, "y": [float(getattr(r, key)) for r in rows],
             "marker": {"color": colour}, "hovertemplate": f"%{{x}}<br>{name}: P = %{{y:.3f}}<extra></extra>"}
            for name, key, colour in DIRECTIONAL_CONDITIONS]
    layout = {"title": {"text": "Directional context: P(target) with both sides, one side only, and each side's control"},
              "barmode": "group", "height": 380, "yaxis": {"title": {"text": "P(target)"}, "range": [0, 1]},
              "xaxis": {"title": {"text": "masked position → the word scored"}},
              "legend": {"orientation": "h", "y": -0.3}}
    return figure(data, layout, "directional-sweep")


def ablation_figure(drops: np.ndarray) -> Figure:
    return layer_head_figure(drops, "Head importance: drop in log-probability of the top-1 prediction "
                             "when the head is zeroed (mean over masked positions)", "head-ablation",
                             diverging=True, value_label="drop in log p", colorbar="drop in log P(word) (nats)")


def patching_figure(heads: np.ndarray, correct: str, wrong: str) -> Figure:
    """Activation patching: per head, the change in the logit difference (correct − wrong) when that head's
    output comes from the donor sentence, (layers, heads)."""
    return layer_head_figure(heads, f"Activation patching: change in logit difference ({correct} - {wrong}) when "
                             "one head's output comes from the donor", "patching", diverging=True,
                             value_label="change", colorbar=f"Δ logit difference ({correct} − {wrong})")


def position_figure(learned: np.ndarray, sinusoidal: np.ndarray) -> Figure:
    n = learned.shape[0]
    labels = [str(i) for i in range(n)]
    fig = heatmap_grid([("learned position embeddings", learned), ("sinusoidal (Vaswani et al. 2017)", sinusoidal)],
                             labels, labels, title=f"Cosine similarity of positions 0..{n - 1}",
                             filename=f"position-similarity-{n}",
                             style=GridStyle(columns=2, height_per_row=520, hover="position %{y} vs %{x}<br>cosine %{z:.3f}",
                                             x_title="position", y_title="position"))
    for trace in fig["data"]:  # both on the whole range of a cosine
        trace.update({"colorscale": DIVERGING, "zmin": -1, "zmax": 1, "zmid": 0})
        trace["colorbar"]["title"] = colorbar_title("cosine similarity (−1 to 1)", **GRID_BAR)
    return fig


def relative_bias_figure(table: RelativeBiasTable) -> Figure:
    """MPNet's relative-position bias, heads x offset buckets (one table for every layer): the score each head
    adds when the key is that far from the query, on a scale centred on 0; columns run from the farthest
    earlier key to the farthest later one, each labelled with the offsets (key − query) it covers."""
    heads = head_labels(table.values.shape[0])
    trace = {"type": "heatmap", "z": typed(table.values), "x": list(table.labels), "y": heads,
             **diverging_scale(table.values),
             "colorbar": {"thickness": 12, "title": colorbar_title("bias added to the attention score (logit)")},
             "hovertemplate": "head %{y}, offset %{x}<br>bias %{z:.3f}<extra></extra>"}
    layout = {"title": {"text": "Relative-position bias per head and offset bucket (every layer)"},
              "height": 160 + 34 * len(heads), "margin": {"l": 80, "r": 30, "t": 90, "b": 110},
              "xaxis": {"type": "category", "tickangle": -60, "tickfont": {"size": 10},
                        "title": {"text": "offset bucket (key − query)"}},
              "yaxis": {"type": "category", "autorange": "reversed", "title": {"text": "head"}}}
    return figure([trace], layout, "relative-position-bias")


def relative_embedding_figure(similarity: RelativeEmbeddingSimilarity, n: int) -> Figure:
    """The position inspector for DeBERTa (``sweeps.RelativeEmbeddingSimilarity``): the cosine similarity of the
    relative-position embeddings n tokens read, rows and columns by bucketed offset (query − key)."""
    labels = similarity.labels
    fig = heatmap_grid([("relative-position embeddings (every layer)", similarity.cosine)], labels, labels,
                       title=f"DeBERTa's relative positions for {n} tokens: cosine similarity of the table rows",
                       filename=f"relative-embeddings-{n}",
                       style=GridStyle(columns=1, height_per_row=560, hover="offset %{y} vs %{x}<br>cosine %{z:.3f}",
                                       x_title="offset query − key (bucketed)", y_title="offset query − key (bucketed)"))
    trace = fig["data"][0]
    trace.update({"colorscale": DIVERGING, "zmin": -1, "zmax": 1, "zmid": 0})
    trace["colorbar"]["title"] = colorbar_title("cosine similarity (−1 to 1)", **GRID_BAR)
    return fig


def rotary_bands_figure(bands: RotaryBands, n: int) -> Figure:
    """The position inspector for rotary positions (ModernBERT): each frequency band's wavelength in tokens, global
    and local layers (log scale), beside the input length n and the local window, so the bands that tell
    positions apart over n tokens (wavelength below n) stand out from those that barely turn."""
    pairs = list(range(1, len(bands.global_wavelengths) + 1))
    data = [{"type": "scatter", "mode": "lines+markers", "x": pairs, "y": typed(wave), "name": name,
             "hovertemplate": f"{name}<br>band %{{x}}: %{{y:.1f}} tokens per turn<extra></extra>"}
            for name, wave in ((f"global layers {', '.join(map(str, bands.global_layers))} (θ = {bands.global_theta:g})",
                                bands.global_wavelengths),
                               (f"local layers {', '.join(map(str, bands.local_layers))} (θ = {bands.local_theta:g})",
                                bands.local_wavelengths)) if len(wave)]
    lines = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y, "line": {"dash": dash, "width": 1}}
             for y, dash in ((n, "dash"), (2 * bands.half_window + 1, "dot"))]
    notes = [{"text": text, "xref": "paper", "x": 1.0, "y": float(np.log10(y)), "yref": "y", "showarrow": False,
              "xanchor": "right", "yanchor": "bottom", "font": {"size": 10}}
             for y, text in ((n, f"{n} tokens (this input length)"), (2 * bands.half_window + 1, "local window"))]
    layout = {"title": {"text": "Rotary positions: how many tokens each frequency band takes to turn once"},
              "height": 460, "shapes": lines, "annotations": notes, "legend": {"orientation": "h", "y": -0.2},
              "xaxis": {"title": {"text": "frequency band (coordinate pair of each head)"}},
              "yaxis": {"type": "log", "title": {"text": "wavelength (tokens, log scale)"}}}
    return figure(data, layout, f"rotary-bands-{n}")


def position_geometry_figure(learned: np.ndarray, table: RelativeBiasTable) -> Figure:
    """The position inspector for a model with both schemes (MPNet): the learned absolute table's cosine
    similarity (positions x positions) left, the relative-position bias (heads x offset buckets) right, each
    on its own axes and its own diverging colour bar."""
    n = learned.shape[0]
    labels = [str(i) for i in range(n)]
    cosine = {"type": "heatmap", "z": typed(learned), "x": labels, "y": labels, "xaxis": "x", "yaxis": "y",
              "colorscale": DIVERGING, "zmin": -1, "zmax": 1, "zmid": 0,
              "colorbar": {"thickness": 8, "x": 0.43, "len": 0.9, "title": colorbar_title("cosine similarity (−1 to 1)", **GRID_BAR)},
              "hovertemplate": "position %{y} vs %{x}<br>cosine %{z:.3f}<extra></extra>"}
    bias = relative_bias_figure(table)["data"][0]
    bias.update({"xaxis": "x2", "yaxis": "y2", "colorbar": {"thickness": 8, "x": 1.0, "len": 0.9, "title": colorbar_title(
        "bias added to the score (logit)", **GRID_BAR)}})
    axis = {"type": "category", "tickangle": -60, "tickfont": {"size": 10}, "automargin": True}
    layout = {"title": {"text": f"Positions 0..{n - 1}: learned absolute table and relative-position bias"},
              "height": 560, "margin": {"l": 80, "r": 30, "t": 90, "b": 110},
              "xaxis": {**axis, "domain": [0.0, 0.4], "anchor": "y", "title": {"text": "position"}},
              "yaxis": {"type": "category", "autorange": "reversed", "anchor": "x", "title": {"text": "position"}},
              "xaxis2": {**axis, "domain": [0.55, 0.97], "anchor": "y2", "title": {"text": "offset bucket (key − query)"}},
              "yaxis2": {"type": "category", "autorange": "reversed", "anchor": "x2", "title": {"text": "head"}},
              "annotations": [{"text": f"<b>{name}</b>", "x": x, "y": 1.02, "xref": "paper", "yref": "paper",
                               "showarrow": False, "xanchor": "center", "yanchor": "bottom"}
                              for name, x in (("learned position embeddings", 0.2),
                                              ("relative-position bias (every layer)", 0.76))]}
    return figure([cosine, bias], layout, f"position-geometry-{n}")


def scheme_geometry_figure(geometry, n: int) -> Figure:
    """The position inspector for a scheme without a view of its own (``PositionScheme.geometry``: ALiBi's slopes,
    relative buckets alone, fixed sinusoids): its one matrix, on a diverging scale centred on 0."""
    values = np.asarray(geometry.values, dtype=float)
    top = float(np.nanmax(np.abs(values))) or 1.0
    axis = {"type": "category", "tickfont": {"size": 10}, "automargin": True}
    data = [{"type": "heatmap", "z": typed(values), "x": list(geometry.columns), "y": list(geometry.rows),
             "colorscale": DIVERGING, "zmin": -top, "zmax": top, "zmid": 0,
             "colorbar": {"thickness": 10, "title": colorbar_title("value", **GRID_BAR)},
             "hovertemplate": f"{geometry.row_title} %{{y}}<br>{geometry.column_title} %{{x}}<br>%{{z:.3f}}<extra></extra>"}]
    layout = {"title": {"text": f"{geometry.title} ({n} tokens)"}, "height": 520,
              "xaxis": {**axis, "title": {"text": geometry.column_title}},
              "yaxis": {**axis, "autorange": "reversed", "title": {"text": geometry.row_title}}}
    return figure(data, layout, f"position-scheme-{n}")
