"""From an Analysis and the display options to figures and tables.

No forward pass happens here: changing layer, head or a toggle re-renders from the cached
Analysis. The UI calls these functions; so do the tests.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..attention import HEAD_STATS, Display, attention_view, head_statistics
from ..attention.sources import get_source
from ..bert.sources.flow import attention_flow, row_normalised
from ..lab import Analysis
from ..naming import SPECIAL_TOKENS, head_labels, layer_head, layer_head_file, layer_labels, layer_name
from .attention import MapScale, head_view_figure, heatmap_figure, overview_figure, predictions_figure
from .base import ROWS_SUM_TO_ONE, Figure, GridStyle, fit_title, fixed_top, heatmap_grid, quantity, resolve_scale, scale_note


@dataclass
class ViewOptions:
    layer: int = 0  # 0-based
    head: int = 0  # 0-based
    hide_special: bool = False
    word_level: bool = False
    pair_filter: str = "all"
    head_view_token: int | None = None  # position in the displayed labels, None = all tokens

    def clamp(self, analysis: Analysis) -> ViewOptions:
        """A copy whose layer and head exist in this analysis (the options are never changed)."""
        return replace(self, layer=int(min(max(self.layer, 0), analysis.n_layers - 1)),
                       head=int(min(max(self.head, 0), analysis.n_heads - 1)))


def _view(analysis: Analysis, weights: np.ndarray, opts: ViewOptions):
    return attention_view(weights, analysis.tokens, analysis.word_ids, analysis.segment_ids,
                          Display(opts.hide_special, opts.word_level, opts.pair_filter))


def map_scale(analysis: Analysis, scale: str, whose: str = "this head's") -> MapScale:
    """How the attention maps of ``analysis`` are coloured under the page's ``scale`` choice ("fixed",
    "per-head" or "auto"): fixed is 0–1 for weights whose rows sum to 1 and one scale over every head
    for raw norms; per head is each map to its own max, and the colour bar says so."""
    mode = resolve_scale(scale, analysis.source)
    top = fixed_top(analysis.source, analysis.attention) if mode == "fixed" else None
    return MapScale(colorbar=quantity(analysis.source) + scale_note(mode, analysis.source, whose), zmax=top)


def single_head(analysis: Analysis, opts: ViewOptions, scale: str = "auto") -> tuple[Figure, list[str]]:
    """One head's map; ``scale``: "fixed", "per-head" or "auto" (``map_scale``)."""
    opts = opts.clamp(analysis)
    view = _view(analysis, analysis.attention[opts.layer, opts.head], opts)
    title = f"{layer_head(opts.layer, opts.head)}{source_label(analysis)}"
    return heatmap_figure(view, title, filename=f"attention-{layer_head_file(opts.layer, opts.head)}",
                          scale=map_scale(analysis, scale)), view.notes


FLOW_VIEW_TOKENS = 24  # flow up to the chosen layer is recomputed on every switch: keep it under ~0.1 s


def source_label(analysis: Analysis) -> str:
    return "" if analysis.source == "attention" else f" ({analysis.source})"


def aggregates(analysis: Analysis, opts: ViewOptions, layers: np.ndarray | None = None, scale: str = "auto") -> Figure:
    """Raw head next to its layer's matrix, the mean over layers, rollout and flow up to this layer.

    ``layers`` (layers, q, k) is the per-layer matrix of the analysis's source (the head mean for
    softmax attention, ||sum_h alpha f|| or the residual-aware norms otherwise); rollout and flow
    run on it (Abnar & Zuidema 2020), with the identity added except for the sources that already
    include the residual; GlobEnc's rollout is its own plain product (``Source.rollout``). ``scale``: the
    page's colour scale ("fixed", "per-head" or "auto"); rollout and flow rows sum to 1 whatever the source.
    """
    opts = opts.clamp(analysis)
    a = analysis.attention
    layers = a.mean(1) if layers is None else layers
    source = get_source(analysis.source)
    residual, aggregated = not source.residual_included, source.aggregated
    # what the per-layer matrix is, in the registry's words: a head mean, a norm, or a layer's own matrix
    layer_kind = ("mean of layer" if analysis.source == "attention" else "norm of layer" if analysis.source == "norm"
                  else f"{source.name} up to layer" if source.aggregated else f"{source.name}, layer")
    panels = [
        (f"L{opts.layer + 1} H{opts.head + 1}{source_label(analysis)}", a[opts.layer, opts.head]),
        (f"{layer_kind} {opts.layer + 1}", layers[opts.layer]),
        ("mean over layers", layers.mean(0)),
        (f"{'aggregated by the method' if aggregated else 'rollout'} up to layer {opts.layer + 1}",
         source.rollout(layers)[opts.layer]),
    ]
    if len(analysis.tokens) <= FLOW_VIEW_TOKENS and not aggregated:
        panels.append((f"flow up to layer {opts.layer + 1}", attention_flow(layers, up_to=opts.layer,
                                                                             residual=residual)))
    views = [_view(analysis, z, opts) for _, z in panels]
    labels_x, labels_y = views[0].key_labels, views[0].query_labels
    flow = ("no flow: this source is aggregated from the input already" if aggregated else
            "flow shown up to 24 tokens" if len(panels) == 4 else "rollout and flow rows sum to 1")
    shown = [(name, v.weights) for (name, _), v in zip(panels, views)]
    fixed = resolve_scale(scale, analysis.source) == "fixed"  # raw norms: one scale for the raw panels either way
    rolled = (f"{source.name}, rows normalised (0–1, rows sum to 1)" if aggregated else
              "rollout or flow weight (0–1, rows sum to 1)" if len(panels) == 5 else "rollout weight (0–1, rows sum to 1)")
    return heatmap_grid(shown, labels_x, labels_y,
                        title=f"Raw{source_label(analysis)} vs aggregates (rollout and flow: Abnar & Zuidema 2020; "
                              f"{flow})", filename=f"aggregates-{layer_name(opts.layer)}",
                        style=GridStyle(columns=3, height_per_row=360, row_labels_once=True,
                                        groups=[0, 0, 0, 1, 1][:len(panels)],  # raw weights on one scale, rollout and flow on another
                                        colorbar=[quantity(analysis.source)] * 3 + [rolled] * 2,
                                        fixed_max=1.0 if fixed and analysis.source in ROWS_SUM_TO_ONE else None))


def head_view(analysis: Analysis, opts: ViewOptions) -> Figure:
    opts = opts.clamp(analysis)
    view = attention_view(analysis.attention[opts.layer], analysis.tokens, analysis.word_ids, analysis.segment_ids,
                          Display(opts.hide_special, opts.word_level))
    labels = [lab.split(" ", 1)[1] for lab in view.query_labels]
    token = opts.head_view_token if opts.head_view_token is not None and opts.head_view_token < len(labels) else None
    return head_view_figure(view.weights, labels, opts.layer, token=token)


def weights_subtitle(analysis: Analysis) -> str:
    """The line under a title that says which weights a figure shows."""
    return f"<br><sup>weights: {html.escape(analysis.model)}</sup>"


def overview(analysis: Analysis, selected: tuple[int, int] | None = None, scale: str = "auto") -> Figure:
    """Every head's thumbnail; ``scale``: "fixed", "per-head" or "auto" (``map_scale``)."""
    colours = map_scale(analysis, scale, whose="each head's")
    fig = overview_figure(analysis.attention, selected=selected, scale=colours)
    fit_title(fig["layout"], fig["layout"]["title"]["text"] + weights_subtitle(analysis))
    return fig


def summary(analysis: Analysis, scale: str = "auto") -> Figure:
    """Per-head statistics; norm-based sources are first renormalised so each row sums to 1, so the shares
    are shares whatever the source: ``scale`` "fixed" (and "auto") reads them on 0–1, "per-head" on their max."""
    weights = analysis.attention if analysis.source == "attention" else row_normalised(analysis.attention)
    stats = head_statistics(weights, analysis.tokens)
    fixed = resolve_scale(scale, "attention") == "fixed"
    bars = ["entropy (nats)" if name == "entropy" else "share of a query's weight (0–1)"
            for name in HEAD_STATS]
    fig = heatmap_grid([(name, stats[name]) for name in HEAD_STATS], head_labels(analysis.n_heads),
                        layer_labels(analysis.n_layers),
                        title=f"Per-head statistics for this input{source_label(analysis)} (layers x heads, mean over "
                        "query tokens" + ("" if analysis.source == "attention" else "; rows renormalised to sum to 1")
                        + "; entropy in nats)" + weights_subtitle(analysis), filename="head-summary",
                        style=GridStyle(columns=4, height_per_row=300, hover="layer %{y}, head %{x}<br>%{z:.3f}",
                                        x_title="head", y_title="layer", row_labels_once=True,
                                        groups=[None if name == "entropy" else 0 for name in HEAD_STATS],  # shares: one scale
                                        colorbar=bars, fixed_max=1.0 if fixed else None))
    return fig


PREDICTION_COLUMNS = ["position", "masked token", "rank", "prediction", "probability"]


def predictions_table(analysis: Analysis | None) -> pd.DataFrame:
    if analysis is None:
        return pd.DataFrame(columns=PREDICTION_COLUMNS)
    rows = [(p.position, p.original or p.token, r + 1, q.token, round(q.probability, 4))
            for p in analysis.mlm for r, q in enumerate(p.predictions)]
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def prediction_notes(analysis: Analysis) -> str:
    """The masked-word note and the next-sentence probability, as Markdown."""
    lines = []
    if analysis.mlm_note:
        lines.append(analysis.mlm_note)
    if analysis.nsp is not None:
        lines.append(f"**Next-sentence prediction:** P(sentence B follows sentence A) = {analysis.nsp:.3f}")
    elif analysis.nsp_note:
        lines.append(analysis.nsp_note)
    if analysis.classes:  # a sequence classifier: its classes first, most probable first
        lines.insert(0, "**Predicted class:** " + ", ".join(f"{c.label} {c.probability:.3f}" for c in analysis.classes))
    return "\n\n".join(lines)


def predictions(analysis: Analysis) -> tuple[Figure, pd.DataFrame, str]:
    return predictions_figure(analysis.mlm, analysis.mlm_note), predictions_table(analysis), prediction_notes(analysis)


def token_choices(analysis: Analysis) -> list[tuple[str, int]]:
    """Maskable tokens for the picker: every non-special position, labelled uniquely."""
    originals = {p.position: p.original for p in analysis.mlm if p.original}
    out = []
    for i, tok in enumerate(analysis.tokens):
        if tok in SPECIAL_TOKENS:
            continue
        out.append((f"{i} {originals.get(i, tok)}", i))
    return out
