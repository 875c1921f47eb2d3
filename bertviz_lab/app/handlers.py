"""Event handlers. Thin: each calls the library and returns ``{component: value}`` for just the
components it changes (Gradio leaves the others alone), never a padded tuple."""
from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import gradio as gr
import numpy as np

from ..attention import PAIR_FILTERS
from ..bert import CheckpointError, DeviceError
from ..bert.norms import SOURCE_NOTES, SOURCES
from ..export import CSV_MAX_ROWS, csv_rows, export_csv, export_npz
from ..figures import analysis as views
from ..figures import interventions as intervention_views
from ..lab import InputError, Lab
from ..sources import layer_matrices, with_source
from .intervention_handlers import InterventionHandlers
from .state import ExportFolder, LabCache, Limits, Session, plot, status_line
from .syntax_handlers import SyntaxHandlers
from .validation import positions, whole

Updates = dict[Any, Any]


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


def notes_text(notes: list[str]) -> str:
    return "\n".join(f"- {n}" for n in notes)


class Handlers(InterventionHandlers, SyntaxHandlers):
    """Every UI event's handler, bound to the page's components and the shared model cache."""

    def __init__(self, ui: SimpleNamespace, cache: LabCache, startup: Lab, limits: Limits) -> None:
        self.ui, self.cache, self.startup, self.limits = ui, cache, startup, limits
        self.exports = ExportFolder(limits.export_age)

    def lab_of(self, session: Session) -> Lab:
        return self.cache.get(session.model, session.device)

    # ---- analysis ------------------------------------------------------------------------
    def shown(self, session: Session):
        """(the analysis in the chosen source, its per-layer matrices or None), computed once per source."""
        if session.source == "attention":
            return session.analysis, None
        if session.source not in session.by_source:
            lab = self.lab_of(session)
            session.by_source[session.source] = (with_source(lab, session.analysis, session.source),
                                                 layer_matrices(lab, session.analysis, session.source))
        return session.by_source[session.source]

    def view_notes(self, session: Session, notes: list[str]) -> str:
        extra = [] if session.source == "attention" else [f"{session.source}: {SOURCE_NOTES[session.source]}"]
        return notes_text(extra + notes)

    def render_all(self, session: Session, message: str) -> Updates:
        ui, a, o = self.ui, session.analysis, session.options
        lab = self.lab_of(session)
        single, notes = views.single_head(a, o)
        pred_fig, table, nsp_text = views.predictions(a)
        return {
            ui.session: session, ui.message: message,
            ui.picker: gr.update(choices=views.token_choices(a), value=[]),
            ui.layer: gr.update(maximum=lab.n_layers, value=o.layer + 1),
            ui.head: gr.update(maximum=lab.n_heads, value=o.head + 1),
            ui.hv_token: gr.update(choices=[("all tokens", -1)] + views.head_view_choices(a, o), value=-1),
            ui.single_plot: plot(single), ui.overview_plot: plot(views.overview(a)),
            ui.headview_plot: plot(views.head_view(a, o)), ui.aggregates_plot: plot(views.aggregates(a, o)),
            ui.summary_plot: plot(views.summary(a)), ui.pred_plot: plot(pred_fig), ui.pred_table: table,
            ui.nsp_md: nsp_text, ui.notes: notes_text(notes), ui.source: "attention",
        }

    def analyze(self, text: str, pair: str, top_k: float, session: Session,
                mask_positions: list[int] | None = None) -> Updates:
        try:
            lab = self.lab_of(session)
            self.check_length(lab, text, pair)
            a = lab.analyze(text, pair=pair or None, top_k=whole(top_k, "top-k", 1, 50), truncate=True,
                            mask_positions=mask_positions or ())
        except (InputError, CheckpointError, DeviceError) as error:
            return {self.ui.message: f"⚠️ {error}"}
        session.analysis, session.source, session.by_source = a, "attention", {}
        session.options = session.options.clamp(a)
        session.options.head_view_token = None
        message = f"{len(a.tokens)} tokens."
        if a.truncated:
            message = (f"⚠️ The input was {a.n_tokens_before_truncation} tokens long; the model takes at most "
                       f"{len(a.tokens)}, so it was truncated to {len(a.tokens)} tokens.")
        return self.render_all(session, message)

    def from_url(self, session: Session, request: gr.Request) -> Updates:
        """Shareable links: ``?text=...&pair=...&layer=2&head=5`` restores the input and the view."""
        params = dict(request.query_params) if request is not None else {}
        text = params.get("text", "")
        if not text.strip():
            return {self.ui.message: gr.skip()}  # an empty dict would read as one output value
        try:
            session.options.layer = whole(params.get("layer", 1), "layer", 1, 1000) - 1
            session.options.head = whole(params.get("head", 1), "head", 1, 1000) - 1
        except InputError as error:
            return {self.ui.message: f"⚠️ {error}"}
        out = self.analyze(text, params.get("pair", ""), 5, session)
        return {**out, self.ui.text: text, self.ui.pair: params.get("pair", "")}

    def mask(self, text: str, pair: str, top_k: float, chosen: list[int], session: Session) -> Updates:
        try:
            picked = positions(chosen)
        except InputError as error:
            return {self.ui.message: f"⚠️ {error}"}
        if not picked:
            return {self.ui.message: "⚠️ choose one or more tokens to mask first"}
        return self.analyze(text, pair, top_k, session, mask_positions=picked)

    def rerender(self, layer: float, head: float, hide: bool, word: bool, pair_filter: str, hv_token: int | None,
                 session: Session, source: str = "attention") -> Updates:
        ui = self.ui
        if session.analysis is None:
            return {ui.notes: gr.skip()}
        session.source = source if source in SOURCES else "attention"
        a, layers = self.shown(session)
        o = session.options
        try:
            o.layer, o.head = whole(layer, "layer", 1, a.n_layers) - 1, whole(head, "head", 1, a.n_heads) - 1
            token = None if hv_token in (None, -1) else whole(hv_token, "token", 0, len(a.tokens) - 1)
        except InputError as error:
            return {ui.notes: f"⚠️ {error}"}
        o.hide_special, o.word_level = bool(hide), bool(word)
        o.pair_filter = pair_filter if pair_filter in PAIR_FILTERS else "all"
        o.head_view_token = token
        single, notes = views.single_head(a, o)
        out = {ui.session: session, ui.single_plot: plot(single), ui.headview_plot: plot(views.head_view(a, o)),
               ui.aggregates_plot: plot(views.aggregates(a, o, layers)), ui.notes: self.view_notes(session, notes)}
        c = session.comparison
        if c is not None and c.baseline.tokens == session.analysis.tokens:
            out[ui.probe_plot] = plot(intervention_views.comparison_figure(c, o))
            out[ui.offsets_plot] = plot(intervention_views.offsets_figure(c, o.clamp(a).layer))
        return out

    def toggles(self, layer, head, hide, word, pair_filter, session: Session, source: str = "attention") -> Updates:
        out = self.rerender(layer, head, hide, word, pair_filter, -1, session, source)
        if session.analysis is not None:
            choices = [("all tokens", -1)] + views.head_view_choices(session.analysis, session.options)
            out[self.ui.hv_token] = gr.update(choices=choices, value=-1)
        return out

    def switch_source(self, layer, head, hide, word, pair_filter, session: Session, source: str) -> Updates:
        """Every view in the chosen source (one extra forward pass the first time per analysis)."""
        out = self.toggles(layer, head, hide, word, pair_filter, session, source)
        if session.analysis is not None:
            a, _ = self.shown(session)
            out[self.ui.overview_plot] = plot(views.overview(a))
            out[self.ui.summary_plot] = plot(views.summary(a))
        return out

    def pick(self, value: str, session: Session) -> Updates:
        try:
            layer, head = (int(v) for v in str(value).split(",")[:2])
        except ValueError:
            return {self.ui.layer: gr.skip()}
        return {self.ui.layer: layer + 1, self.ui.head: head + 1, self.ui.tabs: gr.Tabs(selected="single")}

    def switch_model(self, source: str, device_name: str, session: Session, progress=gr.Progress()) -> Updates:
        ui = self.ui
        progress(0.1, desc=f"loading {source or 'default'} on {device_name}")
        try:
            lab = self.cache.get(source or "default", device_name)
        except (CheckpointError, DeviceError) as error:
            return {ui.message: f"⚠️ Could not load the model: {error}"}
        session.model, session.device = lab.source, str(lab.device)
        session.analysis = None
        return {ui.session: session, ui.message: f"Loaded {lab.name}. Press Run to analyse with it.",
                ui.status: status_line(lab)}

    def export(self, kind: str, session: Session) -> Updates:
        a = session.analysis
        if a is None:
            return {self.ui.message: "⚠️ Run an analysis first, then export it."}
        if kind == "csv" and csv_rows(a) > CSV_MAX_ROWS:
            return {self.ui.message: f"⚠️ As CSV this analysis would be {csv_rows(a):,} rows (the app writes up to "
                                     f"{CSV_MAX_ROWS:,}); export .npz instead (the same numbers, compressed)."}
        folder = self.exports.new()
        path = export_csv(a, folder) if kind == "csv" else export_npz(a, folder)
        return {self.ui.export_file: str(path), self.ui.message: f"Exported {path.name}."}

    def export_csv(self, session: Session) -> Updates:
        return self.export("csv", session)

    def export_npz(self, session: Session) -> Updates:
        return self.export("npz", session)

    def check_length(self, lab: Lab, text: str, pair: str | None) -> None:
        """Public mode: refuse inputs over the token limit instead of spending minutes on them."""
        if self.limits.max_tokens is None or not isinstance(text, str):
            return
        n = len(lab.encode(text, pair or None, truncate=True).ids) if text.strip() else 0
        if n > self.limits.max_tokens:
            raise InputError(f"this server takes up to {self.limits.max_tokens} tokens per request; the input has {n} "
                             "(run bertviz-lab locally for longer inputs)")

    def attention_api(self, text: str, pair: str = "", top_k: int = 5) -> dict[str, Any]:
        """Attention (layers x heads x query x key), tokens and masked-word predictions as JSON; on a
        server with a reply limit, large attention travels as base64 float16 (``attention_f16``)."""
        try:
            self.check_length(self.startup, text, pair)
            result = self.startup.analyze(text, pair=pair or None, top_k=whole(top_k, "top-k", 1, 50), truncate=True)
            return compact_reply(result, self.limits.api_bytes)
        except InputError as error:
            raise gr.Error(str(error)) from None
