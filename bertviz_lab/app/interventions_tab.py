"""The Interventions tab's builder: the intervention picker and its own controls, the buttons of one input's
interventions and sweeps, the sentence-set box and the faithfulness check, each result under its own title."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from ..figures import interventions as intervention_views
from ..interventions import REGISTRY
from ..interventions.kinds import applicable_kinds
from ..lab import Lab
from .intervention_controls import explanation, visible_controls
from .state import Limits
from .tabs import AOPC_UNIT, ERASER_UNIT, INTERVENTION_HINT, ON_USE, TAB_IDS

SINKS_INFO = ("symmetric: every query also sees [CLS] and [SEP], so the left-only and right-only masks differ only "
              "in the words they see; strict: the plain triangular masks, so the two directions also keep different "
              "attention sinks")


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
                                         info=SINKS_INFO)
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
        with gr.Row(equal_height=False):  # side by side when wide; stacked at 1024 px, where the table needs the width
            ui.direction_plot = gr.Plot(label="Directional context, as a chart", elem_id="direction-plot",
                                        elem_classes=ON_USE, scale=1, min_width=420)
            ui.direction_table = gr.Dataframe(intervention_views.directional_table([]), label="Directional context",
                                              interactive=False, wrap=True, elem_id="direction-table",
                                              elem_classes=ON_USE, scale=1, min_width=640)
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
        with gr.Accordion("Position inspector: what this model's positions look like", open=False):
            with gr.Row():
                ui.positions_n = gr.Slider(2, lab.max_tokens, value=64, step=1, label="First N positions")
                ui.positions_btn = gr.Button("Show the positions", elem_id="positions-btn")
            result_title(ui, "positions_message")
            ui.positions_plot = gr.Plot(label="Positions", elem_id="positions-plot", elem_classes=ON_USE)
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
