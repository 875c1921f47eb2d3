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
from ..figures import interventions as intervention_views
from ..figures.base import SCALES
from ..figures.qk import COLOURINGS
from ..interventions import REGISTRY
from ..interventions.kinds import applicable_kinds
from ..lab import Lab
from .intervention_controls import explanation, visible_controls
from .qk_handlers import PARTS_HINT, QK_HINT, QK_SETS
from .search_handlers import SEARCH_COLUMNS, SEARCH_HINT
from .state import Limits, Session, status_line, weights_note

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
TAB_ALIASES = {"probes": "interventions"}  # old tab ids API callers may still send (until the next release)
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
    with gr.Accordion("Mask tokens (pick from the analysed input)", open=True):
        ui.picker = gr.CheckboxGroup(choices=[], label="Tokens", elem_id="token-picker")
        ui.mask_btn = gr.Button("Mask selected and predict", elem_id="mask-btn")
    ui.examples = gr.Examples(EXAMPLES, inputs=[ui.text, ui.pair], cache_examples=False, label="Examples (click to run)")
    build_model_box(ui, lab, allowed)


def build_view_tabs(ui: SimpleNamespace) -> None:
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
    with gr.Tab(TAB_IDS["predictions"], id="predictions", elem_id="tab-predictions"):
        ui.nsp_md = gr.Markdown("")
        ui.classes_plot = gr.Plot(label="Classes", elem_id="classes-plot", elem_classes=ON_USE)
        ui.pred_plot = gr.Plot(label="Predictions", elem_id="pred-plot", elem_classes=ON_USE)
        ui.lens_plot = gr.Plot(label="MLM lens", elem_id="lens-plot", elem_classes=ON_USE)
        with gr.Row():
            ui.explain_btn = gr.Button("Why this word? Attribute the prediction to the context",
                                       elem_id="explain-btn")
        ui.explain_message = gr.Markdown(EXPLAIN_HINT, elem_id="explain-message", elem_classes=["bvl-note"])
        ui.explain_plot = gr.Plot(label="Attribution", elem_id="explain-plot", elem_classes=ON_USE)
        ui.explain_table = gr.Dataframe(EXPLAIN_EMPTY, label=EXPLAIN_TABLE_LABEL,
                                        interactive=False, wrap=True, column_widths=EXPLAIN_WIDTHS,
                                        elem_id="explain-table", elem_classes=ON_USE)
        ui.pred_table = gr.Dataframe(pd.DataFrame(columns=views.PREDICTION_COLUMNS), label="Top-k predictions",
                                     interactive=False, wrap=True, elem_id="pred-table", elem_classes=ON_USE)


def intervention_choices(lab: Lab) -> list[tuple[str, str]]:
    """(label, kind) of the interventions that apply to the loaded model's position schemes."""
    return [(REGISTRY[kind].label, kind) for kind in applicable_kinds(lab.model)]


def build_intervention_controls(ui: SimpleNamespace, lab: Lab) -> dict[str, bool]:
    """The intervention picker (what applies to ``lab``'s positions), its own controls (only those the chosen
    kind reads are shown) and its buttons; returns what is shown, for the sentence-set buttons further down."""
    first = "left-only"
    shown = visible_controls(first)
    with gr.Row():
        ui.intervention_kind = gr.Dropdown(intervention_choices(lab), value=first,
                                           label="Intervention", elem_id="intervention-kind", scale=2)
        ui.intervention_explain = gr.Markdown(explanation(first), elem_id="intervention-explain",
                                              elem_classes=["bvl-note"])
    with gr.Row():
        ui.intervention_heads = gr.Textbox(label="Heads to ablate (layer-head, 1-based)", value="1-1",
                                           placeholder="e.g. 3-5, 6-1", visible=shown["intervention_heads"],
                                           elem_id="intervention-heads", info="comma-separated, e.g. 3-5, 6-1")
        ui.intervention_shift = gr.Number(label="Shift k", value=5, precision=0, visible=shown["intervention_shift"],
                                          elem_id="intervention-shift", info="added to every position id")
        ui.intervention_seed = gr.Number(label="Random seed", value=0, precision=0, visible=shown["intervention_seed"],
                                         elem_id="intervention-seed", info="picks the random order, keys or vectors")
        ui.intervention_sinks = gr.Radio([("symmetric: every query sees [CLS]/[SEP]", "symmetric"),
                                          ("strict triangular masks", "strict")], value="symmetric",
                                         label="Directional masks", elem_id="intervention-sinks",
                                         visible=shown["intervention_sinks"],
                                         info="strict: the plain triangular mask, so the two directions keep "
                                              "different attention sinks")
        ui.intervention_unit = gr.Radio(["words", "tokens"], value="words", label="Shuffle unit",
                                        elem_id="intervention-unit", visible=shown["intervention_unit"],
                                        info="shuffling tokens with positions kept = shuffling positions: "
                                             "self-attention is permutation-equivariant")
        ui.intervention_ablation = gr.Radio(["zero", "mean", "resample"], value="zero", label="Ablation",
                                            elem_id="intervention-ablation", visible=shown["intervention_ablation"],
                                            info="mean: the head's mean output over the sample treebank; resample: "
                                                 "its output on a sample sentence at least as long, position by "
                                                 "position")
    with gr.Row():
        ui.intervention_btn = gr.Button("Run the intervention", variant="primary", elem_id="intervention-btn")
        ui.direction_btn = gr.Button("Directional sweep over masked positions", elem_id="direction-btn",
                                     visible=shown["direction_btn"])
        ui.ablation_btn = gr.Button("Head ablation sweep", elem_id="ablation-btn", visible=shown["ablation_btn"])
        ui.positions_table_btn = gr.Button("Positional interventions and their controls side by side",
                                           elem_id="positions-table-btn", visible=shown["positions_table_btn"])
    return shown


def result_title(ui: SimpleNamespace, name: str) -> None:
    """The title of one result's own place: what produced it (intervention, input, settings), then what
    it found; empty (and hidden by the page's CSS) until that button answers, emptied when its input changes."""
    setattr(ui, name, gr.Markdown("", elem_id=name.replace("_", "-"), elem_classes=["bvl-result-title"]))


def build_interventions_tab(ui: SimpleNamespace, lab: Lab, limits: Limits) -> None:
    with gr.Tab(TAB_IDS["interventions"], id="interventions", elem_id="tab-interventions"):
        gr.Markdown("Run the last analysed input twice — baseline and intervened — and compare. Each button's result "
                    "appears in its own place below it, titled with what produced it; a new Run clears them.")
        shown = build_intervention_controls(ui, lab)
        ui.intervention_message = gr.Markdown(INTERVENTION_HINT, elem_id="intervention-message",
                                              elem_classes=["bvl-result-title"])
        ui.intervention_plot = gr.Plot(label="Baseline, intervened and difference", elem_id="intervention-plot",
                                       elem_classes=ON_USE)
        ui.intervention_changes = gr.Dataframe(pd.DataFrame(columns=intervention_views.CHANGE_COLUMNS),
                                               interactive=False, label="Masked-word predictions: baseline vs intervened",
                                               wrap=True, column_widths=["10%", "12%", "13%", "13%", "13%", "11%", "14%",
                                                                         "14%"],  # the whole table at 1024 px
                                               elem_id="intervention-changes", elem_classes=ON_USE)
        ui.js_plot = gr.Plot(label="Per-head divergence", elem_id="js-plot", elem_classes=ON_USE)
        ui.offsets_plot = gr.Plot(label="Attention by relative offset", elem_id="offsets-plot", elem_classes=ON_USE)
        result_title(ui, "direction_message")
        ui.direction_table = gr.Dataframe(intervention_views.directional_table([]), label="Directional context",
                                          interactive=False, wrap=True, elem_id="direction-table", elem_classes=ON_USE)
        result_title(ui, "ablation_message")
        ui.ablation_plot = gr.Plot(label="Head importance", elem_id="ablation-plot", elem_classes=ON_USE)
        result_title(ui, "controls_message")
        ui.controls_table = gr.Dataframe(label="Positional interventions and their controls", interactive=False,
                                         wrap=True, elem_id="controls-table", elem_classes=ON_USE)
        build_sets_box(ui, limits, shown)
        with gr.Accordion("Activation patching (minimal pairs)", open=False):
            with gr.Row():
                ui.patch_donor = gr.Textbox(label="Donor sentence (same number of tokens, [MASK] in place)",
                                            value="The key to the cabinet [MASK] on the table.", scale=3,
                                            elem_id="patch-donor")
                ui.patch_correct = gr.Textbox(label="Correct word", value="are", scale=1)
                ui.patch_wrong = gr.Textbox(label="Wrong word", value="is", scale=1)
                ui.patch_btn = gr.Button("Patch every head from the donor", elem_id="patch-btn", scale=1)
            result_title(ui, "patch_message")
            ui.patch_plot = gr.Plot(label="Change in logit difference per head", elem_id="patch-plot", elem_classes=ON_USE)
        with gr.Accordion("Position embedding inspector", open=False):
            with gr.Row():
                ui.positions_n = gr.Slider(2, lab.max_tokens, value=64, step=1, label="First N positions")
                ui.positions_btn = gr.Button("Show position similarity", elem_id="positions-btn")
            result_title(ui, "positions_message")
            ui.positions_plot = gr.Plot(label="Position embeddings", elem_id="positions-plot", elem_classes=ON_USE)
        build_faithfulness_box(ui, limits)


def build_sets_box(ui: SimpleNamespace, limits: Limits, shown: dict[str, bool]) -> None:
    """Sweeps over a sentence set, each button's result in its own place inside the box."""
    with gr.Accordion("Over a set of sentences, with 95% intervals (one seeded masked word each)", open=False):
        with gr.Row():
            ui.sentence_set = gr.Radio([("held-out lines (shipped)", "heldout"), ("sample treebank", "sample"),
                                        ("my text file (one sentence per line)", "upload")], value="heldout",
                                       label="Sentence set", elem_id="sentence-set")
            ui.set_upload = gr.File(label="Text file (up to 2 MB)", file_types=[".txt"], type="filepath",
                                    elem_id="set-upload")
            most = min(300, limits.set_sentences)  # a public server's cap (state.Limits)
            low = min(20, max(1, most // 2))
            ui.set_n = gr.Slider(low, most, value=min(100, most), step=low,
                                 label="At most this many sentences", elem_id="set-n")
        with gr.Row():
            ui.direction_set_btn = gr.Button("Directional sweep", elem_id="direction-set-btn",
                                             visible=shown["direction_set_btn"])
            ui.ablation_set_btn = gr.Button("Head ablation sweep", elem_id="ablation-set-btn",
                                            visible=shown["ablation_set_btn"])
            ui.intervention_set_btn = gr.Button("The intervention chosen above", elem_id="intervention-set-btn")
        result_title(ui, "direction_set_message")
        ui.direction_set_table = gr.Dataframe(label="Directional context over the set", interactive=False,
                                              wrap=True, elem_id="direction-set-table", elem_classes=ON_USE)
        result_title(ui, "ablation_set_message")
        ui.ablation_set_plot = gr.Plot(label="Head importance over the set", elem_id="ablation-set-plot",
                                       elem_classes=ON_USE)
        result_title(ui, "intervention_set_message")
        ui.intervention_set_table = gr.Dataframe(label="The chosen intervention over the set", interactive=False,
                                                 wrap=True, elem_id="intervention-set-table", elem_classes=ON_USE)


def build_faithfulness_box(ui: SimpleNamespace, limits: Limits) -> None:
    """Which explanation to trust: AOPC and ERASER scores of every source over held-out sentences."""
    with gr.Accordion("Which explanation to trust? (faithfulness check)", open=False):
        gr.Markdown("For held-out sentences with one masked word, each source ranks the context tokens; hiding "
                    "its top 1-5 tokens from attention should hurt the prediction if the source is faithful. "
                    f"Higher AOPC = more faithful: {AOPC_UNIT}; *random* is the control. ERASER's "
                    f"comprehensiveness (hide the top 1-50 %: higher = more faithful) and sufficiency (keep only "
                    f"them: lower = more faithful) score the model's own top word: {ERASER_UNIT}.")
        with gr.Row():
            most = min(100, limits.faith_sentences)
            low = min(10, max(1, most // 2))
            ui.faith_n = gr.Slider(low, most, value=min(40, most), step=low,
                                   label="Held-out sentences")
            ui.faith_btn = gr.Button("Run the faithfulness check", elem_id="faith-btn")
        result_title(ui, "faith_message")
        ui.faith_table = gr.Dataframe(label="AOPC, ERASER comprehensiveness and sufficiency per ranking (95% "
                                            "bootstrap intervals)", interactive=False, wrap=True,
                                      elem_id="faith-table", elem_classes=ON_USE)


STRUCTURE_HINT = ("The probes shipped for the published MiniLM were trained on UD English EWT's train split; for "
                  "other weights, train them with `bertviz-lab structural-probe --train FILE`.")


def build_syntax_tab(ui: SimpleNamespace) -> None:
    with gr.Tab(TAB_IDS["syntax"], id="syntax", elem_id="tab-syntax"):
        gr.Markdown("Which heads track syntax? Each head is scored per dependency relation: the share of "
                    "arcs where a word's most-attended other word is its gold head (dep->head), or where the "
                    "word that attends most to it is its gold head (head->dep), at word level (Clark et al. "
                    "2019). Heads are layer-head, 1-based.")
        ui.syntax_weights = gr.Markdown("", elem_id="syntax-weights")
        with gr.Row():
            ui.syntax_treebank = gr.Radio([("sample treebank (66 English sentences)", "sample"),
                                           ("my CoNLL-U file", "upload")], value="sample", label="Treebank",
                                          elem_id="syntax-treebank")
            ui.syntax_upload = gr.File(label="CoNLL-U file (up to 2 MB and 10,000 words; the CLI takes any size)",
                                       file_types=[".conllu", ".txt"], type="filepath", elem_id="syntax-upload")
            with gr.Column():
                ui.syntax_use_loaded = gr.Checkbox(label="Score the loaded model's weights (not the published ones)",
                                                   value=False, elem_id="syntax-use-loaded")
                ui.syntax_compare = gr.Checkbox(label="Also score the other weights and show the difference",
                                                value=False, elem_id="syntax-compare")
                ui.syntax_score_source = gr.Radio([(SOURCES[name].label, name) for name in PER_HEAD_SOURCES],
                                                  value="attention", label="Score heads on (attention source)",
                                                  elem_id="syntax-score-source")
                ui.syntax_btn = gr.Button("Score every head on the treebank", variant="primary", elem_id="syntax-btn")
        ui.syntax_message = gr.Markdown(SYNTAX_HINT, elem_id="syntax-message")
        ui.syntax_table = gr.Dataframe(label="Best head per relation", interactive=False, wrap=True,
                                       elem_id="syntax-table", elem_classes=ON_USE)
        ui.syntax_bars = gr.Plot(label="Best head vs baseline and null model", elem_id="syntax-bars", elem_classes=ON_USE)
        with gr.Row():
            ui.syntax_relation = gr.Dropdown(choices=[], label="Relation", elem_id="syntax-relation", visible=False)
            ui.syntax_direction = gr.Radio(["dep->head", "head->dep"], value="dep->head", label="Direction",
                                           elem_id="syntax-direction", visible=False)
        ui.syntax_plot = gr.Plot(label="Accuracy per head", elem_id="syntax-plot", elem_classes=ON_USE)
        ui.syntax_diff = gr.Plot(label="Difference between the two weights (B - A)", elem_id="syntax-diff", elem_classes=ON_USE)
        ui.syntax_uuas = gr.Plot(label="Tree decoding (UUAS per head)", elem_id="syntax-uuas", elem_classes=ON_USE)
        ui.syntax_arcs_intro = gr.Markdown(ARCS_INTRO, visible=False, elem_id="syntax-arcs-intro")
        with gr.Row():
            ui.syntax_sentence = gr.Dropdown(choices=[], label="Sentence", elem_id="syntax-sentence", scale=4,
                                             visible=False)
            ui.syntax_arcs_btn = gr.Button("Show arcs for the chosen head", elem_id="syntax-arcs-btn", scale=1,
                                           visible=False)
        ui.syntax_arcs_text = gr.Markdown("", elem_id="syntax-arcs-text")
        ui.syntax_arcs = gr.Plot(label="Arcs", elem_id="syntax-arcs", elem_classes=ON_USE)
        gr.Markdown("**Does the model encode syntax?** A structural probe reads trees from each layer's word "
                    "vectors (Hewitt & Manning 2019); beside it, trees decoded from each layer's best head and from "
                    "its best ensemble of up to 4 heads (Limisiewicz et al. 2020), and right-branching, on the same "
                    "held-out half of the treebank chosen above.")
        ui.structure_btn = gr.Button("Compare the structural probe with attention trees", elem_id="structure-btn")
        ui.structure_message = gr.Markdown(STRUCTURE_HINT, elem_id="structure-message")
        ui.structure_plot = gr.Plot(label="Structural probe vs attention trees (UUAS per layer)",
                                    elem_id="structure-plot", elem_classes=ON_USE)


def build_export_tab(ui: SimpleNamespace) -> None:
    with gr.Tab(TAB_IDS["export"], id="export", elem_id="tab-export"):
        with gr.Row():
            ui.csv_btn = gr.Button("Export attention as CSV", elem_id="export-csv")
            ui.npz_btn = gr.Button("Export attention as .npz", elem_id="export-npz")
        ui.export_file = gr.File(label="Download", elem_id="export-file")
