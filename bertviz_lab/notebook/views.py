"""The app's views as Plotly ``Figure`` objects, for notebooks: they render inline in Jupyter,
JupyterLab, VS Code and Colab with Plotly's own offline renderers (plotly.js embedded once per
notebook by Plotly's ``notebook`` renderer, or the front end's bundled copy; never a CDN)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..attention.qk_space import head_similarity as similarity
from ..attention.qk_space import joint_embedding
from ..figures import analysis as views
from ..figures import interventions as intervention_views
from ..figures import qk as qk_views
from ..figures import syntax as syntax_views
from ..figures.attention import classes_figure
from ..figures.base import Figure
from ..figures.structure_figure import structure_figure
from ..interventions import Comparison
from ..lab import Analysis, Lab
from ..lens import head_vectors, head_vectors_encoded, head_vectors_of_sentences, sentence_attentions
from ..syntax.structure import StructureResult, StructureSettings
from ..syntax.summary import SyntaxSummary
from ..tasks.sentence_syntax import SentenceSyntax, SentenceSyntaxRequest
from ..tasks.sentence_syntax import sentence_syntax as parse_and_score
from ..tasks.structural_probes import StructureRequest, structure
from ..treebank import Sentence

ANALYSIS_FIGURES = ("single-head", "overview", "head-view", "aggregates", "summary", "predictions", "classes")
COMPARISON_FIGURES = ("comparison", "divergence", "offsets")
SYNTAX_FIGURES = ("best-heads", "relation", "uuas", "statistics")
SENTENCE_SYNTAX_FIGURES = ("arcs", "agreement")


def plotly_figure(fig: Figure):
    """A ``plotly.graph_objects.Figure`` of one of our figure dicts (typed arrays kept as they are) that
    also renders where Plotly's mimetype does not: see ``notebook_figure_class``."""
    out = notebook_figure_class()(data=fig["data"], layout=fig["layout"])
    out._config = dict(fig.get("config", {}))  # noqa: SLF001  (PNG button options, as in the app)
    return out


_FIGURE_CLASS = None


def notebook_figure_class():
    """``go.Figure`` whose notebook output carries Plotly's JSON mimetype (JupyterLab, VS Code) *and*
    an HTML rendering with plotly.js inlined once per kernel (every output on Colab), so classic
    Notebook, Colab and nbconvert's offline HTML export draw it too; a plain ``go.Figure`` under the
    default renderer gives only the mimetype, which an exported page shows blank. The HTML draws
    whichever order the cells ran in (``widget.plotly_div`` waits for plotly.js)."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        import plotly.graph_objects as go
        import plotly.io as pio

        from .widget import plotly_div, plotly_script

        class NotebookFigure(go.Figure):
            def _repr_mimebundle_(self, include=None, exclude=None, validate=True, **kwargs):
                bundle = pio.renderers["plotly_mimetype"].to_mimebundle(self.to_dict())
                html = plotly_div(pio.to_json(self, validate=validate), self._config, self.layout.height)
                bundle["text/html"] = plotly_script("once") + html
                return bundle

            def _ipython_display_(self):  # Plotly's own would show only its default renderer's output
                from IPython.display import display

                display(self._repr_mimebundle_(), raw=True)

        _FIGURE_CLASS = NotebookFigure
    return _FIGURE_CLASS


def _options(analysis: Analysis, layer: int, head: int, display: AnalysisDisplay | None = None) -> views.ViewOptions:
    """1-based layer/head, as the figures' titles and the app's sliders say them, and how the weights are shown."""
    if not (1 <= layer <= analysis.n_layers and 1 <= head <= analysis.n_heads):
        raise ValueError(f"layer and head are 1-based: layer 1-{analysis.n_layers}, head 1-{analysis.n_heads}")
    d = display or AnalysisDisplay()
    return views.ViewOptions(layer=layer - 1, head=head - 1, hide_special=d.hide_special, word_level=d.word_level,
                             pair_filter=d.pair_filter, head_view_token=d.token)


@dataclass(frozen=True)
class AnalysisDisplay:
    """How an analysis view shows its weights, none of which changes the analysis: special tokens
    hidden, word level, a sentence-pair filter, and the head view's one token (None: all tokens);
    one object so ``figure``'s keywords stay layer, head and this."""

    hide_special: bool = False
    word_level: bool = False
    pair_filter: str = "all"
    token: int | None = None


def analysis_figure(analysis: Analysis, kind: str = "single-head", layer: int = 1, head: int = 1,
                    display: AnalysisDisplay | None = None):
    """One view of an analysis as a Plotly Figure; ``layer`` and ``head`` are 1-based; ``display``
    hides special tokens, goes to word level, filters sentence pairs or picks the head view's token."""
    o = _options(analysis, layer, head, display)
    builders: dict[str, Callable[[], Figure]] = {
        "single-head": lambda: views.single_head(analysis, o)[0],
        "overview": lambda: views.overview(analysis, selected=(o.layer, o.head)),
        "head-view": lambda: views.head_view(analysis, o),
        "aggregates": lambda: views.aggregates(analysis, o),
        "summary": lambda: views.summary(analysis),
        "predictions": lambda: views.predictions(analysis)[0],
        "classes": lambda: classes_figure(analysis.classes, analysis.model),
    }
    if kind not in builders:
        raise ValueError(f"unknown figure {kind!r}: choose one of {', '.join(ANALYSIS_FIGURES)}")
    return plotly_figure(builders[kind]())


def comparison_figure(comparison, kind: str = "comparison", layer: int = 1, head: int = 1):
    """A probe's baseline vs intervened view (``comparison``), per-head divergence, or offset profile."""
    o = _options(comparison.baseline, layer, head)
    builders: dict[str, Callable[[], Figure]] = {
        "comparison": lambda: intervention_views.comparison_figure(comparison, o),
        "divergence": lambda: intervention_views.js_figure(comparison),
        "offsets": lambda: intervention_views.offsets_figure(comparison, o.layer),
    }
    if kind not in builders:
        raise ValueError(f"unknown figure {kind!r}: choose one of {', '.join(COMPARISON_FIGURES)}")
    return plotly_figure(builders[kind]())


def syntax_figure(summary, kind: str = "best-heads", relation: str | None = None):
    """A syntax score's best heads with intervals, one relation's accuracy per head, UUAS, statistics."""
    builders: dict[str, Callable[[], Figure]] = {
        "best-heads": lambda: syntax_views.best_heads_figure(summary),
        "relation": lambda: syntax_views.relation_figure(summary, relation or str(summary.best_heads.relation.iloc[0])),
        "uuas": lambda: syntax_views.uuas_figure(summary),
        "statistics": lambda: syntax_views.stats_figure(summary),
    }
    if kind not in builders:
        raise ValueError(f"unknown figure {kind!r}: choose one of {', '.join(SYNTAX_FIGURES)}")
    return plotly_figure(builders[kind]())


def sentence_syntax(lab: Lab, text: str) -> SentenceSyntax:
    """A typed sentence parsed offline (spaCy, converted to UD heads: a parser's arcs, not gold) and every head's
    agreement with its arcs in both of Clark's directions: ``result.to_json()``; ``figure(result, "arcs", layer=2,
    head=1)`` draws the arcs beside a head's, ``figure(result, "agreement")`` every head's share."""
    return parse_and_score(SentenceSyntaxRequest(text), lab)


def sentence_syntax_figure(result: SentenceSyntax, kind: str = "arcs", layer: int = 1, head: int = 1):
    """The parse's arcs beside one head's (``layer`` and ``head`` 1-based), or every head's agreement."""
    if kind == "agreement":
        return plotly_figure(syntax_views.sentence_agreement_figure(result.shares, result.arcs))
    if kind != "arcs":
        raise ValueError(f"unknown figure {kind!r}: choose one of {', '.join(SENTENCE_SYNTAX_FIGURES)}")
    layers, heads = result.word_attn.shape[:2]
    if not (1 <= layer <= layers and 1 <= head <= heads):
        raise ValueError(f"layer and head are 1-based: this model has {layers} layers of {heads} heads")
    return plotly_figure(syntax_views.arcs_figure(result.sentence, result.word_attn, layer - 1, head - 1,
                                                  reference="parser")[0])


def figure(obj: Analysis | Comparison | SyntaxSummary, kind: str | None = None, **options: Any):
    """Any of our results as a Plotly Figure: ``bertviz_lab.figure(analysis, "overview")``,
    ``figure(analysis, "single-head", layer=2, head=1, display=AnalysisDisplay(hide_special=True))``,
    ``figure(comparison, "comparison", layer=2, head=1)``, ``figure(summary, "best-heads")``.
    The data classes hold no drawing code (they sit below this layer); this is the one door to it."""
    if isinstance(obj, Analysis):
        return analysis_figure(obj, kind or "single-head", **options)
    if isinstance(obj, Comparison):
        return comparison_figure(obj, kind or "comparison", **options)
    if isinstance(obj, SyntaxSummary):
        return syntax_figure(obj, kind or "best-heads", **options)
    if isinstance(obj, SentenceSyntax):
        return sentence_syntax_figure(obj, kind or "arcs", **options)
    if isinstance(obj, StructureResult):
        return plotly_figure(structure_figure(obj.comparison, obj.checkpoint.name, obj.eval_treebank or "the treebank"))
    raise TypeError(f"cannot draw a {type(obj).__name__}: pass an Analysis, a Comparison, a SyntaxSummary or the "
                    "result of structural_probe or sentence_syntax")


def structural_probe(lab: Lab, treebank: Any, train: Any = None, probes: Any = None, min_arcs: int = 50,
                     settings: StructureSettings | None = None) -> StructureResult:
    """Structural probes per layer beside attention trees and head ensembles (``tasks/structure.py``):
    ``treebank`` and ``train`` are CoNLL-U paths or lists of Sentences; ``probes`` a probes.safetensors
    saved earlier for these weights instead of ``train`` (neither: the probes bertviz-lab ships for the published
    weights); ``settings``: how the probes train and the intervals resample (``StructureSettings``).
    ``figure(result)`` draws the comparison; ``result.conclusions`` says what the paired intervals support."""
    request = StructureRequest(treebank, train, Path(probes) if probes is not None else None,
                               settings=settings or StructureSettings(), min_arcs=min_arcs)
    return structure(request, lab).result


def _points(lab: Lab, sentences: Any, layer: int, head: int):
    """Queries, keys and points of one head (0-based) over an Analysis, texts or treebank Sentences."""
    if isinstance(sentences, Analysis):
        return head_vectors_encoded(lab, [sentences.encoded()], layer, head)
    items = list(sentences)
    if items and isinstance(items[0], Sentence):
        return head_vectors_of_sentences(lab, items, layer, head)
    return head_vectors(lab, [str(s) for s in items], layer, head)


def qk_space(lab: Lab, sentences: Any, layer: int = 1, head: int = 1, color_by: str = "position",
             method: str = "pca"):
    """One head's queries and keys in one 2-D space (AttentionViz's key translation and scaling),
    over an analysis, a list of texts or treebank sentences (their parts of speech: ``color_by="upos"``);
    ``layer`` and ``head`` are 1-based. ``color_by``: position, sentence, segment, upos or value_norm."""
    if not (1 <= layer <= lab.n_layers and 1 <= head <= lab.n_heads):
        raise ValueError(f"layer and head are 1-based: layer 1-{lab.n_layers}, head 1-{lab.n_heads}")
    queries, keys, points = _points(lab, sentences, layer - 1, head - 1)
    return plotly_figure(qk_views.qk_figure(joint_embedding(queries, keys, method), points, layer - 1, head - 1,
                                            method, color_by))


def head_similarity(lab: Lab, sentences: Any):
    """Heads x heads Jensen–Shannon divergence of their attention over an analysis or a list of texts."""
    if isinstance(sentences, Analysis):
        attentions = [sentences.attention]
    else:
        attentions = sentence_attentions(lab, [str(s) for s in sentences])
    return plotly_figure(qk_views.head_similarity_figure(similarity(attentions), lab.n_layers, lab.n_heads,
                                                         len(attentions)))
