"""What ``bertviz-lab score-heads`` writes: head_scores.csv, best_heads.csv, uuas.csv (and
compare_scores.csv for two checkpoints), plus an offline report.html with tables, error bars
and heatmaps. Plotly.js is inlined, so the report opens with no network; everything that comes
from the treebank or the user is escaped."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ..export import write_atomically
from ..figures.base import Figure
from ..figures.syntax import (
    agreement_figure,
    best_heads_figure,
    best_heads_table,
    relation_figure,
    stats_figure,
    uuas_figure,
)
from ..inline import script_json
from ..syntax.structure import ENSEMBLE_NOTE
from ..syntax.summary import HELD_OUT_NOTE, OFFSET_NOTE, SyntaxSummary

METHOD = ("Method: Clark et al. (2019), \"What Does BERT Look At?\", and their released code: word-level attention "
          "(to a word = sum over its pieces, from a word = mean over its pieces; [CLS]/[SEP] kept for the "
          "conversion, excluded when scoring). dep->head: a word's predicted head is its most-attended other word; "
          "head->dep: the other word that attends to it most. 'all' counts every word, root words as misses. "
          "Intervals: 95% percentile bootstrap over sentences. Tree decoding: undirected maximum spanning tree of "
          "the symmetrised map, scored as UUAS (after Htut et al. 2019). Heads are 1-based layer-head.")


def _figure_div(fig: Figure, div_id: str) -> str:
    return (f'<div id="{div_id}" class="fig"></div><script>Plotly.newPlot("{div_id}", '
            f'{script_json(fig["data"])}, {script_json(fig["layout"])}, {script_json(fig["config"])});</script>')


def page_head(title: str) -> str:
    """The start of an offline report page: plotly.js inlined, the table style, the title."""
    from plotly.offline import get_plotlyjs

    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script>{get_plotlyjs()}</script>
<style>body{{font-family:DejaVu Sans,Arial,sans-serif;margin:2em;max-width:1300px}}
table.best{{border-collapse:collapse;font-size:0.85em}}
table.best td,table.best th{{padding:3px 8px;border-bottom:1px solid #ddd}} .fig{{margin:1em 0}}</style></head><body>
<h1>{html.escape(title)}</h1>"""


def skipped_empty_words(summary: SyntaxSummary) -> str:
    """The sentences left out because the tokenizer deletes one of their words, said beside the
    over-length ones so no sentence goes missing silently."""
    return (f"skipped for a word that becomes no word piece (only zero-width, soft-hyphen, combining or control "
            f"characters): {summary.sentences_skipped_empty_words} ({summary.words_without_pieces} such words)")


def report_html(summary: SyntaxSummary, title: str) -> str:
    relations = list(summary.best_heads["relation"])
    figures = [_figure_div(relation_figure(summary, rel), f"rel-{i}") for i, rel in enumerate(relations)]
    table = best_heads_table(summary).to_html(index=False, float_format=lambda v: f"{v:.3f}", classes="best",
                                              border=0, escape=True)
    seeds = [c.name for c in summary.null_checkpoints]
    null = (f"<p>Null model: {len(seeds)} random-weight models ({html.escape('; '.join(seeds))}), scored on the same "
            "sentences; its row is the mean over seeds of each seed's best head, with an interval over seeds and "
            "sentences.</p>" if seeds else "")
    ensemble_note = f" {html.escape(ENSEMBLE_NOTE)}" if "ensemble_accuracy" in summary.best_heads else ""
    return f"""{page_head(title)}
<p>Weights: <b>{html.escape(summary.checkpoint.describe())}</b>; heads scored on
<b>{html.escape(summary.source)}</b>. Sentences scored: {summary.sentences_used};
skipped as too long: {summary.sentences_skipped}; {skipped_empty_words(summary)}. {html.escape(METHOD)}</p>
{null}
<p>{html.escape(HELD_OUT_NOTE)} {html.escape(OFFSET_NOTE)}{ensemble_note}</p>
<h2>Best head per relation (relations with at least {summary.settings.min_arcs} arcs)</h2>
{table}
{_figure_div(best_heads_figure(summary), "best")}
<h2>Tree decoding</h2>
{_figure_div(uuas_figure(summary), "uuas")}
<h2>Accuracy per head, per relation</h2>
{''.join(figures)}
<h2>General head statistics</h2>
{_figure_div(stats_figure(summary), "stats")}
</body></html>
"""


def write_outputs(summary: SyntaxSummary, out: Path, title: str = "bertviz-lab syntax probe",
                  compare: pd.DataFrame | None = None) -> dict[str, Path]:
    """Every output file, written to temporary names first and renamed at the end, so no partial
    file ever looks complete."""
    out.mkdir(parents=True, exist_ok=True)
    contents = {
        "head_scores": ("head_scores.csv", summary.head_scores.to_csv(index=False, float_format="%.6f")),
        "best_heads": ("best_heads.csv", summary.best_heads.to_csv(index=False, float_format="%.6f")),
        "uuas": ("uuas.csv", summary.uuas.to_csv(index=False, float_format="%.6f")),
        "report": ("report.html", report_html(summary, title)),
    }
    if compare is not None:
        contents["compare"] = ("compare_scores.csv", compare.to_csv(index=False, float_format="%.6f"))
    return write_atomically(out, contents)


def job_report_html(tidy: pd.DataFrame, best: pd.DataFrame, agree: pd.DataFrame,
                    title: str = "bertviz-lab syntax probe: treebanks x checkpoints") -> str:
    """One offline report for a whole job: each pair's best heads and the cross-treebank agreement."""
    pairs = tidy[["model", "model_hash", "treebank", "language"]].drop_duplicates()
    columns = [c for c in ("model", "treebank", "language", "relation", "best_head", "direction", "accuracy", "ci_low",
                           "ci_high", "heldout_accuracy", "baseline_offset", "baseline_accuracy", "count") if c in best]
    table = best[columns].to_html(index=False, float_format=lambda v: f"{v:.3f}", classes="best", border=0)
    figures = "".join(_figure_div(agreement_figure(agree, model), f"agree-{i}")
                      for i, model in enumerate(sorted(agree.model.unique())))
    listing = pairs.to_html(index=False, classes="best", border=0)
    return f"""{page_head(title)}
<p>{html.escape(METHOD)}</p>
<h2>Pairs scored</h2>
{listing}
<h2>Does the same head win across treebanks?</h2>
<p>For each relation, the share of treebanks (languages) in which each head is the best one
(Ravishankar et al. 2021 ask this across languages). Heads that win nowhere are left out.</p>
{figures}
<h2>Best head per relation, per pair (95% bootstrap intervals over sentences)</h2>
{table}
</body></html>
"""
