"""The page, one builder per part. Each builder creates its components inside the current
``gr.Blocks`` and stores them on the shared ``ui`` namespace under the names the handlers and
the event table use."""
from __future__ import annotations

import html
import importlib.util
import os
from types import SimpleNamespace

import gradio as gr
import pandas as pd

from ..attention import PAIR_FILTERS
from ..attention.sources import SOURCES
from ..bert import available_devices
from ..figures import analysis as views
from ..figures.base import SCALES
from ..figures.qk import COLOURINGS
from ..lab import Lab
from .qk_controller import PARTS_HINT, QK_HINT, QK_SETS
from .search_controller import SEARCH_COLUMNS, SEARCH_HINT
from .state import Session, status_line, weights_note

EXAMPLES = [  # the first opens the page: one [MASK], so every tab (Masked words too) has something to show
    ["The cat sat on the [MASK] because it was tired.", ""],
    ["The cat sat on the mat because it was tired.", ""],
    ["The doctor said that [MASK] would see the patient tomorrow.", ""],
    ["Paris is the [MASK] of France.", ""],
    ["The man went to the store.", "He bought a gallon of milk."],
    ["The man went to the store.", "Penguins are flightless birds."],
    ["The bank raised the interest rate, and the river bank flooded.", ""],
]


# Tab label -> tab id; the server draws the figures of the tabs in SERVER_TABS, the page the others.
TABS = {"Single head": "single", "Head view": "headview", "Model overview": "overview", "Aggregates": "aggregates",
        "Head summary": "summary", "Masked words": "predictions", "Interventions": "interventions", "Syntax": "syntax",
        "Export": "export"}
TAB_IDS = {tab_id: label for label, tab_id in TABS.items()}
CLASSES_TAB = "Classes"  # the predictions tab's label on a sequence classifier: its classes, in its own words
TAB_ALIASES = {CLASSES_TAB: "predictions"}


def prediction_words(lab: Lab) -> tuple[str, str]:
    """The predictions tab's label and its explain button's, in the model's own words: a sequence classifier
    predicts classes ("Classes", "Why this class?"), a masked-word model words."""
    if lab.model.classifier is not None and not lab.model.has_mlm_head:
        return CLASSES_TAB, "Why this class? Attribute the class to the context"
    return TAB_IDS["predictions"], "Why this word? Attribute the prediction to the context"
SERVER_TABS = ("overview", "aggregates", "summary", "predictions", "interventions")
WORK_TABS = ("interventions", "syntax", "export")  # the lower, full-width group
ON_USE = ["bvl-on-use"]  # hidden by the page's CSS while empty: no blank frame before the first result
INTERVENTION_HINT = ("Results appear here: choose an intervention above and press *Run the intervention*; each sweep "
                     "writes its own titled result under this one.")
EXPLAIN_HINT = ("*Why this word?* attributes the first masked word's prediction to the context tokens "
                "(erasure, gradients, every source); for a classifier with no word masked, its predicted class.")
ARCS_INTRO = ("**One sentence:** its gold dependency arcs next to the arcs the head chosen with the Layer/Head "
              "sliders predicts.")
SYNTAX_HINT = ("Choose a treebank and press **Score every head on the treebank**: the best head per relation with its "
               "interval, the per-head maps and one sentence's arcs appear here.")
# Every attention source of the registry is offered for the views; heads are scored only on the per-head
# ones (a per-layer source such as rollout or flow gives every head of a layer the same score).
PER_HEAD_SOURCES = tuple(name for name, source in SOURCES.items() if not source.per_layer)
SOURCE_INFO = "Leave it on attention weights unless you are comparing explanation methods."
LOWER_TABS_HINT = ("More below the views: **[Interventions · Syntax · Export ↓](#work-tabs)** — change the input or "
                   "the model and see what changes, score heads against a treebank, download the numbers.")


def source_about(name: str) -> str:
    """The chosen source in one plain sentence, its paper and code folded away in a details link."""
    source = SOURCES[name]
    return (f"**{source.label}:** {source.plain} <details><summary>Paper and code</summary>{html.escape(source.citation)}"
            f" — {html.escape(source.note)}</details>")
AOPC_UNIT = "the mean drop in log P(word) when the top 1-5 tokens are hidden, in nats"
ERASER_UNIT = "differences of the word's probability (from -1 to 1)"
# the explain table also rates the rankings of a classifier's class (Why this word? with nothing masked)
EXPLAIN_AOPC = "the mean drop in log P of the word (or class) when the top 1-5 tokens are hidden, in nats"
EXPLAIN_ERASER = "differences of its probability (from -1 to 1)"
EXPLAIN_TABLE_LABEL = (f"How faithful each ranking is on this input: rank agreement with erasure (Spearman ρ, -1 to 1); "
                       f"AOPC, {EXPLAIN_AOPC}; ERASER comprehensiveness and sufficiency, {EXPLAIN_ERASER}")
EXPLAIN_COLUMNS = {"aopc": "AOPC (nats)", "comprehensiveness": "comprehensiveness (Δp)",
                   "sufficiency": "sufficiency (Δp)"}
EXPLAIN_WIDTHS = ["24%", "16%", "14%", "26%", "20%"]  # the whole table in the view column at 1024 px
EXPLAIN_EMPTY = pd.DataFrame(columns=["ranking", "Spearman ρ with erasure", *EXPLAIN_COLUMNS.values()])


def build_header(ui: SimpleNamespace, lab: Lab, allowed: list[str], session_ttl: float) -> None:
    ui.session = gr.State(Session(model=lab.checkpoint_id, device=str(lab.device)), time_to_live=session_ttl)
    with gr.Row(elem_id="header"):
        gr.Markdown("## bertviz-lab · every layer and head of BERT's attention, and its masked-word predictions",
                    elem_id="title")
        gr.DuplicateButton("Duplicate this Space", size="sm", visible=bool(os.environ.get("SPACE_ID")))  # Spaces only
    ui.status = gr.Markdown(status_line(lab), elem_id="status")
    gr.Markdown(LOWER_TABS_HINT, elem_id="lower-tabs-hint", elem_classes=["bvl-note"])
    ui.payload = gr.JSON(visible=False)  # what views.js draws from (figures/payload.py)
    ui.sync_btn = gr.Button("sync", visible="hidden", elem_id="sync-views")  # views.js: server-drawn views follow
    # figure_tools.js writes "layer,head,time" here when an overview thumbnail or a head-similarity cell is clicked;
    # outside every tab, so it is in the page whichever tab is open (Gradio mounts a tab's content when shown)
    ui.overview_pick = gr.Textbox(visible="hidden", elem_id="overview-pick")
    # viewer.js writes the index of the token last clicked in the head view here: the neuron view opens on it
    ui.headview_token = gr.Textbox(visible="hidden", elem_id="headview-token")
    ui.view_tab = gr.Textbox(visible=False)  # API callers may name the tab sync_view draws; the page leaves it ""


def build_model_box(ui: SimpleNamespace, lab: Lab, allowed: list[str]) -> None:
    devices = available_devices()
    with gr.Accordion("Model and device", open=False):
        ui.weights_note = gr.Markdown(weights_note(lab), elem_classes=["bvl-note"])
        ui.model_box = gr.Dropdown(choices=allowed, value=lab.checkpoint_id, label="Model", allow_custom_value=True,
                                   info="'default' = embedded MiniLM-L6; hub ids / folders the operator allows")
        with gr.Row():
            ui.device_box = gr.Dropdown(choices=devices, value=str(lab.device) if str(lab.device) in devices
                                        else devices[-1], label="Device")
            ui.load_btn = gr.Button("Load model")


def build_inputs(ui: SimpleNamespace, lab: Lab, allowed: list[str]) -> None:
    """The left column: the input, Run, examples, and the controls every view follows."""
    ui.text = gr.Textbox(label="Sentence A", lines=2, elem_id="text-a", value=EXAMPLES[0][0],
                         placeholder="Type a sentence; write [MASK] to hide a word")
    ui.pair = gr.Textbox(label="Sentence B (optional)", lines=1, elem_id="text-b")
    with gr.Row():
        ui.run_btn = gr.Button("Run", variant="primary", elem_id="run", scale=2)
        ui.top_k = gr.Slider(1, 20, value=5, step=1, label="Top-k predictions", scale=3)
    ui.message = gr.Markdown("", elem_id="message")
    with gr.Accordion("Mask tokens (pick from the analysed input)", open=True, elem_id="mask-box"):  # by the input
        ui.picker = gr.CheckboxGroup(choices=[], label="Tokens", elem_id="token-picker")
        ui.mask_btn = gr.Button("Mask selected and predict", elem_id="mask-btn")
    with gr.Row():
        ui.layer = gr.Slider(1, lab.n_layers, value=1, step=1, label="Layer", elem_id="layer")
        ui.head = gr.Slider(1, lab.n_heads, value=1, step=1, label="Head", elem_id="head")
    ui.pair_filter = gr.Radio(list(PAIR_FILTERS), value="all", label="Sentence-pair filter", elem_id="pair-filter")
    with gr.Row():
        ui.hide = gr.Checkbox(label="Hide [CLS]/[SEP] (rows renormalised)", value=False, elem_id="hide")
        ui.word = gr.Checkbox(label="Word level (merge word pieces)", value=False, elem_id="word")
    ui.source = gr.Radio([(source.label, name) for name, source in SOURCES.items()], value="attention",
                         label="What the colours show", info=SOURCE_INFO, elem_id="source")
    ui.source_about = gr.Markdown(source_about("attention"), elem_id="source-about", elem_classes=["bvl-note"])
    ui.scale = gr.Radio(list(SCALES.items()), value="fixed", label="Colour scale of attention maps",
                        info="fixed: 0 to 1 for every head, so heads compare; per head: each head to its own largest "
                             "weight, so faint patterns show", elem_id="scale")
    ui.notes = gr.Markdown("", elem_classes=["bvl-note"], elem_id="notes")
    ui.examples = gr.Examples(EXAMPLES, inputs=[ui.text, ui.pair], cache_examples=False, label="Examples (click to run)")
    build_model_box(ui, lab, allowed)


def build_view_tabs(ui: SimpleNamespace, lab: Lab) -> None:
    with gr.Tab(TAB_IDS["single"], id="single", elem_id="tab-single"):
        ui.single_plot = gr.HTML('<div class="bvl-heatmap"></div><div class="bvl-caption bvl-note"></div>',
                                 elem_id="single-plot", js_on_load=None)
        with gr.Accordion("Parts of this head's scores (MPNet's relative bias, DeBERTa's c2c / c2p / p2c)", open=False):
            ui.parts_btn = gr.Button("Show the parts of the chosen head's scores", elem_id="parts-btn")
            ui.parts_message = gr.Markdown(PARTS_HINT, elem_id="parts-message", elem_classes=["bvl-note"])
            ui.parts_plot = gr.Plot(label="Score parts", elem_id="parts-plot", elem_classes=ON_USE)
    with gr.Tab(TAB_IDS["headview"], id="headview", elem_id="tab-headview"):
        ui.headview_plot = gr.HTML('<div class="bvl-headview"></div>', elem_id="headview-plot", js_on_load=None)
        with gr.Accordion("Neuron view: query and key vectors of one head (BertViz's third view)", open=False):
            ui.neuron_btn = gr.Button("Show the neuron view of the last analysis", elem_id="neuron-btn")
            ui.neuron_html = gr.HTML("", elem_id="neuron-view")
        with gr.Accordion("Query–key space of the chosen head, and how alike the heads attend (AttentionViz)",
                          open=False):
            with gr.Row():
                ui.qk_set = gr.Radio([(label, key) for key, label in QK_SETS.items()], value="input",
                                     label="Sentences", elem_id="qk-set")
                ui.qk_color = gr.Radio([(label, key) for key, label in COLOURINGS.items()], value="position",
                                       label="Colour by", elem_id="qk-color")
                ui.qk_method = gr.Radio([("PCA", "pca"), ("UMAP", "umap")], value="pca", label="2-D embedding",
                                        elem_id="qk-method", visible=importlib.util.find_spec("umap") is not None)
            with gr.Row():
                ui.qk_btn = gr.Button("Show the query–key space (head from the sliders)", elem_id="qk-btn")
                ui.qk_sim_btn = gr.Button("How alike do the heads attend?", elem_id="qk-sim-btn")
            ui.qk_message = gr.Markdown(QK_HINT, elem_id="qk-message", elem_classes=["bvl-note"])
            ui.qk_plot = gr.Plot(label="Query–key space", elem_id="qk-plot", elem_classes=ON_USE)
            ui.qk_sim_plot = gr.Plot(label="Head similarity", elem_id="qk-similarity", elem_classes=ON_USE)
        with gr.Accordion("Find similar tokens in a treebank (exBERT: nearest neighbours by layer)", open=False):
            with gr.Row():
                ui.search_token = gr.Dropdown(choices=[], label="Token of the analysed input", elem_id="search-token",
                                              scale=2)
                ui.search_kind = gr.Radio([("hidden state after the layer", "embeddings"),
                                           ("heads' outputs (contexts)", "contexts")], value="embeddings",
                                          label="Compare", elem_id="search-kind", scale=2)
                ui.search_heads = gr.Radio(["all heads", "the chosen head"], value="all heads",
                                           label="Heads (contexts)", elem_id="search-heads", scale=1)
            ui.search_btn = gr.Button("Find similar tokens (layer from the Layer slider)", elem_id="search-btn")
            ui.search_message = gr.Markdown(SEARCH_HINT, elem_id="search-message", elem_classes=["bvl-note"])
            ui.search_table = gr.Dataframe(pd.DataFrame(columns=SEARCH_COLUMNS), interactive=False, wrap=True,
                                           column_widths=["10%", "19%", "16%", "10%", "15%", "30%"],  # fits 1024 px
                                           elem_id="search-table", elem_classes=ON_USE)
    with gr.Tab(TAB_IDS["overview"], id="overview", elem_id="tab-overview"):
        gr.Markdown("Click a thumbnail to open that head.")
        ui.overview_plot = gr.Plot(label="All layers and heads", elem_id="overview-plot")
    with gr.Tab(TAB_IDS["aggregates"], id="aggregates", elem_id="tab-aggregates"):
        ui.aggregates_plot = gr.Plot(label="Aggregates", elem_id="aggregates-plot")
    with gr.Tab(TAB_IDS["summary"], id="summary", elem_id="tab-summary"):
        ui.summary_plot = gr.Plot(label="Per-head statistics", elem_id="summary-plot")
    tab_label, explain_label = prediction_words(lab)
    with gr.Tab(tab_label, id="predictions", elem_id="tab-predictions") as ui.predictions_tab:
        ui.nsp_md = gr.Markdown("")
        ui.classes_plot = gr.Plot(label="Classes", elem_id="classes-plot", elem_classes=ON_USE)
        ui.pred_plot = gr.Plot(label="Predictions", elem_id="pred-plot", elem_classes=ON_USE)
        ui.lens_plot = gr.Plot(label="MLM lens", elem_id="lens-plot", elem_classes=ON_USE)
        with gr.Row():
            ui.explain_btn = gr.Button(explain_label, elem_id="explain-btn")
        ui.explain_message = gr.Markdown(EXPLAIN_HINT, elem_id="explain-message", elem_classes=["bvl-note"])
        ui.explain_plot = gr.Plot(label="Attribution", elem_id="explain-plot", elem_classes=ON_USE)
        ui.explain_table = gr.Dataframe(EXPLAIN_EMPTY, label=EXPLAIN_TABLE_LABEL,
                                        interactive=False, wrap=True, column_widths=EXPLAIN_WIDTHS,
                                        elem_id="explain-table", elem_classes=ON_USE)
        ui.pred_table = gr.Dataframe(pd.DataFrame(columns=views.PREDICTION_COLUMNS), label="Top-k predictions",
                                     interactive=False, wrap=True, elem_id="pred-table", elem_classes=ON_USE)


RECIPE_HINT = ("**Copy as recipe**: the settings a result was made with, as a JSON recipe. Save it as "
               "`recipe.json` and `bertviz-lab run recipe.json` runs the same experiment from the command line (add "
               "`--engine ray` for a cluster, `--out DIR` for an action that writes files).")


def build_export_tab(ui: SimpleNamespace) -> None:
    with gr.Tab(TAB_IDS["export"], id="export", elem_id="tab-export"):
        with gr.Row():
            ui.csv_btn = gr.Button("Export attention as CSV", elem_id="export-csv")
            ui.npz_btn = gr.Button("Export attention as .npz", elem_id="export-npz")
        ui.export_file = gr.File(label="Download", elem_id="export-file", elem_classes=ON_USE)  # shown with a file
        with gr.Row():
            ui.recipe_choice = gr.Dropdown([], value=None, label="Result", scale=3, elem_id="recipe-choice",
                                           info="each result the page made this visit, latest first")
            ui.recipe_btn = gr.Button("Copy as recipe", scale=1, elem_id="recipe-btn")
        ui.recipe_note = gr.Markdown(RECIPE_HINT, elem_id="recipe-note", elem_classes=["bvl-note"])
        ui.recipe_code = gr.Code("", language="json", label="Recipe", elem_id="recipe-code", elem_classes=ON_USE)
