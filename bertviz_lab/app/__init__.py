"""The Gradio app: one builder per tab (``tabs``), one controller per tab whose handlers return
``{component: value}`` (``controllers``), the event table (``events``), per-session state and the shared model cache
(``state``), and the static JS that adds SVG export and click-to-open thumbnails."""
from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import plotly
from starlette.middleware import Middleware

from ..bert import DEFAULT_CHECKPOINT
from ..bert.loading.checkpoints import shipped_checkpoints
from ..bert.loading.twin_checkpoints import twin_names
from ..lab import Lab, load
from ..resources import STATIC
from . import interventions_tab, positions_tab, syntax_tab, tabs
from .agent_tools import AgentTools, only_agent_tools, register
from .blocks import LabBlocks
from .controllers import build_controllers
from .events import RUN_PROGRESS, URL_OUTPUTS, handler_of, progress_targets, wire
from .gate import Gate
from .opening import OpeningPayload, opening_route
from .state import LabCache, Limits
from .static_cache import StaticFromMemory
from .temp_folders import gradio_cache_folder, remove_stale_folders
from .view_controller import codes_route

CSS = """
#header {align-items: center}
#title h2 {margin: 0; font-size: 1.25em}
#status {font-size: 0.85em; color: #444}
#status p {margin: 0}
#message p {margin: 0.2em 0}
/* a Run or Mask under way (events.RUN_PROGRESS): Gradio's pending status on the status line, shown still;
   Gradio's own indicator (a timer it rewrites every frame) is not laid out at all */
#message [data-testid="status-tracker"] {display: none !important}
#message:has([data-testid="status-tracker"] .progress-text) .md {opacity: 0.45}
#message:has([data-testid="status-tracker"] .progress-text)::before {content: "Running…"; float: right; color: #555;
  font-size: 0.9em}
.bvl-note {color: #555; font-size: 0.9em}
/* The token picker sits under the input (issue 60: a class masks a word without scrolling) and has a checkbox per
   token (4,700 px at 512 tokens): it scrolls within a few lines, its box a fixed size so that a Run's new tokens
   move nothing else on the page; half of a fourth line shows, so a longer list reads as one that scrolls. */
#token-picker [data-testid=checkbox-group] {max-height: 10.6em; overflow-y: auto; contain: layout paint;
  padding-left: 2px}
.bvl-caption {min-height: 1.2em; padding: 0 8px}
.bvl-on-use:has(.empty[aria-label="Empty value"]), .bvl-on-use:has(.table-container.no-rows) {display: none !important}
/* the Syntax tab's file box only while "my CoNLL-U file" is chosen (the sample treebank needs none) */
#tab-syntax:has(#syntax-treebank input[value="sample"]:checked) #syntax-upload {display: none !important}
/* Gradio's help lines under a label (#9ca3af on white, 2.5:1) in a grey that reads (7:1) */
[data-testid="block-info"] {color: #4b5563}
.bvl-pointed {outline: 3px solid #f6ad55; outline-offset: 4px; transition: outline-color 1s}
/* a refused Run: the views still show the previous input, so they are greyed until the next good Run */
#views.bvl-stale > * {opacity: 0.35; filter: grayscale(1); pointer-events: none}
.block.bvl-result-title:has(span.md:empty) {display: none !important}
.block.bvl-result-title {border-left: 3px solid #8aa4d6; padding-left: 8px; margin-top: 0.6em}
.bvl-result-title p {margin: 0.2em 0}
#source-about details {display: inline}
#source-about summary {display: inline; cursor: pointer; color: #2a55a4}
/* tables: headers wrap at word boundaries, a wide table scrolls inside its own box */
.table-container {overflow-x: auto}
th .header-content, th span {overflow-wrap: normal; word-break: normal; hyphens: none}
/* the narrow tables of the view column: a smaller font, so every header and word fits its column at 1024 px */
#search-table table, #explain-table table {font-size: 12px}
#search-table td, #search-table th, #explain-table td, #explain-table th {padding-left: 4px; padding-right: 4px}
"""


LIMITS = Limits()
# Six view tabs do not fit the right column below ~1600 px; Gradio would hide the last ones
# (Masked words among them) behind a "..." menu. Wrapping keeps every tab in sight (Gradio >= 6).
WRAP_TABS = {"overflow_behavior": "wrap"} if "overflow_behavior" in inspect.signature(gr.Tabs).parameters else {}
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"  # the plotly.js the Python package ships
PLOTLY_URL = "bvl-static/plotly.min.js"  # served from memory (static_cache.py), relative to the page
GRADIO_ASSETS = Path(gr.__file__).parent / "templates" / "frontend" / "assets"  # Gradio's page, one file per component


def build_demo(lab: Lab | None = None, allowed_models: list[str] | None = None, allow_any_model: bool = False,
               device: str | None = None, limits: Limits = LIMITS) -> LabBlocks:
    """The whole page on one loaded model; users may switch among ``allowed_models``."""
    remove_stale_folders()  # of servers of this app that died without cleaning up (kill -9, a crash)
    gradio_cache_folder()  # Gradio's copies of uploads in a folder of ours, so a restart reclaims it
    lab = lab or load(DEFAULT_CHECKPOINT, device=device or "auto")
    shipped = shipped_checkpoints()  # every weight set the package ships, the position twins included
    cache = LabCache(sorted(set((allowed_models or []) + [lab.checkpoint_id, *shipped])),
                     allow_any_model)
    cache.pin(lab, str(lab.device))
    ui = SimpleNamespace()
    # Gradio's own copies of uploads are deleted after limits.gradio_cache[1] s; exports and payloads are
    # served from our folders (static paths), never copied.
    with LabBlocks(title="bertviz-lab", fill_width=True, delete_cache=limits.gradio_cache) as demo:
        tabs.build_header(ui, lab, cache.allowed, limits.session_ttl)
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=340, elem_id="controls"):
                tabs.build_inputs(ui, lab, cache.allowed)
            with gr.Column(scale=3, min_width=480, elem_id="views") as ui.views_box:
                with gr.Tabs(selected="single", **WRAP_TABS) as ui.tabs:
                    tabs.build_view_tabs(ui, lab)
        with gr.Tabs(selected="interventions", elem_id="work-tabs") as ui.work_tabs:  # longer work, full width
            interventions_tab.build_interventions_tab(ui, lab, limits)
            syntax_tab.build_syntax_tab(ui)
            if twin_names():
                positions_tab.build(ui)
            tabs.build_export_tab(ui)
        gr.Markdown("Figures: use the camera icon for PNG and the disk icon for SVG. "
                    "API: every action is scriptable with `gradio_client` (see the README).",
                    elem_classes=["bvl-note"])
        controllers = build_controllers(ui, cache, lab, limits)
        gr.set_static_paths([controllers.page.exports.root])  # exports are downloaded from our folder (Gradio copies none)
        gate = Gate(ui, limits)
        wire(ui, controllers, gate)
        if twin_names():
            positions_tab.wire(ui, positions_tab.PositionsLesson(ui, cache, str(lab.device)), gate)
        demo.load(handler_of(controllers, "run.from_url", gate, URL_OUTPUTS), [ui.session],
                  [getattr(ui, n) for n in URL_OUTPUTS], api_name="from_url",
                  show_progress=RUN_PROGRESS["show_progress"],
                  show_progress_on=[getattr(ui, n) for n in progress_targets(URL_OUTPUTS, RUN_PROGRESS)])
        gr.api(gate.wrap(controllers.run.attention_api, ()), api_name="attention")
        register(AgentTools(lab, cache, limits), lambda tool, corpus: gate.wrap(tool, (), corpus=corpus))  # the MCP tools, same gate
    demo.bvl_gate, demo.bvl_controllers = gate, controllers  # for tests and benchmarks
    demo.bvl_opening = OpeningPayload(controllers.run, ui.payload, ui.session.value)
    warm_parser()
    return demo


def warm_parser() -> None:
    """Load the offline parser (about 1 s) on a background thread while the page starts, so a visitor's first
    *Parse the sentence typed above* is as quick as the next; nothing happens when it is not installed."""
    import threading

    from ..syntax.live_parser import load_parser, parser_package

    if parser_package() is not None:
        threading.Thread(target=load_parser, name="bvl-parser-warmup", daemon=True).start()


def queue_kwargs(limits: Limits = LIMITS) -> dict[str, Any]:
    """Four events at a time; at most ``limits.queue`` waiting, then "busy, try again"."""
    return {"default_concurrency_limit": 4, "max_size": limits.queue}


def launch_kwargs(limits: Limits = LIMITS, demo: gr.Blocks | None = None, mcp: bool = False) -> dict[str, Any]:
    """Styling plus the server's limits: session states kept, upload size, readable error messages; Gradio's page
    files and plotly.js answered from memory (``StaticFromMemory``); with ``demo``, the routes its page fetches an
    analysis's codes from (``codes_route``) and the opening example from before Gradio has built the page
    (``opening_route``); with ``mcp``, an MCP server at /gradio_api/mcp/ that lists only the agent tools
    (``agent_tools``)."""
    scripts = ("figure_tools.js", "export.js", "viewer.js", "views.js", "opening.js")
    head = "".join(f"<script>{(STATIC / name).read_text()}</script>" for name in scripts)
    # views.js draws with plotly.js and fetches it itself once the first map is on screen (see needPlotly there)
    head += f"<script>window.BVL_PLOTLY_URL = {json.dumps(PLOTLY_URL)};</script>"
    kwargs = {"css": CSS + (STATIC / "viewer.css").read_text(), "head": head, "theme": gr.themes.Soft(),
              "state_session_capacity": limits.light_sessions, "max_file_size": limits.upload_bytes, "show_error": True,
              # Gradio's run history re-serialises up to 100 past calls, outputs included, into localStorage on every
              # event: ~200 ms of the page's main thread per Run at 128 tokens (benchmarks/run_breakdown.py)
              "run_history": False,
              "app_kwargs": {"middleware": [Middleware(StaticFromMemory, folders={"/assets/": GRADIO_ASSETS},
                                                       files={f"/{PLOTLY_URL}": PLOTLY_JS})]}}
    if demo is not None:
        kwargs["app_kwargs"]["routes"] = [codes_route(demo.bvl_controllers.page.payloads), opening_route(demo.bvl_opening)]
    if mcp and demo is not None:
        kwargs["mcp_server"] = True
        kwargs["app_kwargs"]["lifespan"] = only_agent_tools(demo)
    return kwargs


def env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]
