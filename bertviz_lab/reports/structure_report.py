"""What ``bertviz-lab structural-probe`` writes: probe_scores.csv (every probe, every evaluated
sentence), structure.csv (the comparison per layer on the held-out half), ensembles.csv (head
ensembles per relation), training_curves.csv, probes.safetensors (the trained probes with the
weights' hash) and an offline report.html with the comparison figure and the conclusions the
paired intervals support."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ..export import write_atomically
from ..figures.structure_figure import structure_figure
from ..syntax.structure import ENSEMBLE_NOTE, StructureResult, save_probes
from .syntax_report import _figure_div, page_head

METHOD = (
    "Structural probe: Hewitt & Manning (2019), as their released code (github.com/john-hewitt/structural-probes) "
    "defines it: word vectors = the mean of a word's pieces; distance probe ||B(h_i - h_j)||^2 and depth probe "
    "||B h_i||^2 at full rank, L1 loss normalised by length^2 (length) per sentence, Adam 0.001 with "
    "ReduceLROnPlateau, batches of 20, up to 40 epochs, early stopping on a 10% slice of the train split. "
    "UUAS: minimum spanning tree over non-punctuation words (PTB punctuation tags, UD PUNCT where there are none), "
    "pooled over sentences; Spearman: per word row (distance) or per sentence (depth), averaged per length and "
    "then over lengths 5-50. Attention trees: maximum spanning tree of a head's (or an ensemble's mean) "
    "symmetrised word-level map over the same words. Head and ensemble chosen on one half of the sentences, every "
    "method reported on the other half; intervals: 95% percentile bootstrap over those sentences.")


COUNTS = ("layer", "sentences", "epochs", "best_epoch", "ensemble_arcs")  # whole numbers, whatever pandas made them


def whole_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its counts as integers: a column with one missing value (right-branching has no
    layer) comes out of pandas as float and would print "1.000"; layers are 0 (embeddings) to L."""
    return table.astype({c: "Int64" for c in COUNTS if c in table})


def html_table(table: pd.DataFrame) -> str:
    """A table as the report prints it: counts as whole numbers, other numbers to 3 decimals, blank where none."""
    shown = whole_numbers(table).astype({c: object for c in COUNTS if c in table})
    for column in (c for c in COUNTS if c in shown):
        shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else str(int(v)))
    return shown.to_html(index=False, float_format=lambda v: f"{v:.3f}", classes="best", border=0, na_rep="")


def curves_table(result: StructureResult) -> pd.DataFrame:
    rows = [{"model": key.split("/")[0], "kind": key.split("/")[1], "layer": layer, "epoch": epoch + 1,
             "train_loss": train, "stop_loss": stop}
            for key, probes in result.probes.items() for layer, p in probes.items()
            for epoch, (train, stop) in enumerate(p.curve)]
    return pd.DataFrame(rows)


SELECTIVITY_NOTE = ("Selectivity (Hewitt & Liang 2019): the same probe trained the same way on a control task (each word "
                    "type attaches to itself, the first or the last word), its score there subtracted from its score "
                    "on gold trees; the interval is paired over the report half's sentences. A probe that reaches gold "
                    "trees no better than it reaches the control task's shows its capacity, not the representation.")


def selectivity_html(result: StructureResult) -> str:
    """The structural probe's selectivity per layer and the head-ensemble classifier's, when a control was trained."""
    if not len(result.selectivity):
        return ""
    ensemble = result.ensemble_selectivity
    line = f"<p>Head-ensemble classifier: {html.escape(ensemble['verdict'])}.</p>" if ensemble else ""
    shown = result.selectivity.drop(columns=["verdict"])
    return (f"<h2>Selectivity: the probes against their control task</h2><p>{html.escape(SELECTIVITY_NOTE)}</p>"
            f'<div class="wide">{html_table(shown)}</div>{line}')


def report_html(result: StructureResult, title: str) -> str:
    fig = structure_figure(result.comparison, result.checkpoint.name, result.eval_treebank or "the treebank")
    table = html_table(result.probe_table)
    ensembles = html_table(result.ensembles) if len(result.ensembles) else "<p>No relation was given.</p>"
    said = "".join(f"<li>{html.escape(line)}</li>" for line in result.conclusions)
    n = result.sentences
    return f"""{page_head(title)}
<p>Weights: <b>{html.escape(result.checkpoint.describe())}</b>. Probes trained on
<b>{html.escape(result.train_treebank or '(given probes)')}</b>; evaluated on <b>{html.escape(result.eval_treebank)}</b>:
{n.get('evaluated', 0)} sentences ({n.get('skipped', 0)} skipped: too long, one word, or a word with no piece);
choices on {n.get('selection', 0)}, reported on {n.get('report', 0)}.</p>
<ul>{said}</ul>
{_figure_div(fig, "structure")}
<p>{html.escape(METHOD)}</p>
<h2>Every probe on every evaluated sentence</h2>
<p>Layer 0 is the embeddings, layer L the output of block L; right-branching has no layer.</p>
<div class="wide">{table}</div>
{selectivity_html(result)}
<h2>Head ensembles per relation</h2>
<p>{html.escape(ENSEMBLE_NOTE)}</p>
<div class="wide">{ensembles}</div>
</body></html>
"""


def write_structure(result: StructureResult, out: Path, title: str = "bertviz-lab structural probe") -> dict[str, Path]:
    """Every output file, written atomically; probes.safetensors beside them."""
    out.mkdir(parents=True, exist_ok=True)
    contents = {
        "probe_scores": ("probe_scores.csv", whole_numbers(result.probe_table).to_csv(index=False, float_format="%.6f")),
        "structure": ("structure.csv", whole_numbers(result.comparison).to_csv(index=False, float_format="%.6f")),
        "ensembles": ("ensembles.csv", whole_numbers(result.ensembles).to_csv(index=False, float_format="%.6f")),
        "curves": ("training_curves.csv", curves_table(result).to_csv(index=False, float_format="%.6f")),
        "selectivity": ("selectivity.csv", whole_numbers(result.selectivity).to_csv(index=False, float_format="%.6f")),
        "report": ("report.html", report_html(result, title)),
    }
    files = write_atomically(out, contents)
    if result.train_treebank:
        files["probes"] = save_probes(out / "probes.safetensors", result)
    return files
