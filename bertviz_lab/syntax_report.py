"""The offline HTML report of a syntax probe: tables plus layers x heads heatmaps per relation
and the general head statistics. Plotly.js is inlined, so it opens with no network."""
from __future__ import annotations

import html
import json

import numpy as np

from . import plots
from .metrics import HEAD_STATS
from .syntax import ALL, DIRECTIONS, ProbeResult


def _figure_div(fig: plots.Figure, div_id: str) -> str:
    return (f'<div id="{div_id}" class="fig"></div><script>Plotly.newPlot("{div_id}", '
            f'{json.dumps(fig["data"])}, {json.dumps(fig["layout"])}, {json.dumps(fig["config"])});</script>')


def relation_figure(result: ProbeResult, relation: str) -> plots.Figure:
    counts = result.counts
    panels = []
    for direction in DIRECTIONS:
        total = counts.total[(relation, direction)]
        panels.append((f"{direction} (n={total})", counts.correct[(relation, direction)] / max(total, 1)))
    heads = [f"H{h + 1}" for h in range(counts.heads)]
    layers = [f"L{l + 1}" for l in range(counts.layers)]
    offset, base = counts.baseline(relation, DIRECTIONS[0])
    return plots.heatmap_grid(panels, heads, layers, title=f"{relation}: accuracy per head "
                              f"(best fixed offset {offset:+d}: {base:.2f})", filename=f"syntax-{relation}",
                              columns=2, height_per_row=40 * counts.layers + 60,
                              hover="layer %{y}, head %{x}<br>accuracy %{z:.3f}", x_title="head", y_title="layer",
                              zmax_shared=True)


def stats_figure(result: ProbeResult) -> plots.Figure:
    stats = result.counts.general_stats()
    heads = [f"H{h + 1}" for h in range(result.counts.heads)]
    layers = [f"L{l + 1}" for l in range(result.counts.layers)]
    return plots.heatmap_grid([(k, stats[k]) for k in HEAD_STATS if k in stats], heads, layers,
                              title="General head statistics over the treebank (mean over sentences)",
                              filename="head-statistics", columns=4, height_per_row=32 * result.counts.layers + 80,
                              hover="layer %{y}, head %{x}<br>%{z:.3f}", x_title="head", y_title="layer")


def report_html(result: ProbeResult, title: str) -> str:
    from plotly.offline import get_plotlyjs

    best = result.best_heads
    relations = list(best["relation"])
    figures = [_figure_div(relation_figure(result, rel), f"rel-{i}") for i, rel in enumerate(relations)]
    table = best.to_html(index=False, float_format=lambda v: f"{v:.3f}", classes="best", border=0)
    overall = best[best.relation == ALL]
    summary = ""
    if len(overall):
        row = overall.iloc[0]
        summary = (f"<p>Best single head over all relations: <b>{row.best_head}</b> ({row.direction}), "
                   f"accuracy {row.accuracy:.3f} on {int(row['count'])} arcs.</p>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script>{get_plotlyjs()}</script>
<style>body{{font-family:DejaVu Sans,Arial,sans-serif;margin:2em;max-width:1300px}}
table.best{{border-collapse:collapse}} table.best td,table.best th{{padding:3px 10px;border-bottom:1px solid #ddd}}
.fig{{margin:1em 0}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Model: {html.escape(result.model)}. Sentences scored: {result.sentences_used}; skipped as too long:
{result.sentences_skipped}. Heads are 1-based layer-head. Method: Clark et al. (2019), "What Does BERT Look At?":
word-level attention (to a word = sum over its pieces, from a word = mean over its pieces; [CLS]/[SEP] kept for
the conversion, excluded when scoring); a head is right for an arc when the most-attended other word is the
gold partner.</p>
{summary}
<h2>Best head per relation</h2>
{table}
<h2>Accuracy per head, per relation</h2>
{''.join(figures)}
<h2>General head statistics</h2>
{_figure_div(stats_figure(result), "stats")}
</body></html>
"""


__all__ = ["report_html", "relation_figure", "stats_figure", "np"]
