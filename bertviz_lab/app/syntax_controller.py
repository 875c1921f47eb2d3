"""The Syntax tab's controller: scoring a treebank with published
weights by default, the per-relation views, and one sentence's arcs."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import gradio as gr

from ..bert import CheckpointError, DeviceError
from ..figures import syntax as syntax_views
from ..figures.structure_figure import structure_figure
from ..lab import InputError, InputTooLong
from ..syntax.directions import CLARK_DIRECTIONS, normalize_direction
from ..syntax.live_parser import ParserUnavailable
from ..syntax.parser_agreement import agreement_note
from ..syntax.scoring import sentence_word_attention
from ..syntax.structure import StructureSettings
from ..syntax.summary import HELD_OUT_NOTE
from ..tasks.score_heads import ScoreHeadsRequest, read_sentences, score_heads
from ..tasks.sentence_syntax import SentenceSyntaxRequest, sentence_syntax
from ..tasks.structural_probes import StructureRequest, structure
from ..tasks.weights import other_weights, weights_for
from ..treebank import TreebankError
from .forms import TreebankChoice
from .page import Page
from .state import Limits, Session, plot


def treebank_request(choice: TreebankChoice, limits: Limits, loaded: str,
                     source: str = "attention") -> ScoreHeadsRequest:
    """The Syntax tab's choice as the task's request: the sample treebank or the upload (within the size limit),
    the published weights of the loaded model unless the person chose the loaded model itself."""
    if choice.treebank == "upload":
        if not choice.upload:
            raise TreebankError("upload a CoNLL-U file first")
        size = Path(choice.upload).stat().st_size
        if size > limits.upload_bytes:
            raise TreebankError(f"the file is {size / 1e6:.1f} MB; the app accepts up to "
                                f"{limits.upload_bytes / 1e6:.0f} MB (use the command line for big treebanks)")
    treebanks = (Path(choice.upload),) if choice.treebank == "upload" else ()
    return ScoreHeadsRequest(treebanks, (loaded,) if choice.use_loaded else (), loaded=loaded,
                             max_length=limits.max_tokens, max_words=limits.syntax_words, source=source,
                             shown_names=tuple(p.name for p in treebanks))  # never the server's cache path


class SyntaxController:
    def __init__(self, page: Page) -> None:
        self.page, self.ui = page, page.ui

    def run_syntax(self, treebank: str, upload: str | None, use_loaded: bool, compare: bool, session: Session,
                   score_source: str = "attention", progress=gr.Progress()) -> dict:
        """Every head scored on the treebank, on ``score_source`` (an unknown source is refused, never replaced)."""
        ui, choice = self.ui, TreebankChoice(treebank, upload, use_loaded)
        try:
            request = treebank_request(choice, self.page.limits, session.model, source=score_source)
            chosen = request.models[0]
            other = other_weights(chosen, session.model)
            if compare and other != chosen:
                request = replace(request, compare_checkpoint=other)
            scored = score_heads(request, lambda model: self.page.cache.get(model, session.device),
                                 progress=lambda f, what: progress(f, desc=what))
        except (TreebankError, CheckpointError, DeviceError, ValueError) as error:  # InputError is a ValueError
            return {ui.syntax_message: f"⚠️ {syntax_views.markdown_text(error)}"}
        self.remember(session, choice, chosen, score_source)
        run, sentences = scored.run, scored.sentences
        session.syntax, session.treebank, session.syntax_model = run, sentences, chosen
        summary = run.summary
        relations = list(summary.best_heads.relation)
        skipped = f", skipped {summary.sentences_skipped} as too long" if summary.sentences_skipped else ""
        if summary.sentences_skipped_empty_words:
            skipped += (f", skipped {summary.sentences_skipped_empty_words} with a word the tokenizer deletes "
                        f"({summary.words_without_pieces} such words, e.g. only zero-width or control characters)")
        choices = [(f"{i + 1}: {s.text[:80]}", i) for i, s in enumerate(sentences[:2000])]
        weights = (f"**Weights scored:** {syntax_views.markdown_text(summary.checkpoint.describe())}; heads scored "
                   f"on **{summary.source}**")
        if run.compare is not None:
            weights += f"  \n**Compared with (B):** {syntax_views.markdown_text(run.compare_name)}"
        return {ui.session: session, ui.syntax_weights: weights,
                ui.syntax_message: f"Scored {summary.sentences_used} sentences from "
                                   f"{syntax_views.markdown_text(scored.treebank)}{skipped}. "
                                   f"Relations with at least {summary.settings.min_arcs} arcs are listed. "
                                   f"{HELD_OUT_NOTE}",
                ui.syntax_table: syntax_views.relation_answers(summary.best_heads),
                ui.syntax_csv: self.full_table(summary, session),
                ui.syntax_bars: plot(syntax_views.best_heads_figure(summary)),
                ui.syntax_relation: gr.update(choices=relations, value=relations[0], visible=True),
                ui.syntax_direction: gr.update(visible=True), ui.syntax_arcs_intro: gr.update(visible=True),
                ui.syntax_arcs_btn: gr.update(visible=True),
                ui.syntax_plot: plot(syntax_views.relation_heatmap(summary, relations[0], "dep->head")),
                ui.syntax_uuas: plot(syntax_views.uuas_figure(summary)),
                ui.syntax_diff: self.difference_plot(session, relations[0], "dep->head"),
                ui.syntax_sentence: gr.update(choices=choices, value=0, visible=True)}

    def remember(self, session: Session, choice: TreebankChoice, chosen: str, source: str) -> None:
        """The scoring's recipe: the treebank (the upload or the sample) and the weights it scored (bertviz-lab run
        needs --out for its files)."""
        from ..tasks.recipes import made_with
        from ..treebank import SAMPLE_TREEBANK

        treebank = Path(choice.upload) if choice.treebank == "upload" and choice.upload else SAMPLE_TREEBANK
        weights = self.page.cache.get(chosen, session.device).checkpoint_info()
        recipe = made_with("score-heads", weights, {"conllu": [treebank]}, {"source": source,
                                                                            "max_length": self.page.limits.max_tokens})
        session.recipes.pop("the treebank scoring", None)
        session.recipes["the treebank scoring"] = recipe.to_json()

    def full_table(self, summary, session: Session) -> str:
        """Every column of the best-heads table (one row per relation), as a CSV the page offers for download."""
        folder = self.page.exports.new(session.key())
        try:
            path = folder / "best_heads_full.csv"
            summary.best_heads.to_csv(path, index=False, float_format="%.6f")
        finally:
            self.page.exports.settle(folder)
        return str(path)

    def run_structure_view(self, treebank: str, upload: str | None, use_loaded: bool, session: Session,
                           perturbed_masking: bool = False, progress=gr.Progress()) -> dict:
        """The structural probe shipped for these weights beside attention trees, on this treebank."""
        ui, choice = self.ui, TreebankChoice(treebank, upload, use_loaded)
        try:
            scoring = treebank_request(choice, self.page.limits, session.model)
            sentences, name = read_sentences(scoring)
            lab = self.page.cache.get(scoring.models[0], session.device)
            progress(0.1, desc="structural probe and attention trees")
            settings = StructureSettings(perturbed_masking=bool(perturbed_masking))
            result = structure(StructureRequest(sentences, names=("", name), settings=settings), lab,
                               progress=lambda message: progress(0.5, desc=message)).result
        except (TreebankError, CheckpointError, DeviceError, InputError) as error:
            return {ui.structure_message: f"⚠️ {syntax_views.markdown_text(error)}", ui.structure_plot: None}
        lines = "".join(f"\n- {syntax_views.markdown_text(line)}" for line in result.conclusions)
        n = result.sentences
        return {ui.structure_message: f"**Weights:** {syntax_views.markdown_text(result.checkpoint.describe())}; "
                                      f"probes trained on UD English EWT train; {n['report']} held-out sentences of "
                                      f"{syntax_views.markdown_text(name)} ({n['selection']} chose the heads)."
                                      + lines,
                ui.structure_plot: plot(structure_figure(result.comparison, result.checkpoint.name, name))}

    def difference_plot(self, session: Session, relation: str, direction: str):
        """B - A per head for one relation and direction, when two weights were scored."""
        run = session.syntax
        if run is None or run.compare is None:
            return None
        s = run.summary
        return plot(syntax_views.difference_figure(run.compare, relation, direction, s.layers, s.heads))

    def syntax_relation_view(self, relation: str, direction: str, session: Session) -> dict:
        ui = self.ui
        if session.syntax is None or not relation:
            return {ui.syntax_message: gr.skip()}
        try:
            direction = normalize_direction(direction, CLARK_DIRECTIONS)
            figure = syntax_views.relation_heatmap(session.syntax.summary, relation, direction)
        except ValueError as error:
            return {ui.syntax_message: f"⚠️ {error}"}
        except KeyError as error:
            return {ui.syntax_message: f"⚠️ {error.args[0]}"}
        return {ui.syntax_plot: plot(figure), ui.syntax_diff: self.difference_plot(session, relation, direction)}

    def parse_sentence(self, text: str, layer: float, head: float, session: Session) -> dict:
        """The typed sentence parsed offline: its arcs beside the chosen head's, and every head's agreement."""
        ui = self.ui
        lab = self.page.cache.get(session.model, session.device)
        try:
            result = sentence_syntax(SentenceSyntaxRequest(text), lab)
        except ParserUnavailable as error:
            return {ui.syntax_parse_message: f"⚠️ {error}.", ui.syntax_parse_arcs: None, ui.syntax_parse_agreement: None}
        except (InputError, ValueError) as error:
            return {ui.syntax_parse_message: f"⚠️ {syntax_views.markdown_text(error)}", ui.syntax_parse_arcs: None,
                    ui.syntax_parse_agreement: None}
        layer_index = int(min(max(int(layer) - 1, 0), lab.n_layers - 1))
        head_index = int(min(max(int(head) - 1, 0), lab.n_heads - 1))
        fig, summary = syntax_views.arcs_figure(result.sentence, result.word_attn, layer_index, head_index,
                                                reference="parser")
        best = "; ".join(f"{direction}: layer {b[0] + 1}, head {b[1] + 1} ({b[2]:.2f})"
                         for direction, b in ((d, result.best(d)) for d in result.shares))
        message = (f"**Parsed by** {syntax_views.markdown_text(result.parser.describe())} — *a parser's arcs, not "
                   f"gold*. {agreement_note()}  \n**Weights:** {syntax_views.markdown_text(result.checkpoint)}. "
                   f"Heads agreeing most with the parse's {result.arcs} arcs: {best}.\n\n{summary}")
        return {ui.syntax_parse_message: message, ui.syntax_parse_arcs: plot(fig),
                ui.syntax_parse_agreement: plot(syntax_views.sentence_agreement_figure(result.shares, result.arcs))}

    def syntax_arcs(self, index: int | None, layer: float, head: float, session: Session) -> dict:
        ui = self.ui
        if not session.treebank or index is None:
            return {ui.syntax_arcs_text: "⚠️ Score the treebank first, then choose a sentence."}
        else:
            try:
                sentence = session.treebank[int(index)]
            except (TypeError, ValueError, IndexError):
                return {ui.syntax_arcs_text: f"⚠️ No sentence {index!r}: choose one from the list."}
        lab = self.page.cache.get(weights_for(False, session.syntax_model, session.model), session.device)
        try:
            words, _ = sentence_word_attention(lab, sentence)
        except InputTooLong as error:
            return {ui.syntax_arcs_text: f"⚠️ This sentence is {error.n_tokens} tokens long, more than the model's "
                                         f"{error.maximum}, so it was skipped when scoring; choose another sentence."}
        except InputError as error:
            return {ui.syntax_arcs_text: f"⚠️ This sentence cannot be drawn: {syntax_views.markdown_text(error)}"}
        layer_index = int(min(max(int(layer) - 1, 0), lab.n_layers - 1))
        head_index = int(min(max(int(head) - 1, 0), lab.n_heads - 1))
        fig, summary = syntax_views.arcs_figure(sentence, words, layer_index, head_index)
        return {ui.syntax_arcs_text: summary, ui.syntax_arcs: plot(fig)}
