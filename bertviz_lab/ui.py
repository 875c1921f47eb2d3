"""Gradio Blocks wiring. No numerics here: every handler calls the library (analysis, views).

Per-browser-session data (the current Analysis, the chosen model) lives in ``gr.State``;
the only shared object is the cache of loaded, read-only models.
"""
from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
from gradio.components.plot import PlotData

from . import plots, probe_views, syntax_views, views
from .syntax import SAMPLE_TREEBANK, TreebankError, probe_treebank, read_conllu, sentence_word_attention
from .interventions import PROBES, Probe, ProbeError, parse_heads
from .probing import ablation_sweep, compare, directional_sweep, position_similarity
from .analysis import Analysis, InputError, Lab, load
from .checkpoints import DEFAULT_SOURCE, ORIGINAL_SOURCE, CheckpointError
from .devices import DeviceError, available_devices
from .metrics import PAIR_FILTERS

STATIC = Path(__file__).resolve().parent / "static"
EXAMPLES = [
    ["The cat sat on the mat because it was tired.", ""],
    ["The doctor said that [MASK] would see the patient tomorrow.", ""],
    ["Paris is the [MASK] of France.", ""],
    ["The man went to the store.", "He bought a gallon of milk."],
    ["The bank raised the interest rate, and the river bank flooded.", ""],
]
PROBE_LABELS = {
    "mask-tokens": "Mask the picked tokens ([MASK])", "hide-keys": "Hide the picked tokens from attention (keys)",
    "left-only": "Left context only (every layer)", "right-only": "Right context only (every layer)",
    "ablate-heads": "Ablate heads (zero their output)", "zero-positions": "Zero the position embeddings",
    "shuffle-positions": "Shuffle position ids (tokens kept)", "shuffle-words": "Shuffle the words (positions kept)",
    "shift-positions": "Shift all position ids by k", "sinusoidal-positions": "Sinusoidal instead of learned positions",
}
MAX_UPLOAD_BYTES = 2_000_000
CSS = """
#status {font-size: 0.9em; color: #444}
#message p {margin: 0.2em 0}
.bvl-note {color: #555; font-size: 0.9em}
"""


class LabCache:
    """Loaded models keyed by (source, device), loaded once and shared read-only."""

    def __init__(self, allowed: list[str] | None, allow_any: bool) -> None:
        self.allowed = allowed or [DEFAULT_SOURCE]
        self.allow_any = allow_any
        self._labs: dict[tuple[str, str], Lab] = {}
        self._lock = threading.Lock()

    def add(self, lab: Lab, device: str) -> tuple[str, str]:
        key = (lab.source, device)
        self._labs[key] = lab
        return key

    def get(self, source: str, device: str) -> Lab:
        source = (source or DEFAULT_SOURCE).strip()
        if not self.allow_any and source not in self.allowed:
            raise CheckpointError(f"model {source!r} is not enabled on this server; "
                                  f"choose one of: {', '.join(self.allowed)}")
        key = (source, device)
        with self._lock:
            if key not in self._labs:
                self._labs[key] = load(source, device=device)
            return self._labs[key]


@dataclass
class Session:
    model: str = DEFAULT_SOURCE
    device: str = "cpu"
    analysis: Analysis | None = None
    options: views.ViewOptions = field(default_factory=views.ViewOptions)
    comparison: Any = None  # probing.Comparison of the last probe
    syntax: Any = None  # syntax.ProbeResult of the last treebank probe
    treebank: list = field(default_factory=list)  # its sentences


def plot(fig: plots.Figure) -> PlotData:
    return PlotData(type="plotly", plot=plots.to_json(fig))


def status_line(lab: Lab) -> str:
    head = "MLM head: yes" if lab.model.has_mlm_head else "no MLM head (no masked-word predictions)"
    line = (f"**Model:** {lab.name} · {lab.n_layers} layers × {lab.n_heads} heads · {head} · "
            f"**device:** {lab.device}")
    if lab.checkpoint.mlm_head_source:
        line += ("\n\n**Which weights the attention comes from:** this is bertviz-lab's masked-word version of "
                 "MiniLM (see assets/minilm-mlm/MODEL_CARD.md); the fine-tuned layers differ from the published "
                 "all-MiniLM-L6-v2. Choose `minilm-original` under *Model and device* for the published weights "
                 "exactly (attention only, no predictions).")
    return line


def build_demo(lab: Lab | None = None, allowed_models: list[str] | None = None, allow_any_model: bool = False,
               device: str | None = None) -> gr.Blocks:
    lab = lab or load(DEFAULT_SOURCE, device=device or "auto")
    device = str(lab.device)
    cache = LabCache(sorted(set((allowed_models or []) + [lab.source, DEFAULT_SOURCE, ORIGINAL_SOURCE])),
                     allow_any_model)
    cache.add(lab, device)
    devices = available_devices()
    spacy_ok = syntax_views.spacy_model_name() is not None

    def lab_of(session: Session) -> Lab:
        return cache.get(session.model, session.device)

    # ---------- handlers (thin: call the library, shape the outputs) ----------
    def render_all(session: Session, message: str):
        a, o = session.analysis, session.options
        lab_now = lab_of(session)
        single, notes = views.single_head(a, o)
        pred_fig, table, nsp_text = views.predictions(a)
        return (
            session, message, gr.update(choices=views.token_choices(a), value=[]),
            gr.update(maximum=lab_now.n_layers, value=o.layer + 1),
            gr.update(maximum=lab_now.n_heads, value=o.head + 1),
            gr.update(choices=[("all tokens", -1)] + views.head_view_choices(a, o), value=-1),
            plot(single), plot(views.overview(a)), plot(views.head_view(a, o)), plot(views.aggregates(a, o)),
            plot(views.summary(a)), plot(pred_fig), table, nsp_text, notes_text(notes),
        )

    def failure(session: Session, error: Exception):
        return (session, f"⚠️ {error}") + (gr.update(),) * 13

    def run(text: str, pair: str, top_k: float, session: Session, mask_positions: list[int] | None = None):
        try:
            lab_now = lab_of(session)
            a = lab_now.analyze(text, pair=pair or None, top_k=int(top_k), truncate=True,
                                mask_positions=mask_positions or ())
        except (InputError, CheckpointError, DeviceError) as error:
            return failure(session, error)
        session.analysis = a
        session.options.head_view_token = None
        message = f"{len(a.tokens)} tokens."
        if a.truncated:
            message = (f"⚠️ The input was {a.n_tokens_before_truncation} tokens long; the model takes at most "
                       f"{len(a.tokens)}, so it was truncated to {len(a.tokens)} tokens.")
        return render_all(session, message)

    def mask(text: str, pair: str, top_k: float, positions: list[int], session: Session):
        if not positions:
            return failure(session, InputError("choose one or more tokens to mask first"))
        return run(text, pair, top_k, session, mask_positions=[int(p) for p in positions])

    def rerender(layer: float, head: float, hide: bool, word: bool, pair_filter: str, hv_token: int | None,
                 session: Session):
        a = session.analysis
        if a is None:
            return (session,) + (gr.update(),) * 6
        o = session.options
        o.layer, o.head = int(layer) - 1, int(head) - 1
        o.hide_special, o.word_level, o.pair_filter = bool(hide), bool(word), pair_filter or "all"
        o.head_view_token = None if hv_token in (None, -1) else int(hv_token)
        single, notes = views.single_head(a, o)
        probe_plot = probe_offsets = gr.update()
        c = session.comparison
        if c is not None and c.baseline.tokens == a.tokens:
            probe_plot = plot(probe_views.comparison_figure(c, o))
            probe_offsets = plot(probe_views.offsets_figure(c, o.layer))
        return (session, plot(single), plot(views.head_view(a, o)), plot(views.aggregates(a, o)), notes_text(notes),
                probe_plot, probe_offsets)

    def toggles(layer, head, hide, word, pair_filter, session: Session):
        out = rerender(layer, head, hide, word, pair_filter, -1, session)
        if session.analysis is None:
            return out + (gr.update(),)
        choices = [("all tokens", -1)] + views.head_view_choices(session.analysis, session.options)
        return out + (gr.update(choices=choices, value=-1),)

    def pick(value: str, session: Session):
        try:
            layer, head = (int(v) for v in str(value).split(",")[:2])
        except ValueError:
            return gr.update(), gr.update(), gr.update()
        return gr.update(value=layer + 1), gr.update(value=head + 1), gr.Tabs(selected="single")

    def switch_model(source: str, device_name: str, session: Session, progress=gr.Progress()):
        progress(0.1, desc=f"loading {source or DEFAULT_SOURCE} on {device_name}")
        try:
            lab_new = cache.get(source or DEFAULT_SOURCE, device_name)
        except (CheckpointError, DeviceError) as error:
            return session, f"⚠️ Could not load the model: {error}", gr.update()
        session.model, session.device = lab_new.source, str(lab_new.device)
        session.analysis = None
        return session, f"Loaded {lab_new.name}. Press Run to analyse with it.", status_line(lab_new)

    def export(kind: str, session: Session):
        if session.analysis is None:
            return None, "⚠️ Run an analysis first, then export it."
        folder = Path(tempfile.mkdtemp(prefix="bertviz-lab-"))
        path = views.export_csv(session.analysis, folder) if kind == "csv" else views.export_npz(session.analysis, folder)
        return str(path), f"Exported {path.name}."

    def run_probe(text: str, pair: str, top_k: float, kind: str, picked: list[int], heads: str, shift: float,
                  seed: float, session: Session):
        try:
            lab_now = lab_of(session)
            picked = [int(p) for p in picked or []]
            probe = Probe(kind, positions=picked if kind in ("mask-tokens", "hide-keys") else [],
                          heads=parse_heads(heads, lab_now.n_layers, lab_now.n_heads) if kind == "ablate-heads" else [],
                          shift=int(shift or 0), seed=int(seed or 0))
            masks = [] if kind in ("mask-tokens", "hide-keys") else picked
            c = compare(lab_now, text, probe, pair=pair or None, mask_positions=masks, top_k=int(top_k))
        except (InputError, ProbeError, CheckpointError) as error:
            return session, f"⚠️ {error}", gr.update(), gr.update(), gr.update(), gr.update()
        session.comparison = c
        o = session.options.clamp(c.baseline)
        message = f"Probe: {probe.describe()}. Mean JS divergence over heads {float(c.js.mean()):.4f} nats."
        if c.note:
            message += f" ({c.note})"
        return (session, message, plot(probe_views.comparison_figure(c, o)), plot(probe_views.js_figure(c)),
                probe_views.changes_table(c), plot(probe_views.offsets_figure(c, o.layer)))

    def run_directional(text: str, pair: str, picked: list[int], session: Session):
        try:
            rows = directional_sweep(lab_of(session), text, pair=pair or None, mask_positions=[int(p) for p in picked or []])
        except (InputError, ProbeError) as error:
            return f"⚠️ {error}", gr.update()
        return f"Directional sweep over {len(rows)} masked position(s).", probe_views.directional_table(rows)

    def run_ablation(text: str, pair: str, picked: list[int], session: Session, progress=gr.Progress()):
        try:
            drops = ablation_sweep(lab_of(session), text, pair=pair or None, mask_positions=[int(p) for p in picked or []],
                                   chunk=24, progress=lambda f, d: progress(f, desc=d))
        except (InputError, ProbeError) as error:
            return f"⚠️ {error}", gr.update()
        l, h = np.unravel_index(int(np.argmax(drops)), drops.shape)
        return (f"Most important head for this prediction: layer {l + 1}, head {h + 1} "
                f"(log-probability drops by {drops[l, h]:.3f} without it)."), plot(probe_views.ablation_figure(drops))

    def run_positions(n: float, session: Session):
        try:
            learned, sinusoid = position_similarity(lab_of(session), int(n))
        except ProbeError as error:
            return f"⚠️ {error}", gr.update()
        return f"Cosine similarity of the first {int(n)} positions.", plot(probe_views.position_figure(learned, sinusoid))

    def run_syntax(source: str, upload: str | None, session: Session, progress=gr.Progress()):
        try:
            if source == "upload":
                if not upload:
                    raise TreebankError("upload a CoNLL-U file first")
                size = Path(upload).stat().st_size
                if size > MAX_UPLOAD_BYTES:
                    raise TreebankError(f"the file is {size / 1e6:.1f} MB; the app accepts up to "
                                        f"{MAX_UPLOAD_BYTES / 1e6:.0f} MB (use the command line for big treebanks)")
                path = Path(upload)
            else:
                path = SAMPLE_TREEBANK
            sentences = read_conllu(path)
            lab_now = lab_of(session)
            progress(0, desc="scoring heads")
            result = probe_treebank(lab_now, sentences, batch_size=32,
                                    progress=lambda done, total: progress(done / max(total, 1), desc="scoring heads"))
        except (TreebankError, CheckpointError) as error:
            return (session, f"⚠️ {error}") + (gr.update(),) * 4
        session.syntax, session.treebank = result, sentences
        relations = list(result.best_heads.relation)
        message = (f"Scored {result.sentences_used} sentences from {path.name}"
                   f"{f', skipped {result.sentences_skipped} as too long' if result.sentences_skipped else ''}.")
        choices = [(f"{i + 1}: {s.text[:80]}", i) for i, s in enumerate(sentences)]
        if spacy_ok:
            choices.insert(0, ("the sentence typed above (parsed by spaCy)", -1))
        return (session, message, syntax_views.best_heads_table(result),
                gr.update(choices=relations, value=relations[0]),
                plot(syntax_views.relation_heatmap(result, relations[0], "dep->head")),
                gr.update(choices=choices, value=0))

    def syntax_relation(relation: str, direction: str, session: Session):
        if session.syntax is None or not relation:
            return gr.update()
        try:
            return plot(syntax_views.relation_heatmap(session.syntax, relation, direction))
        except KeyError as error:
            return gr.update(value=None, label=str(error))

    def syntax_sentence(index: int | None, layer: float, head: float, session: Session, text: str = ""):
        if index == -1:  # the sentence typed above, parsed by spaCy
            sentence = syntax_views.spacy_parse(text) if text and text.strip() else None
            if sentence is None:
                return "⚠️ Type a sentence above (spaCy parses it).", gr.update()
        elif not session.treebank or index is None:
            return "⚠️ Run the syntax probe first, then choose a sentence.", gr.update()
        else:
            sentence = session.treebank[int(index)]
        lab_now = lab_of(session)
        words, _ = sentence_word_attention(lab_now, sentence)
        l = int(min(max(int(layer) - 1, 0), lab_now.n_layers - 1))
        h = int(min(max(int(head) - 1, 0), lab_now.n_heads - 1))
        fig, summary = syntax_views.arcs_figure(sentence, words, l, h)
        return summary, plot(fig)

    def attention_api(text: str, pair: str = "", top_k: int = 5) -> dict[str, Any]:
        """Attention (layers x heads x query x key), tokens and masked-word predictions as JSON."""
        return lab.analyze(text, pair=pair or None, top_k=int(top_k), truncate=True).to_json()

    # ---------- layout ----------
    with gr.Blocks(title="bertviz-lab", fill_width=True) as demo:
        session = gr.State(Session(model=lab.source, device=device))
        gr.Markdown("# bertviz-lab\nType a sentence (or a pair), press **Run**, and explore every layer and head "
                    "of BERT's attention and its masked-word predictions.")
        status = gr.Markdown(status_line(lab), elem_id="status")
        with gr.Accordion("Model and device", open=False):
            with gr.Row():
                model_box = gr.Dropdown(choices=cache.allowed, value=lab.source, label="Model",
                                        allow_custom_value=True,
                                        info="'default' = embedded MiniLM-L6; hub ids / folders the operator allows")
                device_box = gr.Dropdown(choices=devices, value=device if device in devices else devices[-1],
                                         label="Device")
                load_btn = gr.Button("Load model")
        with gr.Row():
            with gr.Column(scale=3):
                text = gr.Textbox(label="Sentence A", lines=2, elem_id="text-a",
                                  placeholder="Type a sentence; write [MASK] to hide a word")
                pair = gr.Textbox(label="Sentence B (optional)", lines=1, elem_id="text-b")
            with gr.Column(scale=1):
                top_k = gr.Slider(1, 20, value=5, step=1, label="Top-k predictions")
                run_btn = gr.Button("Run", variant="primary", elem_id="run")
        gr.Examples(EXAMPLES, inputs=[text, pair], cache_examples=False)
        message = gr.Markdown("", elem_id="message")
        with gr.Accordion("Mask tokens (pick from the tokenized input)", open=True):
            picker = gr.CheckboxGroup(choices=[], label="Tokens", elem_id="token-picker")
            mask_btn = gr.Button("Mask selected and predict", elem_id="mask-btn")
        with gr.Row():
            layer = gr.Slider(1, lab.n_layers, value=1, step=1, label="Layer", elem_id="layer")
            head = gr.Slider(1, lab.n_heads, value=1, step=1, label="Head", elem_id="head")
            pair_filter = gr.Radio(list(PAIR_FILTERS), value="all", label="Sentence-pair filter")
        with gr.Row():
            hide = gr.Checkbox(label="Hide [CLS]/[SEP] (rows renormalised)", value=False)
            word = gr.Checkbox(label="Word level (merge word pieces)", value=False)
        notes = gr.Markdown("", elem_classes=["bvl-note"], elem_id="notes")
        with gr.Tabs(selected="single") as tabs:
            with gr.Tab("Single head", id="single"):
                single_plot = gr.Plot(label="Attention of one head", elem_id="single-plot")
            with gr.Tab("Model overview", id="overview"):
                gr.Markdown("Click a thumbnail to open that head.")
                overview_plot = gr.Plot(label="All layers and heads", elem_id="overview-plot")
                overview_pick = gr.Textbox(visible="hidden", elem_id="overview-pick")
            with gr.Tab("Head view", id="headview"):
                hv_token = gr.Dropdown(choices=[("all tokens", -1)], value=-1, label="Only lines from token")
                headview_plot = gr.Plot(label="Head view", elem_id="headview-plot")
            with gr.Tab("Aggregates", id="aggregates"):
                aggregates_plot = gr.Plot(label="Aggregates", elem_id="aggregates-plot")
            with gr.Tab("Head summary", id="summary"):
                summary_plot = gr.Plot(label="Per-head statistics", elem_id="summary-plot")
            with gr.Tab("Masked words", id="predictions"):
                nsp_md = gr.Markdown("")
                pred_plot = gr.Plot(label="Predictions", elem_id="pred-plot")
                pred_table = gr.Dataframe(pd.DataFrame(columns=views.PREDICTION_COLUMNS), label="Top-k predictions",
                                          interactive=False, elem_id="pred-table")
            with gr.Tab("Probes", id="probes"):
                gr.Markdown("Run the input twice — baseline and probed — and compare. Tokens picked above are the "
                            "targets of *mask*/*hide* probes; for the other probes they are masked in both runs "
                            "(as are [MASK]s you typed), so their predictions can be compared.")
                with gr.Row():
                    probe_kind = gr.Dropdown([(PROBE_LABELS[k], k) for k in PROBES], value="left-only",
                                             label="Probe", elem_id="probe-kind")
                    probe_heads = gr.Textbox(label="Heads to ablate (layer-head, 1-based)", value="1-1",
                                             placeholder="e.g. 3-5, 6-1")
                    probe_shift = gr.Number(label="Shift k", value=5, precision=0)
                    probe_seed = gr.Number(label="Shuffle seed", value=0, precision=0)
                with gr.Row():
                    probe_btn = gr.Button("Run probe", variant="primary", elem_id="probe-btn")
                    direction_btn = gr.Button("Directional sweep over masked positions", elem_id="direction-btn")
                    ablation_btn = gr.Button("Head ablation sweep", elem_id="ablation-btn")
                probe_message = gr.Markdown("", elem_id="probe-message")
                probe_plot = gr.Plot(label="Baseline, probed and difference", elem_id="probe-plot")
                probe_changes = gr.Dataframe(pd.DataFrame(columns=probe_views.CHANGE_COLUMNS), interactive=False,
                                             label="Masked-word predictions: baseline vs probed",
                                             elem_id="probe-changes")
                js_plot = gr.Plot(label="Per-head divergence", elem_id="js-plot")
                offsets_plot = gr.Plot(label="Attention by relative offset", elem_id="offsets-plot")
                direction_table = gr.Dataframe(probe_views.directional_table([]), label="Directional context",
                                               interactive=False, elem_id="direction-table")
                ablation_plot = gr.Plot(label="Head importance", elem_id="ablation-plot")
                with gr.Accordion("Position embedding inspector", open=False):
                    with gr.Row():
                        positions_n = gr.Slider(2, lab.max_tokens, value=64, step=1, label="First N positions")
                        positions_btn = gr.Button("Show position similarity", elem_id="positions-btn")
                    positions_plot = gr.Plot(label="Position embeddings", elem_id="positions-plot")
            with gr.Tab("Syntax", id="syntax"):
                gr.Markdown("Which heads track syntax? Each head is scored per dependency relation: the share of "
                            "arcs where a word's most-attended other word is its gold head (dep->head) or "
                            "dependent (head->dep), at word level (Clark et al. 2019). Heads are layer-head, 1-based.")
                with gr.Row():
                    syntax_source = gr.Radio([("sample treebank (66 English sentences)", "sample"),
                                              ("my CoNLL-U file", "upload")], value="sample", label="Treebank")
                    syntax_upload = gr.File(label="CoNLL-U file (up to 2 MB)", file_types=[".conllu", ".txt"],
                                            type="filepath", elem_id="syntax-upload")
                    syntax_btn = gr.Button("Run syntax probe", variant="primary", elem_id="syntax-btn")
                syntax_message = gr.Markdown("", elem_id="syntax-message")
                syntax_table = gr.Dataframe(label="Best head per relation", interactive=False, elem_id="syntax-table")
                with gr.Row():
                    syntax_relation_box = gr.Dropdown(choices=[], label="Relation", elem_id="syntax-relation")
                    syntax_direction = gr.Radio(["dep->head", "head->dep"], value="dep->head", label="Direction")
                syntax_plot = gr.Plot(label="Accuracy per head", elem_id="syntax-plot")
                gr.Markdown("**One sentence:** gold arcs next to the strongest word-to-word attention of the head "
                            "chosen with the Layer/Head sliders above.")
                with gr.Row():
                    syntax_sentence_box = gr.Dropdown(choices=[], label="Sentence", elem_id="syntax-sentence", scale=4)
                    syntax_arcs_btn = gr.Button("Show arcs for the chosen head", elem_id="syntax-arcs-btn", scale=1)
                syntax_arcs_text = gr.Markdown("", elem_id="syntax-arcs-text")
                syntax_arcs = gr.Plot(label="Arcs", elem_id="syntax-arcs")
            with gr.Tab("Export", id="export"):
                with gr.Row():
                    csv_btn = gr.Button("Export attention as CSV", elem_id="export-csv")
                    npz_btn = gr.Button("Export attention as .npz", elem_id="export-npz")
                export_file = gr.File(label="Download", elem_id="export-file")
        gr.Markdown("Figures: use the camera icon for PNG and the disk icon for SVG. "
                    "API: every action is scriptable with `gradio_client` (see the README).",
                    elem_classes=["bvl-note"])

        run_outputs = [session, message, picker, layer, head, hv_token, single_plot, overview_plot, headview_plot,
                       aggregates_plot, summary_plot, pred_plot, pred_table, nsp_md, notes]
        view_outputs = [session, single_plot, headview_plot, aggregates_plot, notes, probe_plot, offsets_plot]
        run_btn.click(run, [text, pair, top_k, session], run_outputs, api_name="analyze")
        text.submit(run, [text, pair, top_k, session], run_outputs, api_name="analyze_submit")
        mask_btn.click(mask, [text, pair, top_k, picker, session], run_outputs, api_name="mask_tokens")
        view_inputs = [layer, head, hide, word, pair_filter, hv_token, session]
        layer.input(rerender, view_inputs, view_outputs, api_name="set_layer", show_progress="hidden",
                    trigger_mode="always_last")
        head.input(rerender, view_inputs, view_outputs, api_name="set_head", show_progress="hidden",
                   trigger_mode="always_last")
        hv_token.input(rerender, view_inputs, view_outputs, api_name="head_view_token")
        toggle_inputs = [layer, head, hide, word, pair_filter, session]
        for comp, name in ((hide, "hide_special"), (word, "word_level"), (pair_filter, "pair_filter")):
            comp.input(toggles, toggle_inputs, view_outputs + [hv_token], api_name=name)
        overview_pick.change(pick, [overview_pick, session], [layer, head, tabs], api_name="pick_head").then(
            rerender, view_inputs, view_outputs, api_name="pick_head_render")
        load_btn.click(switch_model, [model_box, device_box, session], [session, message, status],
                       api_name="load_model")
        csv_btn.click(lambda s: export("csv", s), [session], [export_file, message], api_name="export_csv")
        npz_btn.click(lambda s: export("npz", s), [session], [export_file, message], api_name="export_npz")
        probe_btn.click(run_probe, [text, pair, top_k, probe_kind, picker, probe_heads, probe_shift, probe_seed, session],
                        [session, probe_message, probe_plot, js_plot, probe_changes, offsets_plot], api_name="probe")
        direction_btn.click(run_directional, [text, pair, picker, session], [probe_message, direction_table],
                            api_name="directional_sweep")
        ablation_btn.click(run_ablation, [text, pair, picker, session], [probe_message, ablation_plot],
                           api_name="ablation_sweep")
        positions_btn.click(run_positions, [positions_n, session], [probe_message, positions_plot],
                            api_name="position_embeddings")
        syntax_btn.click(run_syntax, [syntax_source, syntax_upload, session],
                         [session, syntax_message, syntax_table, syntax_relation_box, syntax_plot, syntax_sentence_box],
                         api_name="syntax_probe")
        for comp, name in ((syntax_relation_box, "syntax_relation"), (syntax_direction, "syntax_direction")):
            comp.input(syntax_relation, [syntax_relation_box, syntax_direction, session], [syntax_plot], api_name=name)
        syntax_sentence_box.input(syntax_sentence, [syntax_sentence_box, layer, head, session, text],
                                  [syntax_arcs_text, syntax_arcs], api_name="syntax_sentence")
        syntax_arcs_btn.click(syntax_sentence, [syntax_sentence_box, layer, head, session, text],
                              [syntax_arcs_text, syntax_arcs], api_name="syntax_arcs")
        gr.api(attention_api, api_name="attention")
    demo.bvl_lab = lab  # for tests and the launcher
    return demo


def notes_text(notes: list[str]) -> str:
    return "\n".join(f"- {n}" for n in notes)


def launch_kwargs() -> dict[str, Any]:
    head = f"<script>{(STATIC / 'figure_tools.js').read_text()}</script>"
    return {"css": CSS, "head": head, "theme": gr.themes.Soft()}


def env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]
