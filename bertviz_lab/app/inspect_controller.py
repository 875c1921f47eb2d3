"""What the page draws on request for the last analysis: the neuron view, "Why this word?" (attribution of the
first masked prediction) and the exports (CSV, .npz)."""
from __future__ import annotations

import html
import json

import gradio as gr
import numpy as np
import pandas as pd

from ..bert import CheckpointError
from ..export import CSV_MAX_ROWS, csv_rows, export_csv, export_npz
from ..figures.attention import explain_figure
from ..figures.neuron import NeuronStart, neuron_page, neuron_payload, with_score_bias
from ..lab import InputError
from ..lens import queries_and_keys, score_bias
from ..tasks.explain import explain_analysis
from ..tasks.validation import whole
from .page import Page, Updates
from .result_titles import TIES_NOTE, collapsed_ties, quoted
from .state import Session, plot
from .tabs import EXPLAIN_COLUMNS, EXPLAIN_EMPTY

OUT_ACTIONS = ("score-heads", "structural-probe", "index")  # the page's results whose command writes a folder


def clicked_token(value: str | float | None, n: int) -> int | None:
    """The head view's last clicked token (viewer.js writes "index" or "index,time"), if it is one of the n."""
    try:
        index = int(float(str(value).split(",")[0]))
    except (ValueError, OverflowError):  # not a number, or inf / nan
        return None
    return index if 0 <= index < n else None


class InspectController:
    def __init__(self, page: Page) -> None:
        self.page, self.ui = page, page.ui

    def copy_recipe(self, result: str | None, session: Session) -> Updates:
        """"Copy as recipe": the recipe of ``result`` (one of the results this visit made; None or one no longer
        kept: the latest), with the list of results to choose from, latest first."""
        ui, names = self.ui, session.result_names()
        if not names:
            return {ui.recipe_choice: gr.update(choices=[], value=None), ui.recipe_code: "",
                    ui.recipe_note: "⚠️ No result yet: Run an input (or any sweep, set or scoring), then copy its recipe."}
        chosen = result if result in session.recipes else names[0]
        recipe = session.recipes[chosen]
        note = (f"Recipe of **{chosen}** ({recipe['action']} on {quoted(recipe['checkpoint']['name'])}). Save it as "
                f"`recipe.json`, then `bertviz-lab run recipe.json`"
                + (" `--out DIR`" if recipe["action"] in OUT_ACTIONS else "") + ".")
        return {ui.recipe_choice: gr.update(choices=names, value=chosen), ui.recipe_note: note,
                ui.recipe_code: json.dumps(recipe, indent=2, ensure_ascii=False)}

    def neuron_view(self, session: Session, layer: float, head: float, token: str | float | None = None) -> Updates:
        """The neuron view of the last analysis in a frame of its own (its script runs there), open on the
        token last clicked in the head view (``token``, 0-based; else the first word); layer, head and query
        token then switch in the page with no request."""
        if session.analysis is None:
            return {self.ui.neuron_html: "<p>⚠️ press Run first: the neuron view shows the last analysed input</p>"}
        snap = session.snapshot()
        lab = self.page.lab_of(session)
        try:
            a = snap.bound_to(lab)
        except InputError as error:
            return {self.ui.neuron_html: f"<p>⚠️ {html.escape(str(error))}</p>"}
        queries, keys = queries_and_keys(lab, a)
        try:
            chosen = whole(layer, "layer", 1, lab.n_layers) - 1, whole(head, "head", 1, lab.n_heads) - 1
        except InputError as error:
            return {self.ui.neuron_html: f"<p>⚠️ {html.escape(str(error))}</p>"}
        start = NeuronStart(*chosen, clicked_token(token, len(a.tokens)))
        scales, bias = score_bias(lab, a)  # MPNet's and DeBERTa's position terms: the softmax is the model's
        payload = with_score_bias(neuron_payload(list(a.tokens), list(a.segment_ids), queries, keys, a.model, start),
                                  scales, bias)
        height = 120 + 16 * len(a.tokens)
        return {self.ui.neuron_html: f'<iframe title="Neuron view" srcdoc="{html.escape(neuron_page(payload))}" '
                                     f'sandbox="allow-scripts allow-downloads" style="width:100%;height:{height}px;border:0"></iframe>'}

    def explain(self, session: Session) -> Updates:
        """Attribute the first masked prediction of the last analysis to its context tokens. Computed and drawn
        from one snapshot of the session: a Run that lands meanwhile leaves this answer titled with its own
        input, and a model switch makes it one sentence (issue 56)."""
        ui = self.ui
        snap = session.snapshot()
        if snap.analysis is None:
            return {ui.explain_message: "⚠️ press Run first, with a [MASK] in the sentence"}
        try:
            lab = self.page.cache.get(snap.model, snap.device)
            a = snap.bound_to(lab)
            first = explain_analysis(lab, a).first  # a classifier with nothing masked: why its predicted class
        except (InputError, ValueError, CheckpointError) as error:
            return {ui.explain_message: f"⚠️ {error}"}
        rho = EXPLAIN_EMPTY.columns[1]
        table = pd.DataFrame({"ranking": list(first.agreement),
                              rho: [round(v, 3) if np.isfinite(v) else None for v in first.agreement.values()]})
        on_input = pd.DataFrame.from_dict(first.perturbation, orient="index").round(3).rename(columns=EXPLAIN_COLUMNS)
        table = table.merge(on_input, left_on="ranking", right_index=True, how="left")
        table = collapsed_ties(table.sort_values(rho, ascending=False, kind="stable"))
        target = f"the logit of class '{first.label}'" if hasattr(first, "label") else f"log P('{first.target}')"
        message = (f"Erasure hides each token from every layer's attention and measures the drop in {target}; "
                   f"gradient x input and integrated gradients (Captum, 32 steps, [PAD] baseline) attribute the "
                   f"same quantity. {TIES_NOTE}")
        if hasattr(first, "decompx_note"):  # a class: what DecompX's shown shares sum to, and the specials' part
            message += f" {first.decompx_note()}."
        if session.generation != snap.generation:  # a Run landed meanwhile: say which input this answers
            message = (f"⚠️ This answers the input analysed before your last Run ({len(a.tokens)} tokens: "
                       f"{quoted(a.text)}). {message}")
        return {ui.explain_message: message, ui.explain_plot: plot(explain_figure(first, a.tokens)),
                ui.explain_table: table}

    def export(self, kind: str, session: Session) -> Updates:
        a = session.analysis
        if a is None:
            return {self.ui.message: "⚠️ Run an analysis first, then export it."}
        if kind == "csv" and csv_rows(a) > CSV_MAX_ROWS:
            return {self.ui.message: f"⚠️ As CSV this analysis would be {csv_rows(a):,} rows (the app writes up to "
                                     f"{CSV_MAX_ROWS:,}); export .npz instead (the same numbers, compressed)."}
        folder = self.page.exports.new(session.key())
        try:
            path = export_csv(a, folder) if kind == "csv" else export_npz(a, folder)
        finally:
            self.page.exports.settle(folder)
        return {self.ui.export_file: str(path), self.ui.message: f"Exported {path.name}."}

    def export_csv(self, session: Session) -> Updates:
        return self.export("csv", session)

    def export_npz(self, session: Session) -> Updates:
        return self.export("npz", session)
