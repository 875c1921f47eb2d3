"""Event handlers. Thin: each calls the library and returns ``{component: value}`` for just the
components it changes (Gradio leaves the others alone), never a padded tuple."""
from __future__ import annotations

import base64
import html
import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from ..attention import PAIR_FILTERS
from ..attention.sources import get_source, in_source
from ..bert import CheckpointError, DeviceError
from ..export import CSV_MAX_ROWS, csv_rows, export_csv, export_npz
from ..figures import analysis as views
from ..figures import interventions as intervention_views
from ..figures.attention import classes_figure, explain_figure, lens_figure
from ..figures.base import SCALES, empty_figure, resolve_scale
from ..figures.neuron import NeuronStart, neuron_page, neuron_payload, with_score_bias
from ..figures.payload import open_head_codes, view_payload
from ..lab import Analysis, InputError, Lab
from ..lens import mlm_lens, queries_and_keys, score_bias
from ..mlm.model_card import quality_note
from ..resources import DEFAULT_MLM_HEAD
from ..tasks.analyze import AnalyzeRequest, analyze
from ..tasks.explain import explain_analysis
from ..tasks.validation import positions, whole
from .events import SERVER_PLOTS, mark_on_request
from .forms import RunInput, ViewControls
from .gate import STALE
from .intervention_handlers import InterventionHandlers, quoted
from .qk_handlers import PARTS_HINT, QK_HINT, QkHandlers
from .search_handlers import SEARCH_COLUMNS, SEARCH_HINT, SearchHandlers
from .state import LabCache, Limits, Session, TempFolder, plot, status_line, weights_note
from .syntax_handlers import SyntaxHandlers
from .tabs import (
    EXAMPLES,
    EXPLAIN_COLUMNS,
    EXPLAIN_EMPTY,
    EXPLAIN_HINT,
    INTERVENTION_HINT,
    SERVER_TABS,
    TAB_ALIASES,
    TABS,
    WORK_TABS,
    intervention_choices,
    source_about,
)

Updates = dict[Any, Any]


def clicked_token(value: str | float | None, n: int) -> int | None:
    """The head view's last clicked token (viewer.js writes "index" or "index,time"), if it is one of the n."""
    try:
        index = int(float(str(value).split(",")[0]))
    except (ValueError, OverflowError):  # not a number, or inf / nan
        return None
    return index if 0 <= index < n else None


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


# The open head's codes, up to this size (512 tokens at 8 bits: any input a BERT takes), travel inside the reply as
# base64 (a third more bytes): the page draws it without waiting for a second request, then fetches the rest. A
# second request cost ~20 ms at 128 tokens and, at 512, 48 ms in a paired run (run_pair.py, issue 45); 256 KB
# of codes add ~1 ms to the reply's transfer and JSON.parse. Longer inputs (long-context models) send a file.
INLINE_HEAD_MAX = 256 * 1024
FIRST_HEAD_FROM = 256 * 1024  # codes larger than this (all 72 heads of MiniLM at 43 tokens) send the open head first
CODES_ROUTE = "bvl-codes"  # where the page fetches an analysis's codes: by file name, no server path in the URL
CODES_NAME = re.compile(r"[0-9a-f]{32}\.bin")


def codes_route(payloads: TempFolder) -> Route:
    """GET bvl-codes/NAME: one payload file of ``payloads`` as bytes, or 404 (names are checked, never paths)."""

    def codes(request: Request) -> Response:
        name = request.path_params["name"]
        path = payloads.root / name
        if not CODES_NAME.fullmatch(name) or not path.is_file():
            return Response(status_code=404)
        return FileResponse(path, media_type="application/octet-stream")

    return Route(f"/{CODES_ROUTE}/{{name}}", codes, methods=["GET"])


class Handlers(InterventionHandlers, SyntaxHandlers, SearchHandlers, QkHandlers):
    """Every UI event's handler, bound to the page's components and the shared model cache."""

    def __init__(self, ui: SimpleNamespace, cache: LabCache, startup: Lab, limits: Limits) -> None:
        self.ui, self.cache, self.startup, self.limits = ui, cache, startup, limits
        self.exports = TempFolder("bertviz-lab-exports-", limits.export_age, max_bytes=limits.export_bytes,
                                  per_owner=limits.files_per_session)
        self.references: dict = {}  # (model, device) -> mean head outputs, for mean ablation
        self.indexes: dict = {}  # (model, device, kind) -> the sample treebank's token index (corpus search)
        self.index_lock = threading.Lock()
        self.payloads = TempFolder("bertviz-lab-payloads-", limits.payload_age, limits.payloads,
                                   max_bytes=limits.payload_bytes, per_owner=limits.files_per_session)
        mark_on_request(self)  # a handler that fills a view drawn on request says so on its session

    def lab_of(self, session: Session) -> Lab:
        return self.cache.get(session.model, session.device)

    # ---- analysis ------------------------------------------------------------------------
    def shown(self, session: Session):
        """(the analysis in the chosen source, its per-layer matrices or None), computed once per source."""
        snap = session.snapshot()
        if snap.source == "attention":
            return snap.analysis, None
        by_source = session.by_source
        if snap.source not in by_source:
            lab = self.lab_of(session)
            a = snap.bound_to(lab)
            shown = in_source(lab, a, snap.source)  # one forward pass for the views and the per-layer matrices
            if session.generation != snap.generation:  # a Run landed meanwhile: its views are not this input's
                return shown
            by_source[snap.source] = shown
        return by_source[snap.source]

    def lens_of(self, session: Session) -> list:
        """The MLM lens of the session's masked positions (empty without a mask or an MLM head)."""
        a = session.analysis
        lab = self.lab_of(session)
        if not a.mlm or not lab.model.has_mlm_head:
            return []
        return mlm_lens(lab, a, top_k=len(a.mlm[0].predictions))

    # ---- what the page draws ---------------------------------------------------------------
    def payload(self, session: Session) -> dict[str, Any]:
        """The analysis as views.js draws it (single head and head view switch in the browser)."""
        a, _ = self.shown(session)
        o = session.options.clamp(a)
        chosen = get_source(session.source)
        view_notes = [] if chosen.name == "attention" else [f"{chosen.name}: {chosen.note} ({chosen.citation})"]
        meta, codes = view_payload(a, o, extra_notes=view_notes, source_label=views.source_label(a), scale=session.scale)
        meta["codes_url"] = f"{CODES_ROUTE}/{self.payloads.write(codes, '.bin', session.key()).name}"  # relative to the page
        head = open_head_codes(meta, codes)
        if len(head) <= INLINE_HEAD_MAX:  # the open head inside the reply: drawn with no second request
            meta["head_codes"], meta["head_bytes"] = base64.b64encode(head).decode("ascii"), len(head)
        elif len(codes) > FIRST_HEAD_FROM:  # the open head first, in a file of its own: drawn before the rest arrives
            meta["head_url"] = f"{CODES_ROUTE}/{self.payloads.write(head, '.bin', session.key()).name}"
            meta["head_bytes"] = len(head)
        return meta

    def drawn_from(self, session: Session, tab: str) -> tuple:
        """What a server-drawn tab's figure depends on: it is redrawn only when this changes."""
        o = session.options
        key: tuple = (session.generation, session.source, session.scale)
        if tab in ("aggregates", "interventions"):
            key += (o.layer, o.head, o.hide_special, o.word_level, o.pair_filter, id(session.comparison))
        return key

    def tab_figures(self, session: Session) -> Updates:
        """The open tabs' figures, for those the server draws and that are out of date; nothing else."""
        out: Updates = {}
        for tab in (session.tab, session.work_tab):
            if session.analysis is not None and tab in SERVER_TABS and \
                    session.drawn.get(tab) != self.drawn_from(session, tab):
                out.update(self.draw_tab(session, tab))
                session.drawn[tab] = self.drawn_from(session, tab)
        return out

    def draw_tab(self, session: Session, tab: str) -> Updates:
        ui, a = self.ui, session.analysis
        shown, layers = self.shown(session)
        o = session.options.clamp(a)
        if tab == "overview":
            return {ui.overview_plot: plot(views.overview(shown, selected=(o.layer, o.head), scale=session.scale))}
        if tab == "summary":
            return {ui.summary_plot: plot(views.summary(shown, scale=session.scale))}
        if tab == "aggregates":
            return {ui.aggregates_plot: plot(views.aggregates(shown, o, layers, scale=session.scale))}
        if tab == "predictions":  # nothing masked (or no classifier): the note above says so, the empty plots hide
            classes = {ui.classes_plot: plot(classes_figure(a.classes, a.model)) if a.classes else None}
            if not a.mlm:
                return {**classes, ui.pred_plot: None, ui.lens_plot: None}
            return {**classes, ui.pred_plot: plot(views.predictions_figure(a.mlm, a.mlm_note)),
                    ui.lens_plot: plot(lens_figure(self.lens_of(session), a.mlm_note))}
        c = session.comparison
        if c is None or c.baseline.tokens != a.tokens:
            return {}
        return {ui.intervention_plot: plot(intervention_views.comparison_figure(c, o, scale=session.scale)),
                ui.offsets_plot: plot(intervention_views.offsets_figure(c, o.layer, scale=session.scale))}

    def new_view(self, session: Session) -> None:
        """The analysis or its source changed: every drawn figure is out of date."""
        session.generation += 1
        session.drawn = {}

    def read_options(self, session: Session, view: ViewControls, analysis: Analysis | None = None) -> None:
        """The controls' values into the session's options, checked against ``analysis`` (default: the
        session's); the browser may send anything. A larger layer or head than a new analysis has is clamped."""
        a, o = analysis or session.analysis, session.options
        o.layer = whole(view.layer, "layer", 1, 1000) - 1
        o.head = whole(view.head, "head", 1, 1000) - 1
        if a is not None:
            o.layer, o.head = min(o.layer, a.n_layers - 1), min(o.head, a.n_heads - 1)
        o.hide_special, o.word_level = bool(view.hide), bool(view.word)
        o.pair_filter = view.pair_filter if view.pair_filter in PAIR_FILTERS else "all"
        session.scale = view.scale if view.scale in SCALES.values() else "fixed"

    def run_outputs(self, session: Session, message: str) -> Updates:
        ui, a = self.ui, session.analysis
        lab = self.lab_of(session)
        session.options = session.options.clamp(a)
        return {
            ui.session: session, ui.message: message, ui.payload: {**self.payload(session), "scroll": True},
            ui.pred_table: views.predictions_table(a), ui.nsp_md: self.prediction_notes(lab, a), ui.notes: "",
            ui.source: "attention", ui.source_about: source_about("attention"), ui.scale: session.scale,
            # the controls last: what the session notes as sent must be what this reply carries (a refusal
            # inside tab_figures, e.g. the lens pass over the budget, returns without them)
            **self.tab_figures(session), **self.cleared_on_request(session), **self.run_controls(session, lab),
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
                ui.direction_table: intervention_views.directional_table([]), ui.ablation_plot: None,
                ui.controls_table: None, ui.patch_plot: None,
                **self.hidden_titles("direction_message", "ablation_message", "controls_message", "patch_message"),
                ui.search_message: SEARCH_HINT, ui.search_table: pd.DataFrame(columns=SEARCH_COLUMNS),
                ui.qk_message: QK_HINT, ui.qk_plot: None, ui.qk_sim_plot: None,
                ui.parts_message: PARTS_HINT, ui.parts_plot: None}

    def hidden_titles(self, *names: str) -> Updates:
        """Result titles emptied (the page's CSS hides an empty title: its result is gone)."""
        return {getattr(self.ui, name): "" for name in names}

    def clear_set_results(self) -> Updates:
        """The sentence set, its upload or its size changed: the set results describe another set."""
        ui = self.ui
        return {ui.direction_set_table: None, ui.ablation_set_plot: None, ui.intervention_set_table: None,
                **self.hidden_titles("direction_set_message", "ablation_set_message", "intervention_set_message")}

    def cleared_with_model(self) -> Updates:
        """What the previous model computed over sentence sets (not this input): gone with a model switch."""
        ui = self.ui
        return {**self.clear_set_results(), ui.positions_plot: None, ui.faith_table: None,
                **self.hidden_titles("positions_message", "faith_message")}

    def analyze(self, run: RunInput, session: Session, view: ViewControls | None = None,
                mask_positions: list[int] | None = None, unless_newer: int | None = None) -> Updates:
        """Run one input. ``unless_newer``: the generation seen when the page opened; if another Run
        landed meanwhile, this (the opening example's) result is dropped rather than shown over it."""
        try:
            lab = self.lab_of(session)
            a = analyze(AnalyzeRequest(run.text, run.pair or None, tuple(mask_positions or ()), top_k=run.top_k,
                                       truncate=True), lab).analysis
            if unless_newer is not None and session.generation != unless_newer:
                return {self.ui.message: gr.skip()}
            self.read_options(session, view or ViewControls(), a)
        except (InputError, CheckpointError, DeviceError) as error:
            stale = {self.ui.views_box: gr.update(elem_classes=STALE)} if session.analysis is not None else {}
            if stale:
                session.sent["greyed"] = True
            said = str(error) if str(error).endswith((".", "?", "!")) else f"{error}."
            return {self.ui.message: f"⚠️ {said}{session.stale_note()}", **stale}
        if session.source != "attention":  # back to attention weights, and to their scale
            session.scale = resolve_scale("auto", "attention")
        session.analysis, session.source, session.by_source = a, "attention", {}
        session.comparison = None  # its figures showed the previous input (cleared_on_request empties them)
        self.new_view(session)
        message = f"{len(a.tokens)} tokens."
        if a.truncated:
            message = (f"⚠️ The input was {a.n_tokens_before_truncation} tokens long; the model takes at most "
                       f"{len(a.tokens)}, so it was truncated to {len(a.tokens)} tokens.")
        if a.nsp is not None:
            message += f" Next-sentence prediction: P(B follows A) = {a.nsp:.2f}."
        if a.classes:
            message += f" Class: {a.classes[0].label} (P = {a.classes[0].probability:.2f})."
        return self.run_outputs(session, message)

    def from_url(self, session: Session, request: gr.Request) -> Updates:
        """The page opens analysed: the first example, or a shareable link's
        ``?text=...&pair=...&layer=2&head=5`` (input and view restored)."""
        params = dict(request.query_params) if request is not None else {}
        session.shown_on_request = False  # the page just opened: its views drawn on request are empty
        text = params.get("text", "")
        if not text.strip():
            text, pair = EXAMPLES[0]
            out = self.analyze(RunInput(text, pair), session, unless_newer=session.generation)
            return out if self.ui.payload not in out else {**out, self.ui.text: text, self.ui.pair: pair}
        out = self.analyze(RunInput(text, params.get("pair", "")), session,
                           ViewControls(layer=params.get("layer", 1), head=params.get("head", 1)))
        return {**out, self.ui.text: text, self.ui.pair: params.get("pair", "")}

    def mask(self, run: RunInput, chosen: list[int], session: Session, view: ViewControls | None = None) -> Updates:
        """Mask tokens picked from the last analysed input (the textbox may have changed since)."""
        try:
            picked = positions(chosen)
        except InputError as error:
            return {self.ui.message: f"⚠️ {error}"}
        if not picked:
            return {self.ui.message: "⚠️ choose one or more tokens to mask first"}
        if session.analysis is not None:
            run = RunInput(session.analysis.text, session.analysis.pair or "", run.top_k)
        return self.analyze(run, session, view, mask_positions=picked)

    def sync_view(self, view: ViewControls, session: Session, source: str = "attention", tab: str = "") -> Updates:
        """The open tab's figure after the sliders moved (views.js asks only when a server-drawn tab is open);
        API callers may name the tab (``probes``, the Interventions tab's old id, is still understood)."""
        tab = TAB_ALIASES.get(tab, tab)
        try:
            self.read_options(session, view)
        except InputError as error:
            return {self.ui.notes: f"⚠️ {error}"}
        if session.analysis is None:
            return {self.ui.notes: gr.skip()}
        if tab in WORK_TABS:
            session.work_tab = tab
        elif tab in TABS.values():
            session.tab = tab
        return {self.ui.session: session, **self.tab_figures(session)}

    def select_tab(self, view: ViewControls, session: Session, source: str = "attention",
                   evt: gr.EventData = None) -> Updates:  # Gradio fills evt (it reads the annotation)
        """A tab was opened: remember it, and draw its figure if the server draws it. ``gr.EventData``,
        not ``gr.SelectData``: called through the API there is no event data, and SelectData fails on that."""
        data = getattr(evt, "_data", None)
        label = data.get("value", "") if isinstance(data, dict) else ""
        return self.sync_view(view, session, source, TABS.get(label, ""))

    def toggles(self, view: ViewControls, session: Session, source: str = "attention") -> Updates:
        """Word level, hidden specials or the attention source changed: a new payload (views.js redraws)
        and the open tab (a new source is one extra forward pass the first time per analysis). A source
        the lab cannot compute here (unknown, or flow over a long input) is refused in one sentence and
        the views keep the source they showed."""
        ui = self.ui
        if session.analysis is None:
            return {ui.notes: gr.skip()}
        try:
            self.read_options(session, view)
        except InputError as error:
            return {ui.notes: f"⚠️ {error}"}
        previous = session.source
        try:
            session.source = source
            self.shown(session)  # computed (and cached) now: in_source refuses an unknown name, the views stay
        except ValueError as error:  # an unknown name, or flow over a long input (InputError is a ValueError)
            session.source = previous
            return {ui.notes: f"⚠️ {error}; the views still show {previous}."}
        if source != previous:  # every figure shows the new source, on that source's scale; options are in drawn_from
            session.scale = resolve_scale("auto", source)
            self.new_view(session)
        return {ui.session: session, ui.payload: self.payload(session), ui.notes: "", ui.scale: session.scale,
                ui.source_about: source_about(session.source), **self.tab_figures(session)}

    def pick(self, value: str, session: Session) -> Updates:
        """A thumbnail of the overview was clicked: "layer,head,time" (0-based; the time makes a repeated
        click a change), checked against the model."""
        lab = self.lab_of(session)
        try:
            layer, head = (int(v) for v in str(value).split(",")[:2])
        except ValueError:
            return {self.ui.layer: gr.skip()}
        if not (0 <= layer < lab.n_layers and 0 <= head < lab.n_heads):
            return {self.ui.layer: gr.skip()}
        session.tab = "single"
        return {self.ui.layer: layer + 1, self.ui.head: head + 1, self.ui.tabs: gr.Tabs(selected="single"),
                self.ui.session: session}

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
        self.new_view(session)
        empty = plot(empty_figure("Press Run to analyse with the new model"))
        return {ui.session: session, ui.message: f"Loaded {lab.name}. Press Run to analyse with it.",
                ui.status: status_line(lab), ui.weights_note: weights_note(lab), ui.payload: None,
                ui.picker: gr.update(choices=[], value=[]), ui.search_token: gr.update(choices=[], value=None),
                ui.intervention_kind: gr.update(choices=intervention_choices(lab), value="left-only"),
                ui.pred_table: views.predictions_table(None),
                **{getattr(ui, name): empty for name in SERVER_PLOTS}, **self.cleared_on_request(),
                **self.cleared_with_model()}

    def export(self, kind: str, session: Session) -> Updates:
        a = session.analysis
        if a is None:
            return {self.ui.message: "⚠️ Run an analysis first, then export it."}
        if kind == "csv" and csv_rows(a) > CSV_MAX_ROWS:
            return {self.ui.message: f"⚠️ As CSV this analysis would be {csv_rows(a):,} rows (the app writes up to "
                                     f"{CSV_MAX_ROWS:,}); export .npz instead (the same numbers, compressed)."}
        folder = self.exports.new(session.key())
        try:
            path = export_csv(a, folder) if kind == "csv" else export_npz(a, folder)
        finally:
            self.exports.settle(folder)
        return {self.ui.export_file: str(path), self.ui.message: f"Exported {path.name}."}

    def prediction_notes(self, lab: Lab, a: Analysis) -> str:
        """The masked-word and NSP notes, and for the shipped head how far to trust it (its held-out figures)."""
        notes = views.prediction_notes(a)
        head = lab.checkpoint.head_origin
        if a.mlm and head and Path(head).resolve() == DEFAULT_MLM_HEAD.resolve():
            notes = "\n\n".join(n for n in (notes, quality_note(DEFAULT_MLM_HEAD)) if n)
        return notes

    def neuron_view(self, session: Session, layer: float, head: float, token: str | float | None = None) -> Updates:
        """The neuron view of the last analysis in a frame of its own (its script runs there), open on the
        token last clicked in the head view (``token``, 0-based; else the first word); layer, head and query
        token then switch in the page with no request."""
        if session.analysis is None:
            return {self.ui.neuron_html: "<p>⚠️ press Run first: the neuron view shows the last analysed input</p>"}
        snap = session.snapshot()
        lab = self.lab_of(session)
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
            lab = self.cache.get(snap.model, snap.device)
            a = snap.bound_to(lab)
            first = explain_analysis(lab, a).first  # a classifier with nothing masked: why its predicted class
        except (InputError, ValueError, CheckpointError) as error:
            return {ui.explain_message: f"⚠️ {error}"}
        rho = EXPLAIN_EMPTY.columns[1]
        table = pd.DataFrame({"ranking": list(first.agreement),
                              rho: [round(v, 3) if np.isfinite(v) else None for v in first.agreement.values()]})
        on_input = pd.DataFrame.from_dict(first.perturbation, orient="index").round(3).rename(columns=EXPLAIN_COLUMNS)
        table = table.merge(on_input, left_on="ranking", right_index=True, how="left")
        table = table.sort_values(rho, ascending=False)
        target = f"the logit of class '{first.label}'" if hasattr(first, "label") else f"log P('{first.target}')"
        message = (f"Erasure hides each token from every layer's attention and measures the drop in {target}; "
                   f"gradient x input and integrated gradients (Captum, 32 steps, [PAD] baseline) attribute the "
                   f"same quantity.")
        if session.generation != snap.generation:  # a Run landed meanwhile: say which input this answers
            message = (f"⚠️ This answers the input analysed before your last Run ({len(a.tokens)} tokens: "
                       f"{quoted(a.text)}). {message}")
        return {ui.explain_message: message, ui.explain_plot: plot(explain_figure(first, a.tokens)),
                ui.explain_table: table}

    def export_csv(self, session: Session) -> Updates:
        return self.export("csv", session)

    def export_npz(self, session: Session) -> Updates:
        return self.export("npz", session)

    def attention_api(self, text: str, pair: str = "", top_k: int = 5) -> dict[str, Any]:
        """Attention (layers x heads x query x key), tokens and masked-word predictions as JSON; on a
        server with a reply limit, large attention travels as base64 float16 (``attention_f16``)."""
        try:
            result = analyze(AnalyzeRequest(text, pair or None, top_k=top_k, truncate=True), self.startup).analysis
            return compact_reply(result, self.limits.api_bytes)
        except InputError as error:
            raise gr.Error(str(error)) from None
