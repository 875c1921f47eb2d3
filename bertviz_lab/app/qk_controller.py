"""The query–key space's controller: one head's queries and keys in one
2-D space over this input or a sentence set (AttentionViz), how alike the heads attend, whose
click opens a head (static/figure_tools.js sends it to ``pick`` like an overview thumbnail), and the
parts one head's scores are the sum of (MPNet's relative bias, DeBERTa's c2c/c2p/p2c)."""
from __future__ import annotations

from ..attention.qk_space import head_similarity, joint_embedding
from ..figures.attention import score_parts_figure
from ..figures.qk import COLOURINGS, head_similarity_figure, qk_figure
from ..interventions.kinds import has_relative_bias, position_term_hooks
from ..lab import InputError, Lab
from ..lens import head_vectors, head_vectors_encoded, head_vectors_of_sentences, score_parts, sentence_attentions
from ..resources import SAMPLE_TREEBANK
from ..sentences import heldout_lines
from ..tasks.validation import whole
from ..treebank import read_conllu
from .page import Page
from .state import Session, Snapshot, plot

QK_SETS = {"input": "this input", "sample": "the sample treebank (66 sentences)",
           "heldout": "200 held-out lines"}
QK_HINT = ("Press *Show the query–key space* for the head chosen with the sliders, or *How alike do the heads "
           "attend?* for every pair of heads (click a cell to open its head).")


PARTS_HINT = ("Press *Show the parts* to see the terms the chosen head's scores are the sum of, before the softmax: "
              "MPNet's relative-position bias beside q·k/√d, DeBERTa's content and position terms.")


def score_has_position_terms(lab: Lab) -> bool:
    """Whether something besides q·k enters the scores (MPNet's relative bias, DeBERTa's c2p / p2c)."""
    return has_relative_bias(lab.model) or bool(position_term_hooks(lab.model))


class QkController:
    def __init__(self, page: Page) -> None:
        self.page, self.ui = page, page.ui

    def qk_points(self, lab: Lab, snap: Snapshot, which: str, layer: int, head: int):
        if which == "input":
            if snap.analysis is None:
                raise InputError("press Run first, or choose a sentence set")
            return head_vectors_encoded(lab, [snap.bound_to(lab).encoded()], layer, head)
        if which == "sample":
            return head_vectors_of_sentences(lab, read_conllu(SAMPLE_TREEBANK), layer, head)
        return head_vectors(lab, heldout_lines()[:200], layer, head)

    def qk_space(self, session: Session, layer: float, head: float, which: str = "input",
                 color_by: str = "position", method: str = "pca") -> dict:
        ui = self.ui
        try:
            snap = session.snapshot()
            lab = self.page.lab_of(session)
            layer_i, head_i = whole(layer, "layer", 1, lab.n_layers) - 1, whole(head, "head", 1, lab.n_heads) - 1
            which = which if which in QK_SETS else "input"
            if color_by == "upos" and which != "sample":
                raise InputError("part of speech comes from a treebank: choose the sample treebank")
            queries, keys, points = self.qk_points(lab, snap, which, layer_i, head_i)
            method = "umap" if method == "umap" else "pca"  # umap needs umap-learn: joint_embedding says so
            fig = qk_figure(joint_embedding(queries, keys, method), points, layer_i, head_i, method,
                            color_by=color_by if color_by in COLOURINGS else "position")
        except (InputError, ValueError) as error:
            return {ui.qk_message: f"⚠️ {error}"}
        partial = (" q·k is only the content part of this model's scores (its position terms are added to it): the "
                   "Single head tab's *parts* show them." if score_has_position_terms(lab) else "")
        return {ui.qk_message: f"{len(points):,} queries and {len(points):,} keys of head {layer_i + 1}-{head_i + 1} "
                               f"from {QK_SETS[which]}; weights: {lab.name}.{partial}", ui.qk_plot: plot(fig)}

    def qk_similarity(self, session: Session, which: str = "input") -> dict:
        ui = self.ui
        try:
            snap = session.snapshot()
            lab = self.page.lab_of(session)
            which = which if which in QK_SETS else "input"
            if which == "input":
                if snap.analysis is None:
                    raise InputError("press Run first, or choose a sentence set")
                attentions = [snap.bound_to(lab).attention]
            else:
                texts = ([s.text for s in read_conllu(SAMPLE_TREEBANK)] if which == "sample"
                         else heldout_lines()[:200])
                attentions = sentence_attentions(lab, texts)
        except InputError as error:
            return {ui.qk_message: f"⚠️ {error}"}
        fig = head_similarity_figure(head_similarity(attentions), lab.n_layers, lab.n_heads, len(attentions))
        return {ui.qk_message: f"Heads compared over {QK_SETS[which]}; weights: {lab.name}. Click a cell to open "
                               "the head of its column.", ui.qk_sim_plot: plot(fig)}

    def score_parts(self, session: Session, layer: float, head: float) -> dict:
        """The chosen head's score parts on the last analysis, side by side, and the attention they make."""
        ui = self.ui
        try:
            snap = session.snapshot()
            lab = self.page.lab_of(session)
            if snap.analysis is None:
                raise InputError("press Run first: the parts are of the last analysed input")
            a = snap.bound_to(lab)
            layer_n, head_n = whole(layer, "layer", 1, lab.n_layers), whole(head, "head", 1, lab.n_heads)
            parts = score_parts(lab, a, layer_n)
        except InputError as error:
            return {ui.parts_message: f"⚠️ {error}"}
        fig = score_parts_figure(parts, a.tokens, head_n - 1, lab.name)
        if parts.has_parts:
            said = f"Head {layer_n}-{head_n}: its scores are {' + '.join(parts.names)}, then the softmax."
        elif lab.model.scheme("rotary") is not None:
            said = (f"Head {layer_n}-{head_n}: this model's scores have one part, q·k/√d after rotary positions turned "
                    "q and k (nothing is added to them; a local layer also hides keys beyond its window).")
        else:
            said = (f"Head {layer_n}-{head_n}: this model's scores have one part, q·k/√d (no position term is added "
                    "to them: its positions entered with the embeddings).")
        return {ui.parts_message: f"{said} Weights: {lab.name}.", ui.parts_plot: plot(fig)}
