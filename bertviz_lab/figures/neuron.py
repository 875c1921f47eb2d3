"""The neuron view (BertViz's third view; Vig 2019, "A Multiscale Visualization of Attention in the
Transformer Model", github.com/jessevig/bertviz, ``bertviz/neuron_view.py``): for one head and one
query token, its query vector q, every key vector k, their elementwise product q × k, the dot product
q · k and the softmax of q · k / sqrt(d) over the keys, which is that head's attention row.

BertViz computes these with a forked copy of transformers (its most reported breakage); here they
come from our own encoder's hook points (``hook_q``/``hook_k``: after the projection, bias
included), for any checkpoint bertviz-lab loads and for a transformers BERT, RoBERTa, DistilBERT or
ELECTRA model object passed to the drop-in (its weights copied into our encoder). The page is one
self-contained HTML file, no plotly.js and nothing fetched: the vectors travel as float16 in
base64, and layer, head and token switch in the browser with no request (``neuron.js``)."""
from __future__ import annotations

import base64
import html
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..inline import script_json
from ..resources import STATIC

CSS = """
.bvl-neuron {font-family: DejaVu Sans, Arial, sans-serif; font-size: 13px; color: #111; background: #fff}
.bvl-neuron .controls {display: flex; gap: 14px; align-items: center; margin: 4px 0 8px; flex-wrap: wrap}
.bvl-neuron table {border-collapse: collapse}
.bvl-neuron td {padding: 0 4px; white-space: nowrap; height: 16px; line-height: 16px}
.bvl-neuron .tok {cursor: pointer; text-align: right; padding-right: 8px}
.bvl-neuron .tok.query {font-weight: bold; background: #ffe8b3}
.bvl-neuron .num {text-align: right; font-variant-numeric: tabular-nums; width: 64px}
.bvl-neuron canvas {display: block; image-rendering: pixelated}
.bvl-neuron tr.head td {vertical-align: bottom; line-height: 14px}
.bvl-neuron tr.head td:not(.num) {white-space: normal}
.bvl-neuron .bar {display: inline-block; height: 10px; background: #e8710a; vertical-align: middle}
.bvl-neuron .head {color: #555; font-size: 12px}
.bvl-neuron.dark {background: #111; color: #eee}
.bvl-neuron.dark .tok.query {background: #7a5200}
.bvl-neuron.dark .head {color: #aaa}
"""


@dataclass(frozen=True)
class NeuronStart:
    """Where the neuron view opens: 0-based layer and head, and the query token (None: the first
    token that is not [CLS] or <s>); the page switches all three itself afterwards."""

    layer: int = 0
    head: int = 0
    query: int | None = None


def neuron_payload(tokens: list[str], segments: list[int], queries: np.ndarray, keys: np.ndarray, model: str = "",
                   start: NeuronStart = NeuronStart()) -> dict[str, Any]:
    """What the page needs: tokens and (layers, heads, tokens, head_dim) queries and keys as float16."""
    layer, head, query = start.layer, start.head, start.query
    if queries.shape != keys.shape or queries.ndim != 4:
        raise ValueError(f"queries and keys must both be (layers, heads, tokens, head_dim); got {queries.shape} "
                         f"and {keys.shape}")
    layers, heads, n, d = queries.shape
    if len(tokens) != n:
        raise ValueError(f"{n} positions but {len(tokens)} tokens")
    if not (0 <= layer < layers and 0 <= head < heads):
        raise ValueError(f"layer {layer} / head {head} outside the model's {layers} layers and {heads} heads (0-based)")
    packed = np.stack([queries, keys]).astype("<f2")  # (2, layers, heads, tokens, head_dim)
    first = next((i for i, t in enumerate(tokens) if t not in ("[CLS]", "<s>")), 0) if query is None else query
    return {"tokens": list(tokens), "segments": list(segments), "layers": layers, "heads": heads, "n": n, "d": d,
            "layer": layer, "head": head, "query": first, "model": model,
            "vectors": base64.b64encode(packed.tobytes()).decode("ascii")}


def with_score_bias(payload: dict[str, Any], scales: list[float], bias: np.ndarray | None) -> dict[str, Any]:
    """The payload with each layer's content scale (what q·k is multiplied by) and what the model adds to the
    scores before the softmax ((layers, heads, query, key), ``lens.score_bias``; MPNet's relative bias,
    DeBERTa's position terms), so the softmax the page shows is the model's own attention."""
    shape = (payload["layers"], payload["heads"], payload["n"], payload["n"])
    out = {**payload, "scales": [float(v) for v in scales]}
    if bias is not None:
        if bias.shape != shape:
            raise ValueError(f"bias must be (layers, heads, tokens, tokens) = {shape}; got {bias.shape}")
        out["bias"] = base64.b64encode(np.ascontiguousarray(bias, dtype="<f2").tobytes()).decode("ascii")
    return out


def neuron_html(payload: dict[str, Any]) -> str:
    """One self-contained output: controls, the query vector, a row per key (k, q × k, q · k, softmax)."""
    root = f"bvl-neuron-{uuid.uuid4().hex}"
    title = f"Neuron view · {html.escape(payload['model'])}" if payload.get("model") else "Neuron view"
    return (f'<div id="{root}" class="bvl-neuron"><style>{CSS}</style>'
            f'<div class="controls"><b>{title}</b>'
            '<label>Layer <select class="layer"></select></label><label>Head <select class="head-select"></select></label>'
            '<span class="head">click a token (or ↑/↓) to make it the query; 1-based layers and heads</span>'
            '<button class="export" data-format="svg">SVG</button><button class="export" data-format="png">PNG</button>'
            '</div><div class="query-row"></div><table class="rows"></table></div>'
            f"<script>{(STATIC / 'export.js').read_text()}</script>"
            f"<script>{(STATIC / 'neuron.js').read_text()}</script>"
            f"<script>window.BvlNeuron(document.getElementById({script_json(root)}), {script_json(payload)});</script>")


def neuron_page(payload: dict[str, Any]) -> str:
    """A whole HTML document (what ``html_action="return"`` gives and the app's frame shows)."""
    return ("<!doctype html><html><head><meta charset='utf-8'><title>bertviz-lab neuron view</title></head>"
            f"<body style='margin:8px'>{neuron_html(payload)}</body></html>")
