"""The Run controller: an input analysed (Run, Enter, the examples, a shared link, Mask), the model switched,
and what a new analysis or model clears; the ``attention`` API. What the views draw is the view controller's."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

from ..attention.opening_head import opening_head
from ..bert import CheckpointError, DeviceError
from ..figures import analysis as views
from ..figures import interventions as intervention_views
from ..figures.base import empty_figure, resolve_scale
from ..lab import Analysis, InputError, Lab
from ..mlm.model_card import quality_note
from ..resources import DEFAULT_MLM_HEAD
from ..tasks.analyze import AnalyzeRequest, analyze
from ..tasks.validation import positions
from .events import SERVER_PLOTS
from .forms import RunInput, ViewControls
from .gate import STALE
from .interventions_tab import intervention_choices
from .page import Page, Updates
from .qk_controller import PARTS_HINT, QK_HINT
from .search_controller import SEARCH_COLUMNS, SEARCH_HINT
from .state import Session, plot, status_line, weights_note
from .tabs import EXAMPLES, EXPLAIN_EMPTY, EXPLAIN_HINT, INTERVENTION_HINT, prediction_words, source_about
from .view_controller import ViewController

JSON_BYTES_PER_WEIGHT = 12  # a float written as JSON text, with its separator


def compact_reply(result, limit: int | None) -> dict[str, Any]:
    """The analysis as JSON; above ``limit`` bytes the attention is base64 float16 with its shape, and
    above the limit even then, the reply says how to ask for less."""
    if limit is None or result.attention.size * JSON_BYTES_PER_WEIGHT <= limit:
        return result.to_json()
    packed = base64.b64encode(np.ascontiguousarray(result.attention, dtype=np.float16).tobytes()).decode("ascii")
    if len(packed) > limit:
        raise InputError(f"the attention of {len(result.tokens)} tokens is {len(packed) / 1e6:.1f} MB even as float16; "
                         f"this server replies with up to {limit / 1e6:.0f} MB: send a shorter input")
    reply = result.to_json(attention=False)
    reply["attention_f16"] = {"dtype": "float16", "shape": list(result.attention.shape), "base64": packed}
    return reply


class RunController:
    def __init__(self, page: Page, views: ViewController) -> None:
        self.page, self.ui, self.views, self.cache = page, page.ui, views, page.cache

    def run_outputs(self, session: Session, message: str) -> Updates:
        ui, a = self.ui, session.analysis
        lab = self.page.lab_of(session)
        session.options = session.options.clamp(a)
        return {
            ui.session: session, ui.message: message, ui.payload: {**self.views.payload(session), "scroll": True},
            ui.pred_table: views.predictions_table(a), ui.nsp_md: self.prediction_notes(lab, a), ui.notes: "",
            ui.source: "attention", ui.source_about: source_about("attention"), ui.scale: session.scale,
            # the controls last: what the session notes as sent must be what this reply carries (a refusal
            # inside tab_figures, e.g. the lens pass over the budget, returns without them)
            **self.views.tab_figures(session), **self.cleared_on_request(session), **self.run_controls(session, lab),
        }

    def run_controls(self, session: Session, lab: Lab) -> Updates:
        """The token pickers, the layer and head sliders and the views' greying after a Run. A property (choices,
        maximum, classes) is sent only when it differs from what this session's page was last sent, else the
        plain value: Gradio rebuilds a component for every property update (~8 ms of server time each)."""
        ui, a, o, sent = self.ui, session.analysis, session.options, session.sent
        choices = views.token_choices(a)
        out: Updates = {ui.picker: list(a.masked_positions), ui.search_token: None,
                        ui.layer: o.layer + 1, ui.head: o.head + 1}
        if sent.get("choices") != choices:
            out[ui.picker] = gr.update(choices=choices, value=list(a.masked_positions))
            out[ui.search_token] = gr.update(choices=choices, value=None)
        if sent.get("maxima") != (lab.n_layers, lab.n_heads):
            out[ui.layer] = gr.update(maximum=lab.n_layers, value=o.layer + 1)
            out[ui.head] = gr.update(maximum=lab.n_heads, value=o.head + 1)
        if sent.get("greyed", True):
            out[ui.views_box] = gr.update(elem_classes=[])
        sent.update(choices=choices, maxima=(lab.n_layers, lab.n_heads), greyed=False)
        return out

    def cleared_on_request(self, session: Session | None = None) -> Updates:
        """The views drawn on request (neuron view, "Why this word?", interventions on this input), emptied:
        they showed the last input. An empty plot or table is hidden by the page (CSS ``bvl-on-use``); the
        messages go back to their one-line hints. With ``session``: only if one may hold a result (else they
        are left as they are, already empty: fewer updates for the page)."""
        ui = self.ui
        if session is not None:
            if not session.shown_on_request:
                return {}
            session.shown_on_request = False
        return {ui.neuron_html: "", ui.explain_message: EXPLAIN_HINT, ui.explain_table: EXPLAIN_EMPTY,
                ui.explain_plot: None, ui.intervention_message: INTERVENTION_HINT, ui.intervention_plot: None,
                ui.js_plot: None, ui.intervention_changes: pd.DataFrame(columns=intervention_views.CHANGE_COLUMNS),
                ui.offsets_plot: None,
                ui.direction_table: intervention_views.directional_table([]), ui.direction_plot: None,
                ui.ablation_plot: None,
                ui.controls_table: None, ui.patch_plot: None,
                **self.page.hidden_titles("direction_message", "ablation_message", "controls_message", "patch_message"),
                ui.search_message: SEARCH_HINT, ui.search_table: pd.DataFrame(columns=SEARCH_COLUMNS),
                ui.qk_message: QK_HINT, ui.qk_plot: None, ui.qk_sim_plot: None,
                ui.parts_message: PARTS_HINT, ui.parts_plot: None}

    def clear_set_results(self) -> Updates:
        """The sentence set, its upload or its size changed: the set results describe another set."""
        ui = self.ui
        return {ui.direction_set_table: None, ui.ablation_set_plot: None, ui.intervention_set_table: None,
                **self.page.hidden_titles("direction_set_message", "ablation_set_message", "intervention_set_message")}

    def cleared_with_model(self) -> Updates:
        """What the previous model computed over sentence sets (not this input): gone with a model switch."""
        ui = self.ui
        return {**self.clear_set_results(), ui.positions_plot: None, ui.faith_table: None,
                **self.page.hidden_titles("positions_message", "faith_message")}

    def analyze(self, run: RunInput, session: Session, view: ViewControls | None = None,
                mask_positions: list[int] | None = None, opening: int | None = None) -> Updates:
        """Run one input. ``opening``: the page's opening example, with the generation seen when the page
        opened: if another Run landed meanwhile, this result is dropped rather than shown over it; else, unless
        ``view`` names a head, it opens on the head with the clearest pattern (``opening_head``) and says why."""
        try:
            lab = self.page.lab_of(session)
            a = analyze(AnalyzeRequest(run.text, run.pair or None, tuple(mask_positions or ()), top_k=run.top_k,
                                       truncate=True), lab).analysis
            if opening is not None and session.generation != opening:
                return {self.ui.message: gr.skip()}
            chosen = opening_head(a.attention, a.tokens) if opening is not None and view is None else None
            if chosen is not None:
                view = ViewControls(layer=chosen.layer + 1, head=chosen.head + 1)
            self.views.read_options(session, view or ViewControls(), a)
        except (InputError, CheckpointError, DeviceError) as error:
            stale = {self.ui.views_box: gr.update(elem_classes=STALE)} if session.analysis is not None else {}
            if stale:
                session.sent["greyed"] = True
            said = str(error) if str(error).endswith((".", "?", "!")) else f"{error}."
            return {self.ui.message: f"⚠️ {said}{session.stale_note()}", **stale}
        if session.source != "attention":  # back to attention weights, and to their scale
            session.scale = resolve_scale("auto", "attention")
        session.analysis, session.source, session.by_source = a, "attention", {}
        self.page.remember_recipe(session, "the analysed input", "analyze", {"text": run.text, "pair": run.pair},
                                  {"top_k": int(run.top_k), "mask": list(mask_positions or ()) or None,
                                   "truncate": True})
        session.comparison = None  # its figures showed the previous input (cleared_on_request empties them)
        self.views.new_view(session)
        message = f"{len(a.tokens)} tokens."
        if a.truncated:
            message = (f"⚠️ The input was {a.n_tokens_before_truncation} tokens long; the model takes at most "
                       f"{len(a.tokens)}, so it was truncated to {len(a.tokens)} tokens.")
        if a.nsp is not None:
            message += f" Next-sentence prediction: P(B follows A) = {a.nsp:.2f}."
        if a.classes:
            message += f" Class: {a.classes[0].label} (P = {a.classes[0].probability:.2f})."
        if chosen is not None:
            message += f" {chosen.reason}"
        return self.run_outputs(session, message)

    def run(self, text: str, pair: str, top_k: float, session: Session, layer: float = 1, head: float = 1,
            hide: bool = False, word: bool = False, pair_filter: str = "all", scale: str = "fixed") -> Updates:
        """The Run button, Enter and the examples: the API's parameters, one per control, in the page's order."""
        return self.analyze(RunInput(text, pair, top_k), session, ViewControls(layer, head, hide, word, pair_filter,
                                                                                scale))

    def from_url(self, session: Session, request: gr.Request) -> Updates:
        """The page opens analysed: the first example, or a shareable link's
        ``?text=...&pair=...&layer=2&head=5`` (input and view restored)."""
        params = dict(request.query_params) if request is not None else {}
        session.shown_on_request = False  # the page just opened: its views drawn on request are empty
        text = params.get("text", "")
        if not text.strip():  # the opening example: on its clearest head, or on the link's layer and head
            text, pair = EXAMPLES[0]
            asked = ViewControls(layer=params.get("layer", 1), head=params.get("head", 1)) \
                if "layer" in params or "head" in params else None
            out = self.analyze(RunInput(text, pair), session, asked, opening=session.generation)
            return out if self.ui.payload not in out else {**out, self.ui.text: text, self.ui.pair: pair}
        out = self.analyze(RunInput(text, params.get("pair", "")), session,
                           ViewControls(layer=params.get("layer", 1), head=params.get("head", 1)))
        return {**out, self.ui.text: text, self.ui.pair: params.get("pair", "")}

    def mask(self, text: str, pair: str, top_k: float, chosen: list[int], session: Session, layer: float = 1,
             head: float = 1, hide: bool = False, word: bool = False, pair_filter: str = "all",
             scale: str = "fixed") -> Updates:
        """Mask tokens picked from the last analysed input (the textbox may have changed since)."""
        run, view = RunInput(text, pair, top_k), ViewControls(layer, head, hide, word, pair_filter, scale)
        try:
            picked = positions(chosen)
        except InputError as error:
            return {self.ui.message: f"⚠️ {error}"}
        if not picked:
            return {self.ui.message: "⚠️ choose one or more tokens to mask first"}
        if session.analysis is not None:
            run = RunInput(session.analysis.text, session.analysis.pair or "", run.top_k)
        return self.analyze(run, session, view, mask_positions=picked)

    def switch_model(self, checkpoint: str, device_name: str, session: Session, progress=gr.Progress()) -> Updates:
        """Load another checkpoint (``default``, ``minilm-original``, a folder or a hub id the server allows)."""
        ui = self.ui
        progress(0.1, desc=f"loading {checkpoint or 'default'} on {device_name}")
        try:
            lab = self.cache.get(checkpoint or "default", device_name)
        except (CheckpointError, DeviceError) as error:
            return {ui.message: f"⚠️ Could not load the model: {error}"}
        session.model, session.device = lab.checkpoint_id, str(lab.device)
        session.analysis, session.comparison = None, None
        session.sent.pop("choices", None)  # the pickers are emptied below
        self.views.new_view(session)
        empty = plot(empty_figure("Press Run to analyse with the new model"))
        tab_label, explain_label = prediction_words(lab)  # a classifier's tab and button say "class"
        return {ui.predictions_tab: gr.Tab(label=tab_label), ui.explain_btn: gr.Button(value=explain_label),
                ui.session: session, ui.message: f"Loaded {lab.name}. Press Run to analyse with it.",
                ui.status: status_line(lab), ui.weights_note: weights_note(lab), ui.payload: None,
                ui.picker: gr.update(choices=[], value=[]), ui.search_token: gr.update(choices=[], value=None),
                ui.intervention_kind: gr.update(choices=intervention_choices(lab), value="left-only"),
                ui.pred_table: views.predictions_table(None),
                **{getattr(ui, name): empty for name in SERVER_PLOTS}, **self.cleared_on_request(),
                **self.cleared_with_model()}

    def prediction_notes(self, lab: Lab, a: Analysis) -> str:
        """The masked-word and NSP notes, and for the shipped head how far to trust it (its held-out figures)."""
        notes = views.prediction_notes(a)
        head = lab.checkpoint.head_origin
        if a.mlm and head and Path(head).resolve() == DEFAULT_MLM_HEAD.resolve():
            notes = "\n\n".join(n for n in (notes, quality_note(DEFAULT_MLM_HEAD)) if n)
        return notes

    def attention_api(self, text: str, pair: str = "", top_k: int = 5) -> dict[str, Any]:
        """Attention (layers x heads x query x key), tokens and masked-word predictions as JSON; on a
        server with a reply limit, large attention travels as base64 float16 (``attention_f16``)."""
        try:
            result = analyze(AnalyzeRequest(text, pair or None, top_k=top_k, truncate=True), self.page.startup).analysis
            return compact_reply(result, self.page.limits.api_bytes)
        except InputError as error:
            raise gr.Error(str(error)) from None
