"""What ``bertviz-lab score-heads`` writes: head_scores.csv, best_heads.csv (one row per relation
and measure, ``syntax.run.best_heads_long``), uuas.csv (and compare_scores.csv for two
checkpoints), plus an offline report.html with tables, error bars and heatmaps. Plotly.js is
inlined, so the report opens with no network; everything that comes from the treebank or the user
is escaped. The page fits a 1024 px screen: tables have few columns whose cells wrap at spaces,
and any table still too wide scrolls inside its own box."""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd

from ..export import with_parquet, write_atomically
from ..figures.base import Figure
from ..figures.syntax import (
    agreement_figure,
    best_heads_figure,
    relation_figure,
    stats_figure,
    uuas_figure,
)
from ..inline import script_json
from ..syntax.run import BEST_HEADS_NOTE, best_heads_long, offset_text
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
.wide{{max-width:100%;overflow-x:auto}} .word{{white-space:nowrap}}
table.best{{border-collapse:collapse;font-size:0.85em}}
table.best td,table.best th{{padding:3px 8px;border-bottom:1px solid #ddd;vertical-align:top;text-align:left;
overflow-wrap:normal;word-break:normal}} .fig{{margin:1em 0}}</style></head><body>
<h1>{html.escape(title)}</h1>"""


def skipped_empty_words(summary: SyntaxSummary) -> str:
    """The sentences left out because the tokenizer deletes one of their words, said beside the
    over-length ones so no sentence goes missing silently."""
    return (f"skipped for a word that becomes no word piece (only zero-width, soft-hyphen, combining or control "
            f"characters): {summary.sentences_skipped_empty_words} ({summary.words_without_pieces} such words)")


def number(value, digits: int = 3) -> str:
    """A value as the tables print it ("" where there is none)."""
    return "" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def estimate_text(row: pd.Series, value: str, low: str | None = None, high: str | None = None,
                  about: tuple[str, ...] = ()) -> str:
    """One cell: what the value is about (heads, direction), the value and its 95% interval (kept on one line)."""
    if pd.isna(row.get(value, np.nan)):
        return ""
    words = [str(row[c]) for c in about if c in row and isinstance(row[c], str) and row[c]]
    interval = f"[{number(row[low])},\u00a0{number(row[high])}]" if low and low in row and not pd.isna(row[low]) else ""
    return " ".join(words + [number(row[value]), interval]).strip()


def best_heads_cells(row: pd.Series) -> dict[str, str]:
    """A relation's best-heads row as the report's few columns, each cell words that wrap at spaces."""
    offset = offset_text(row.get("baseline_offset"))
    held_offset = number(row.get("heldout_baseline_accuracy"))
    seeds = (f", {int(row['null_seeds'])} seeds {number(row['null_seed_min'])} to {number(row['null_seed_max'])}"
             if not pd.isna(row.get("null_seeds", np.nan)) and row.get("null_seeds") else "")
    single = estimate_text(row, "single_accuracy", "single_ci_low", "single_ci_high", ("single_head", "single_direction"))
    return {
        "relation": str(row["relation"]), "arcs": str(int(row["count"])),
        "best head, in sample": estimate_text(row, "accuracy", "ci_low", "ci_high", ("best_head", "direction")),
        "best head, held out": estimate_text(row, "heldout_accuracy", "heldout_ci_low", "heldout_ci_high",
                                             ("heldout_head", "heldout_direction")),
        "best fixed offset": " ".join(filter(None, [offset, estimate_text(row, "baseline_accuracy", "baseline_ci_low",
                                                                          "baseline_ci_high"),
                                                    f"(held out {held_offset})" if held_offset else ""])),
        "random weights' best head": estimate_text(row, "null_accuracy", "null_ci_low", "null_ci_high") + seeds,
        "tree recall": " ".join(filter(None, [estimate_text(row, "tree_recall", about=("tree_head",)),
                                              f"(right-branching {number(row.get('chain_recall'))})"])),
        "head ensemble, held out": estimate_text(row, "ensemble_accuracy", "ensemble_ci_low", "ensemble_ci_high",
                                                 ("ensemble_heads", "ensemble_direction"))
        + (f" vs single head {single}" if single else ""),
    }


def best_heads_report_table(best: pd.DataFrame) -> str:
    """Best head per relation in at most 8 columns (head, value and interval share a cell), and what
    the paired held-out intervals say, in 3: the wide row's 50 numbers, readable at 1024 px."""
    cells = pd.DataFrame([best_heads_cells(row) for _, row in best.iterrows()])
    cells = cells[[c for c in cells.columns if cells[c].astype(bool).any()]]  # no empty column (no null model, no ensembles)
    verdicts = pd.DataFrame({"relation": best.relation.astype(str),
                             "held-out head against the best offset": [
                                 f"{v} (p = {number(p)})" if isinstance(v, str) and v else ""
                                 for v, p in zip(best.get("heldout_verdict", ""), best.get("heldout_p_value", np.nan))],
                             "head ensemble against the best single head": best.get("ensemble_verdict", "")})
    verdicts = verdicts[[c for c in verdicts.columns if verdicts[c].fillna("").astype(bool).any()]]
    said = f"<h3>What the held-out intervals say</h3>{boxed_table(verdicts)}" if verdicts.shape[1] > 1 else ""
    return boxed_table(cells) + said


def at_spaces(text: object) -> str:
    """Escaped text that wraps only at spaces: a browser may also break after a hyphen, which would cut
    "1-4" or "dep->head" in two, so each word with a hyphen is kept whole."""
    words = html.escape("" if text is None or (not isinstance(text, str) and pd.isna(text)) else str(text)).split(" ")
    return " ".join(f'<span class="word">{w}</span>' if "-" in w else w for w in words)


def boxed_table(frame: pd.DataFrame) -> str:
    """A table (every cell escaped, wrapping at spaces only) in a box of its own that scrolls sideways
    if it is ever wider than the page."""
    cells = frame.astype(object).map(at_spaces).rename(columns=at_spaces)
    return f'<div class="wide">{cells.to_html(index=False, classes="best", border=0, escape=False)}</div>'


def report_html(summary: SyntaxSummary, title: str) -> str:
    relations = list(summary.best_heads["relation"])
    figures = [_figure_div(relation_figure(summary, rel), f"rel-{i}") for i, rel in enumerate(relations)]
    table = best_heads_report_table(summary.best_heads)
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
<p>Each cell: the head(s) (layer-head, 1-based) and direction, the accuracy (share of the relation's arcs whose
head is found, 0&ndash;1) and its 95% interval. {html.escape(BEST_HEADS_NOTE)}</p>
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
        "best_heads": ("best_heads.csv", best_heads_long(summary.best_heads).to_csv(index=False, float_format="%.6f")),
        "uuas": ("uuas.csv", summary.uuas.to_csv(index=False, float_format="%.6f")),
        "report": ("report.html", report_html(summary, title)),
    }
    if compare is not None:
        contents["compare"] = ("compare_scores.csv", compare.to_csv(index=False, float_format="%.6f"))
    return write_atomically(out, with_parquet(contents, {
        "head_scores_parquet": ("head_scores.parquet", summary.head_scores),
        "sentence_scores": ("sentence_head_scores.parquet", summary.sentence_records())}))


def job_report_html(tidy: pd.DataFrame, best: pd.DataFrame, agree: pd.DataFrame,
                    title: str = "bertviz-lab syntax probe: treebanks x checkpoints") -> str:
    """One offline report for a whole job: each pair's best heads and the cross-treebank agreement."""
    pairs = tidy[["model", "model_hash", "treebank", "language"]].drop_duplicates()
    shown = ("relation", "arcs", "best head, in sample", "best head, held out", "best fixed offset")
    rows = [{"model": row["model"], "treebank": row["treebank"],
             **{k: v for k, v in best_heads_cells(row).items() if k in shown}} for _, row in best.iterrows()]
    table = boxed_table(pd.DataFrame(rows, columns=["model", "treebank", *shown]))
    figures = "".join(_figure_div(agreement_figure(agree, model), f"agree-{i}")
                      for i, model in enumerate(sorted(agree.model.unique())))
    listing = boxed_table(pairs)
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
