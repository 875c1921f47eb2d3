"""Which component event runs which handler, as data: one row per UI event, each with its
``api_name`` (so every action is scriptable with ``gradio_client``). Outputs are named, and
``api_outputs`` tells API clients and tests which name each returned value has."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from .intervention_controls import CONTROLLED
from .state import Session
from .zerogpu import budget_seconds, on_gpu

SERVER_PLOTS = ("overview_plot", "aggregates_plot", "summary_plot", "classes_plot", "pred_plot", "lens_plot",
                "intervention_plot", "offsets_plot")
RUN_INPUTS = ("text", "pair", "top_k", "session", "layer", "head", "hide", "word", "pair_filter", "scale")
# what belongs to one analysis and is drawn on request: cleared by every Run and model switch, so it
# never stands beside an input it does not match
ON_REQUEST = ("neuron_html", "explain_message", "explain_plot", "explain_table", "intervention_message",
              "intervention_plot", "js_plot", "intervention_changes", "offsets_plot", "direction_message",
              "direction_table", "direction_plot", "ablation_message", "ablation_plot", "controls_message", "controls_table",
              "patch_message", "patch_plot", "search_message", "search_table", "qk_message", "qk_plot", "qk_sim_plot",
              "parts_message", "parts_plot")
# what depends on a sentence set: cleared when the set, its upload or its size changes, and by a model switch
SET_BOUND = ("direction_set_message", "direction_set_table", "ablation_set_message", "ablation_set_plot",
             "intervention_set_message", "intervention_set_table")
# what depends on the model but not on the input: cleared by a model switch
MODEL_BOUND = SET_BOUND + ("positions_message", "positions_plot", "faith_message", "faith_table")
RUN_OUTPUTS = ("session", "message", "payload", "picker", "search_token", "layer", "head", "pred_table", "nsp_md", "notes",
               "source", "source_about", "scale", "views_box") + SERVER_PLOTS \
    + tuple(name for name in ON_REQUEST if name not in SERVER_PLOTS)
CONTROLS = ("layer", "head", "hide", "word", "pair_filter", "session", "source")
TAB_OUTPUTS = ("session", "notes") + SERVER_PLOTS
TOGGLE_OUTPUTS = ("session", "payload", "notes", "source_about", "scale") + SERVER_PLOTS
SYNTAX_OUTPUTS = ("session", "syntax_message", "syntax_weights", "syntax_table", "syntax_csv", "syntax_bars", "syntax_relation",
                  "syntax_plot", "syntax_uuas", "syntax_diff", "syntax_sentence", "syntax_direction", "syntax_arcs_intro",
                  "syntax_arcs_btn")
INTERVENTION_OUTPUTS = ("session", "intervention_message", "intervention_plot", "js_plot", "intervention_changes",
                        "offsets_plot")
STATE = ("session",)
# a column, tab or button whose look an event changes: API clients get no value for it
LAYOUT = ("views_box", "predictions_tab", "explain_btn")
URL_OUTPUTS = RUN_OUTPUTS + ("text", "pair")
MODEL_OUTPUTS = ("session", "message", "status", "weights_note", "payload", "picker", "search_token", "pred_table",
                 "views_box", "intervention_kind", "predictions_tab", "explain_btn") + SERVER_PLOTS \
    + tuple(name for name in ON_REQUEST if name not in SERVER_PLOTS) + MODEL_BOUND


@dataclass(frozen=True)
class ClientEvent:
    """An event the page handles by itself (static/views.js): no server round trip, so no api_name;
    the server-side equivalent is ``sync_view`` / the ``payload`` every Run returns."""

    trigger: str
    kind: str
    inputs: tuple[str, ...]
    js: str


SELECT_JS = "(layer, head) => window.bvl ? window.bvl.select(layer - 1, head - 1) : []"


def point_from(message: str) -> ClientEvent:
    """After an answer: if the message ``message`` names where the person must act, the page scrolls there."""
    return ClientEvent("", "", (), f"() => window.bvl ? window.bvl.point('#{message.replace('_', '-')}') : []")


POINT_MESSAGE = point_from("intervention_message")
CLIENT_EVENTS = (
    ClientEvent("layer", "input", ("layer", "head"), SELECT_JS),
    ClientEvent("head", "input", ("layer", "head"), SELECT_JS),
    ClientEvent("pair_filter", "input", ("pair_filter",), "(value) => window.bvl ? window.bvl.filter(value) : []"),
    ClientEvent("payload", "change", ("payload",), "(p) => window.bvl ? window.bvl.load(p) : []"),
    ClientEvent("scale", "input", ("scale",), "(mode) => window.bvl ? window.bvl.scale(mode) : []"),
)


@dataclass(frozen=True)
class Event:
    trigger: str  # component name on ``ui``
    kind: str  # click, submit, input, change, or a path such as load_input_event.then
    handler: str  # "controller.method" on the page's Controllers (app/controllers.py)
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    api_name: str
    options: dict[str, Any] = field(default_factory=dict)
    client_then: ClientEvent | None = None  # the page's follow-up once the server answered


FAST = {"show_progress": "hidden", "trigger_mode": "always_last"}
# A Run updates some 45 components; a progress overlay on each is page work before the request leaves and
# after the answer lands (benchmarks/run_breakdown.py): the status line alone shows that the Run is under way.
# Gradio's own indicator there is a timer the page redraws every animation frame: with the server on the same
# machine (python app.py), that drawing takes ~100 ms of CPU from the forward pass during a 512-token Run. So
# its overlay stays hidden and the page's CSS shows a still "Running…" on the status line while the Run's
# status is pending (the CSS of app/__init__.py).
RUN_PROGRESS = {"show_progress": "hidden", "show_progress_on": ("message",)}
# Gradio's page keeps a loading status for every component that was ever an event's progress target (by
# default each of its outputs) for the rest of the visit, and on every status change of any event (3-4 per
# Run) copies the value of each such component with Svelte's $state.snapshot: one structuredClone per number
# or string of the hidden payload (thousands at 128 tokens), and every component inside a column. These
# never show an overlay, so they are never progress targets; nor are the tab sets (containers too).
NO_PROGRESS = ("payload", "session", "tabs", "work_tabs") + LAYOUT


def progress_targets(outputs: Sequence[str], options: dict[str, Any]) -> tuple[str, ...]:
    """The components an event's progress overlay goes on: those its options name, else its outputs but
    the hidden payload, the session and the containers (NO_PROGRESS)."""
    if "show_progress_on" in options:
        return tuple(options["show_progress_on"])
    return tuple(name for name in outputs if name not in NO_PROGRESS)


CORPUS_SLOT = "syntax"
# corpus-sized work, one at a time: Gradio's queue, and the gate's slot that the API and MCP doors share (gate.py)
ONE_TREEBANK_AT_A_TIME = {"concurrency_id": CORPUS_SLOT, "concurrency_limit": 1}
EVENTS = (
    Event("run_btn", "click", "run.run", RUN_INPUTS, RUN_OUTPUTS, "analyze", RUN_PROGRESS),
    Event("text", "submit", "run.run", RUN_INPUTS, RUN_OUTPUTS, "analyze_submit", RUN_PROGRESS),
    Event("examples", "load_input_event.then", "run.run", RUN_INPUTS, RUN_OUTPUTS, "analyze_example", RUN_PROGRESS),
    Event("mask_btn", "click", "run.mask", ("text", "pair", "top_k", "picker", "session", "layer", "head", "hide", "word",
                                        "pair_filter", "scale"), RUN_OUTPUTS, "mask_tokens", RUN_PROGRESS),
    Event("sync_btn", "click", "views.sync_view", CONTROLS + ("view_tab", "scale"), TAB_OUTPUTS, "sync_view", FAST),
    Event("tabs", "select", "views.select_tab", CONTROLS + ("scale",), TAB_OUTPUTS, "select_tab"),
    Event("work_tabs", "select", "views.select_tab", CONTROLS + ("scale",), TAB_OUTPUTS + ("recipe_choice",),
          "select_work_tab"),
    Event("hide", "input", "views.toggles", CONTROLS + ("scale",), TOGGLE_OUTPUTS, "hide_special"),
    Event("word", "input", "views.toggles", CONTROLS + ("scale",), TOGGLE_OUTPUTS, "word_level"),
    Event("source", "input", "views.toggles", CONTROLS + ("scale",), TOGGLE_OUTPUTS, "attention_source"),
    # the page redraws the single head and head view itself (CLIENT_EVENTS); the server, its open tabs
    Event("scale", "input", "views.sync_view", CONTROLS + ("view_tab", "scale"), TAB_OUTPUTS, "colour_scale", FAST),
    Event("overview_pick", "change", "views.pick", ("overview_pick", "session"), ("layer", "head", "tabs", "session"),
          "pick_head", client_then=ClientEvent("", "", ("layer", "head"), SELECT_JS)),
    Event("explain_btn", "click", "inspect.explain", ("session",), ("explain_message", "explain_plot", "explain_table"),
          "explain"),
    Event("neuron_btn", "click", "inspect.neuron_view", ("session", "layer", "head", "headview_token"), ("neuron_html",),
          "neuron_view"),
    Event("parts_btn", "click", "qk.score_parts", ("session", "layer", "head"), ("parts_message", "parts_plot"),
          "score_parts"),
    Event("search_btn", "click", "search.search_tokens", ("session", "search_token", "layer", "head", "search_kind",
                                                   "search_heads"), ("search_message", "search_table"), "search_tokens"),
    Event("qk_btn", "click", "qk.qk_space", ("session", "layer", "head", "qk_set", "qk_color", "qk_method"),
          ("qk_message", "qk_plot"), "qk_space", ONE_TREEBANK_AT_A_TIME),
    Event("qk_sim_btn", "click", "qk.qk_similarity", ("session", "qk_set"), ("qk_message", "qk_sim_plot"),
          "head_similarity", ONE_TREEBANK_AT_A_TIME),
    Event("load_btn", "click", "run.switch_model", ("model_box", "device_box", "session"), MODEL_OUTPUTS, "load_model",
          {"show_progress_on": ("message", "status")}),
    Event("csv_btn", "click", "inspect.export_csv", STATE, ("export_file", "message"), "export_csv"),
    Event("npz_btn", "click", "inspect.export_npz", STATE, ("export_file", "message"), "export_npz"),
    Event("recipe_btn", "click", "inspect.copy_recipe", ("recipe_choice", "session"),
          ("recipe_choice", "recipe_note", "recipe_code"), "recipe"),
    Event("recipe_choice", "input", "inspect.copy_recipe", ("recipe_choice", "session"),
          ("recipe_choice", "recipe_note", "recipe_code"), "recipe_of_result", FAST),
    Event("intervention_kind", "change", "interventions.intervention_controls", ("intervention_kind",),
          ("intervention_explain",) + CONTROLLED, "intervention_controls", FAST),
    Event("intervention_btn", "click", "interventions.run_intervention", ("text", "pair", "top_k", "intervention_kind", "picker",
                                                            "intervention_heads", "intervention_shift",
                                                            "intervention_seed", "session", "intervention_sinks",
                                                            "intervention_unit", "intervention_ablation"),
          INTERVENTION_OUTPUTS, "intervention", client_then=POINT_MESSAGE),
    Event("positions_table_btn", "click", "interventions.run_position_controls", ("text", "pair", "picker", "intervention_shift",
                                                                    "session"),
          ("controls_message", "controls_table"), "position_controls", client_then=point_from("controls_message")),
    Event("direction_set_btn", "click", "sets.run_directional_set", ("set_n", "intervention_sinks", "session",
                                                                "sentence_set", "set_upload"),
          ("direction_set_message", "direction_set_table"), "directional_set", ONE_TREEBANK_AT_A_TIME),
    Event("ablation_set_btn", "click", "sets.run_ablation_set", ("set_n", "intervention_ablation", "session",
                                                            "sentence_set", "set_upload"),
          ("ablation_set_message", "ablation_set_plot"), "ablation_set", ONE_TREEBANK_AT_A_TIME),
    Event("intervention_set_btn", "click", "sets.run_intervention_set", ("intervention_kind", "intervention_heads",
                                                                    "intervention_shift", "intervention_seed",
                                                                    "intervention_sinks", "intervention_unit",
                                                                    "intervention_ablation", "set_n", "session",
                                                                    "sentence_set", "set_upload"),
          ("intervention_set_message", "intervention_set_table"), "intervention_set", ONE_TREEBANK_AT_A_TIME),
    Event("sentence_set", "change", "run.clear_set_results", (), SET_BOUND, "clear_set_results", FAST),
    Event("set_upload", "change", "run.clear_set_results", (), SET_BOUND, "clear_set_results_upload", FAST),
    Event("set_n", "change", "run.clear_set_results", (), SET_BOUND, "clear_set_results_size", FAST),
    Event("patch_btn", "click", "interventions.run_patching", ("text", "patch_donor", "patch_correct", "patch_wrong", "session"),
          ("patch_message", "patch_plot"), "patching"),
    Event("direction_btn", "click", "interventions.run_directional", ("text", "pair", "picker", "session", "intervention_sinks"),
          ("direction_message", "direction_table", "direction_plot"), "directional_sweep", client_then=point_from("direction_message")),
    Event("ablation_btn", "click", "interventions.run_ablation", ("text", "pair", "picker", "session", "intervention_ablation"),
          ("ablation_message", "ablation_plot"), "ablation_sweep", client_then=point_from("ablation_message")),
    Event("positions_btn", "click", "interventions.run_positions", ("positions_n", "session"),
          ("positions_message", "positions_plot"), "position_embeddings"),
    Event("faith_btn", "click", "sets.run_faithfulness", ("faith_n", "session"), ("faith_message", "faith_table"),
          "faithfulness", ONE_TREEBANK_AT_A_TIME),
    Event("syntax_btn", "click", "syntax.run_syntax", ("syntax_treebank", "syntax_upload", "syntax_use_loaded",
                                                "syntax_compare", "session", "syntax_score_source"), SYNTAX_OUTPUTS,
          "score_heads", ONE_TREEBANK_AT_A_TIME),
    Event("structure_btn", "click", "syntax.run_structure_view", ("syntax_treebank", "syntax_upload", "syntax_use_loaded",
                                                          "session", "structure_masking"), ("structure_message", "structure_plot"),
          "structural_probe", ONE_TREEBANK_AT_A_TIME),
    Event("syntax_relation", "input", "syntax.syntax_relation_view", ("syntax_relation", "syntax_direction", "session"),
          ("syntax_plot", "syntax_diff", "syntax_message"), "syntax_relation"),
    Event("syntax_direction", "input", "syntax.syntax_relation_view", ("syntax_relation", "syntax_direction", "session"),
          ("syntax_plot", "syntax_diff", "syntax_message"), "syntax_direction"),
    Event("syntax_sentence", "input", "syntax.syntax_arcs", ("syntax_sentence", "layer", "head", "session"),
          ("syntax_arcs_text", "syntax_arcs"), "syntax_sentence"),
    Event("syntax_parse_btn", "click", "syntax.parse_sentence", ("text", "layer", "head", "session"),
          ("syntax_parse_message", "syntax_parse_arcs", "syntax_parse_agreement"), "parse_sentence"),
    Event("syntax_arcs_btn", "click", "syntax.syntax_arcs", ("syntax_sentence", "layer", "head", "session"),
          ("syntax_arcs_text", "syntax_arcs"), "syntax_arcs"),
)


def api_outputs(api_name: str) -> tuple[str, ...]:
    """Names of the values an API client gets back from ``api_name`` (state and layout are never returned)."""
    for event in EVENTS:
        if event.api_name == api_name:
            return tuple(name for name in event.outputs if name not in STATE + LAYOUT)
    raise KeyError(f"no event with api_name {api_name!r}")


# Handlers that run the model (the others re-render cached results): these get a GPU on ZeroGPU.
MODEL_HANDLERS = {"run.run", "run.mask", "interventions.run_intervention", "interventions.run_directional",
                  "interventions.run_ablation", "interventions.run_positions", "interventions.run_position_controls",
                  "sets.run_directional_set", "sets.run_ablation_set", "sets.run_intervention_set",
                  "interventions.run_patching", "sets.run_faithfulness", "syntax.run_syntax",
                  "syntax.run_structure_view", "syntax.syntax_arcs", "syntax.parse_sentence", "run.from_url", "views.toggles",
                  "views.sync_view", "views.select_tab", "inspect.explain", "inspect.neuron_view",
                  "search.search_tokens", "qk.qk_space", "qk.qk_similarity", "qk.score_parts"}


CLEARS_ON_REQUEST = {"run.run", "run.mask", "run.from_url"}  # their answers clear the views drawn on request


def marks_on_request(fn, components: set):
    """``fn``, noting on the event's session when its answer fills a view drawn on request (so the next Run
    clears it); generator handlers are followed through every update they yield."""
    def mark(args: tuple, out: Any) -> Any:
        if isinstance(out, dict) and any(component in out for component in components):
            for arg in args:
                if isinstance(arg, Session):
                    arg.shown_on_request = True
        return out

    if inspect.isgeneratorfunction(inspect.unwrap(fn)):
        @functools.wraps(fn)
        def each(*args: Any, **kwargs: Any):
            for out in fn(*args, **kwargs):
                yield mark((*args, *kwargs.values()), out)
        return each

    @functools.wraps(fn)  # Gradio reads the handler's signature (progress, request) through __wrapped__
    def once(*args: Any, **kwargs: Any):
        return mark((*args, *kwargs.values()), fn(*args, **kwargs))
    return once


def method_of(controllers: Any, name: str) -> tuple[Any, str]:
    """(the controller, the method's name) of "controller.method"."""
    owner, method = name.split(".")
    return getattr(controllers, owner), method


def mark_on_request(controllers: Any) -> None:
    """Every handler whose answer can fill a view drawn on request notes it on its session (the controllers'
    methods are replaced, so a direct call, as tests and scripts make, notes it too)."""
    components = {getattr(controllers.page.ui, n) for n in ON_REQUEST}
    for event in EVENTS:
        if event.handler not in CLEARS_ON_REQUEST and set(event.outputs) & set(ON_REQUEST):
            owner, name = method_of(controllers, event.handler)
            method = getattr(owner, name)
            if not getattr(method, "__bvl_marks__", False):
                marked = marks_on_request(method, components)
                marked.__bvl_marks__ = True
                setattr(owner, name, marked)


def handler_of(controllers: Any, name: str, gate: Any = None, outputs: tuple[str, ...] = (), corpus: bool = False):
    """The handler "controller.method" as an event runs it: through the gate (the server's limits; see
    ``gate.py``), and on a GPU on ZeroGPU if it runs the model (inside the gate, so the budget is set where the
    model runs). Its parameters are the API's, one per input, in the event's order."""
    owner, method = method_of(controllers, name)
    fn = getattr(owner, method)
    if gate is not None:
        fn = gate.wrap(fn, outputs, corpus=corpus)
    return on_gpu(fn, budget_seconds(gate)) if name in MODEL_HANDLERS else fn


def listener(ui: SimpleNamespace, trigger: str, kind: str):
    """The event method, e.g. ``ui.run_btn.click`` or ``ui.examples.load_input_event.then``."""
    target = getattr(ui, trigger)
    for part in kind.split("."):
        target = getattr(target, part)
    return target


def wire(ui: SimpleNamespace, controllers: Any, gate: Any) -> None:
    """Attach every event of EVENTS to its component and handler (each through ``gate``), and
    CLIENT_EVENTS to the page's JS."""
    for event in EVENTS:
        options = dict(event.options)
        options["show_progress_on"] = [getattr(ui, n) for n in progress_targets(event.outputs, options)]
        dependency = listener(ui, event.trigger, event.kind)(
            handler_of(controllers, event.handler, gate, event.outputs,
                       corpus=event.options.get("concurrency_id") == CORPUS_SLOT),
            [getattr(ui, n) for n in event.inputs],
            [getattr(ui, n) for n in event.outputs], api_name=event.api_name, **options)
        if event.client_then is not None:
            dependency.then(None, [getattr(ui, n) for n in event.client_then.inputs], None, js=event.client_then.js)
    for client in CLIENT_EVENTS:
        listener(ui, client.trigger, client.kind)(None, [getattr(ui, n) for n in client.inputs], None, js=client.js)
