"""bertviz-lab in notebooks: the views as Plotly figures (``bertviz_lab.figure``), one-call
interactive output (``show``), and a BertViz drop-in (``head_view``, ``model_view``) for any
model's attention. Nothing here needs a server of ours or the network."""
from .dropin import head_view, model_view, show
from .views import (
    AnalysisDisplay,
    StructureSettings,
    analysis_figure,
    comparison_figure,
    figure,
    head_similarity,
    qk_space,
    sentence_syntax,
    structural_probe,
    syntax_figure,
)

__all__ = ["AnalysisDisplay", "StructureSettings", "analysis_figure", "comparison_figure", "figure", "head_similarity",
           "head_view", "model_view", "qk_space", "sentence_syntax", "show", "structural_probe", "syntax_figure"]
