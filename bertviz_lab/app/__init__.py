"""The Gradio app: one builder per tab (``tabs``), handlers returning ``{component: value}``
(``handlers``), the event table (``events``), per-session state and the shared model cache
(``state``), and the static JS that adds SVG export and click-to-open thumbnails."""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import gradio as gr

from ..bert import DEFAULT_SOURCE, ORIGINAL_SOURCE
from ..lab import Lab, load
from ..resources import STATIC
from . import tabs
from .events import URL_OUTPUTS, handler_of, wire
from .handlers import Handlers
from .state import LabCache, Limits

CSS = """
#status {font-size: 0.9em; color: #444}
#message p {margin: 0.2em 0}
.bvl-note {color: #555; font-size: 0.9em}
"""


LIMITS = Limits()


def build_demo(lab: Lab | None = None, allowed_models: list[str] | None = None, allow_any_model: bool = False,
               device: str | None = None, limits: Limits = LIMITS) -> gr.Blocks:
    """The whole page on one loaded model; users may switch among ``allowed_models``."""
    lab = lab or load(DEFAULT_SOURCE, device=device or "auto")
    cache = LabCache(sorted(set((allowed_models or []) + [lab.source, DEFAULT_SOURCE, ORIGINAL_SOURCE])),
                     allow_any_model)
    cache.pin(lab, str(lab.device))
    ui = SimpleNamespace()
    # Gradio's own copies of uploads and exports are deleted after an hour (checked every 10 minutes).
    with gr.Blocks(title="bertviz-lab", fill_width=True, delete_cache=(600, 3600)) as demo:
        tabs.build_header(ui, lab, cache.allowed, limits.session_ttl)
        tabs.build_inputs(ui, lab)
        with gr.Tabs(selected="single") as ui.tabs:
            tabs.build_view_tabs(ui)
            tabs.build_interventions_tab(ui, lab)
            tabs.build_syntax_tab(ui)
            tabs.build_export_tab(ui)
        gr.Markdown("Figures: use the camera icon for PNG and the disk icon for SVG. "
                    "API: every action is scriptable with `gradio_client` (see the README).",
                    elem_classes=["bvl-note"])
        handlers = Handlers(ui, cache, lab, limits)
        wire(ui, handlers)
        demo.load(handler_of(handlers, "from_url"), [ui.session], [getattr(ui, n) for n in URL_OUTPUTS],
                  api_name="from_url")
        gr.api(handlers.attention_api, api_name="attention")
    demo.bvl_lab = lab  # for tests and the launcher
    return demo


def queue_kwargs(limits: Limits = LIMITS) -> dict[str, Any]:
    """Four events at a time; at most ``limits.queue`` waiting, then "busy, try again"."""
    return {"default_concurrency_limit": 4, "max_size": limits.queue}


def launch_kwargs(limits: Limits = LIMITS) -> dict[str, Any]:
    """Styling plus the server's limits: session states kept, upload size, readable error messages."""
    head = f"<script>{(STATIC / 'figure_tools.js').read_text()}</script>"
    return {"css": CSS, "head": head, "theme": gr.themes.Soft(), "state_session_capacity": limits.sessions,
            "max_file_size": limits.upload_bytes, "show_error": True}


def env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]
