"""The neuron view of an analysis in a notebook (the page itself: figures/neuron.py)."""
from __future__ import annotations

from ..figures.neuron import NeuronStart, neuron_html, neuron_page, neuron_payload, with_score_bias
from ..lab import Analysis, Lab
from ..lens import queries_and_keys, score_bias
from .widget import ViewerHTML, display_or_return


def show_neuron(lab: Lab, analysis: Analysis, layer: int = 1, head: int = 1, html_action: str = "view"):
    """The neuron view of an analysis (1-based layer and head): q, k, q x k, q . k and softmax."""
    queries, keys = queries_and_keys(lab, analysis)
    scales, bias = score_bias(lab, analysis)  # MPNet's and DeBERTa's position terms: the softmax is the model's
    payload = with_score_bias(neuron_payload(list(analysis.tokens), list(analysis.segment_ids), queries, keys,
                                             analysis.model, NeuronStart(layer - 1, head - 1)), scales, bias)
    if html_action == "return":
        return ViewerHTML(neuron_page(payload))
    return display_or_return(neuron_html(payload), html_action)
