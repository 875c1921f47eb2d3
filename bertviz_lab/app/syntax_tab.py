"""The Syntax tab's builder: treebank scoring (best head per relation, UUAS, two weights compared), one
sentence's arcs beside a head's strongest attention, and the structural probe beside attention trees."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from ..attention.sources import SOURCES
from ..figures.syntax import ANSWER_NOTE
from ..syntax.live_parser import INSTALL_HINT, parser_package
from .tabs import ARCS_INTRO, ON_USE, PER_HEAD_SOURCES, SYNTAX_HINT, TAB_IDS

PARSE_INTRO = ("**Your sentence's syntax.** An offline parser (spaCy's small English model, converted to UD heads) "
               "draws the typed sentence's dependency arcs beside the arcs of the head chosen with the Layer/Head "
               "sliders, and scores every head on them, in both of Clark et al.'s directions. They are a "
               "*parser's* arcs, not gold.")


def parse_hint() -> str:
    """What the parse section says before its first use: how to add the parser when it is missing."""
    if parser_package() is None:
        return f"⚠️ No offline parser is installed here: {INSTALL_HINT}."
    return "Press **Parse the sentence typed above**; the parse, its measured agreement with gold UD and every head's score appear here."

STRUCTURE_HINT = ("The probes shipped for the published MiniLM were trained on UD English EWT's train split; for "
                  "other weights, train them with `bertviz-lab structural-probe --train FILE`.")


def build_typed_sentence(ui: SimpleNamespace) -> None:
    """The typed sentence's own syntax: an offline parser's arcs beside a head's, and every head's agreement."""
    with gr.Row(equal_height=True):
        gr.Markdown(PARSE_INTRO, elem_id="syntax-parse-intro")
        ui.syntax_parse_btn = gr.Button("Parse the sentence typed above", elem_id="syntax-parse-btn", scale=0,
                                        min_width=240)
    ui.syntax_parse_message = gr.Markdown(parse_hint(), elem_id="syntax-parse-message")
    with gr.Row():
        ui.syntax_parse_arcs = gr.Plot(label="The parser's arcs and the chosen head's", elem_id="syntax-parse-arcs",
                                       elem_classes=ON_USE, scale=3)
        ui.syntax_parse_agreement = gr.Plot(label="Every head's agreement with the parse",
                                            elem_id="syntax-parse-agreement", elem_classes=ON_USE, scale=2)


def build_syntax_tab(ui: SimpleNamespace) -> None:
    with gr.Tab(TAB_IDS["syntax"], id="syntax", elem_id="tab-syntax"):
        gr.Markdown("Which heads track syntax? Each head is scored per dependency relation: the share of "
                    "arcs where a word's most-attended other word is its gold head (dep->head), or where the "
                    "word that attends most to it is its gold head (head->dep), at word level (Clark et al. "
                    "2019). Heads are layer-head, 1-based.")
        build_typed_sentence(ui)
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
        gr.Markdown(ANSWER_NOTE, elem_classes=["bvl-note"], elem_id="syntax-table-note")
        ui.syntax_csv = gr.File(label="The full table: every column (CSV)", elem_id="syntax-csv", elem_classes=ON_USE,
                                interactive=False)
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
        with gr.Row():
            ui.structure_masking = gr.Checkbox(label="Also Perturbed Masking's trees (no probe: Wu et al. 2020; "
                                                     "slower, one forward pass per pair of words)", value=False,
                                               elem_id="structure-masking")
            ui.structure_btn = gr.Button("Compare the structural probe with attention trees", elem_id="structure-btn")
        ui.structure_message = gr.Markdown(STRUCTURE_HINT, elem_id="structure-message")
        ui.structure_plot = gr.Plot(label="Structural probe vs attention trees (UUAS per layer)",
                                    elem_id="structure-plot", elem_classes=ON_USE)
