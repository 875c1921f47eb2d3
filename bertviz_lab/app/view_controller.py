"""The views' controller: the analysis in the chosen source, the payload the page draws, the server-drawn tabs'
figures, and the events of the sliders, tabs and toggles. It holds no input of its own: the Run controller
(``run_controller.py``) puts an analysis on the session and asks this one for what to draw."""
from __future__ import annotations

import base64
import re
from typing import Any

import gradio as gr
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from ..attention import PAIR_FILTERS
from ..attention.sources import get_source, in_source
from ..figures import analysis as views
from ..figures import interventions as intervention_views
from ..figures.attention import classes_figure, lens_figure
from ..figures.base import SCALES, resolve_scale
from ..figures.payload import open_head_codes, view_payload
from ..lab import Analysis, InputError
from ..lens import mlm_lens
from ..tasks.validation import whole
from .forms import ViewControls
from .page import Page, Updates
from .state import Session, plot
from .tabs import SERVER_TABS, TAB_ALIASES, TABS, WORK_TABS, source_about
from .temp_folders import TempFolder

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


class ViewController:
    def __init__(self, page: Page) -> None:
        self.page, self.ui = page, page.ui

    # ---- analysis ------------------------------------------------------------------------
    def shown(self, session: Session):
        """(the analysis in the chosen source, its per-layer matrices or None), computed once per source."""
        snap = session.snapshot()
        if snap.source == "attention":
            return snap.analysis, None
        by_source = session.by_source
        if snap.source not in by_source:
            lab = self.page.lab_of(session)
            a = snap.bound_to(lab)
            shown = in_source(lab, a, snap.source)  # one forward pass for the views and the per-layer matrices
            if session.generation != snap.generation:  # a Run landed meanwhile: its views are not this input's
                return shown
            by_source[snap.source] = shown
        return by_source[snap.source]

    def lens_of(self, session: Session) -> list:
        """The MLM lens of the session's masked positions (empty without a mask or an MLM head)."""
        a = session.analysis
        lab = self.page.lab_of(session)
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
        meta["codes_url"] = f"{CODES_ROUTE}/{self.page.payloads.write(codes, '.bin', session.key()).name}"  # relative to the page
        head = open_head_codes(meta, codes)
        if len(head) <= INLINE_HEAD_MAX:  # the open head inside the reply: drawn with no second request
            meta["head_codes"], meta["head_bytes"] = base64.b64encode(head).decode("ascii"), len(head)
        elif len(codes) > FIRST_HEAD_FROM:  # the open head first, in a file of its own: drawn before the rest arrives
            meta["head_url"] = f"{CODES_ROUTE}/{self.page.payloads.write(head, '.bin', session.key()).name}"
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

    def sync_view(self, layer: float, head: float, hide: bool, word: bool, pair_filter: str, session: Session,
                  source: str = "attention", tab: str = "", scale: str = "fixed") -> Updates:
        """The open tab's figure after the sliders moved (views.js asks only when a server-drawn tab is open);
        API callers may name the tab (``probes``, the Interventions tab's old id, is still understood)."""
        return self.follow(ViewControls(layer, head, hide, word, pair_filter, scale), session, tab)

    def follow(self, view: ViewControls, session: Session, tab: str = "") -> Updates:
        """The controls' values into the session, and the open tab's figure if the server draws it."""
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
        out = {self.ui.session: session, **self.tab_figures(session)}
        if tab == "export" and session.recipes:  # the Export tab opened: its Result list holds this visit's results
            out[self.ui.recipe_choice] = gr.update(choices=session.result_names())  # the choice stays
        return out

    def select_tab(self, layer: float, head: float, hide: bool, word: bool, pair_filter: str, session: Session,
                   source: str = "attention", scale: str = "fixed",
                   evt: gr.EventData = None) -> Updates:  # Gradio fills evt (it reads the annotation)
        """A tab was opened: remember it, and draw its figure if the server draws it. ``gr.EventData``,
        not ``gr.SelectData``: called through the API there is no event data, and SelectData fails on that."""
        data = getattr(evt, "_data", None)
        label = data.get("value", "") if isinstance(data, dict) else ""
        return self.follow(ViewControls(layer, head, hide, word, pair_filter, scale), session,
                           TABS.get(label) or TAB_ALIASES.get(label, ""))

    def toggles(self, layer: float, head: float, hide: bool, word: bool, pair_filter: str, session: Session,
                source: str = "attention", scale: str = "fixed") -> Updates:
        """Word level, hidden specials or the attention source changed (the API's parameters, one per control)."""
        return self.switch_source(ViewControls(layer, head, hide, word, pair_filter, scale), session, source)

    def switch_source(self, view: ViewControls, session: Session, source: str = "attention") -> Updates:
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
        lab = self.page.lab_of(session)
        try:
            layer, head = (int(v) for v in str(value).split(",")[:2])
        except ValueError:
            return {self.ui.layer: gr.skip()}
        if not (0 <= layer < lab.n_layers and 0 <= head < lab.n_heads):
            return {self.ui.layer: gr.skip()}
        session.tab = "single"
        return {self.ui.layer: layer + 1, self.ui.head: head + 1, self.ui.tabs: gr.Tabs(selected="single"),
                self.ui.session: session}
