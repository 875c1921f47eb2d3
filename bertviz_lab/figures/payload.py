"""One analysis as the browser needs it to switch layer, head and sentence-pair filter by itself.

A Run sends this once; the page's ``views.js`` then re-draws the single-head heatmap and the
head view with no server round trip. The payload is a small JSON (labels, scales, a figure
template) plus the codes of every head's weights as raw bytes, which the page fetches as a
binary file: base64 inside Gradio's JSON messages cost 0.4 s at 128 tokens, a binary fetch a few
milliseconds. Codes are quantised with one scale per head: 16 bits up to ``CODE16_MAX_TOKENS``
rows (error <= 8e-6 of the head's max, below the 4 decimals the hover shows), 8 bits above (error
<= 0.2 % of the head's max, and the hover says so): 19 MB at 512 tokens instead of 75 MB of float32.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..attention import AttentionView, Display, attention_view
from ..lab import Analysis
from .attention import heatmap_figure, short_label
from .base import HEAD_COLOURS, ROWS_SUM_TO_ONE, Figure, colorbar_title, quantity, resolve_scale, scale_note

if TYPE_CHECKING:
    from .analysis import ViewOptions

CODE16_MAX_TOKENS = 256  # displayed rows up to which weights travel as 16-bit codes
HEAD_VIEW_MAX_TOKENS = 128  # the head view draws at most this many tokens at once (a range selector picks which)
MAIN_HEIGHT = (420, 640)  # the main heatmap's smallest and largest height: it fits a 800-pixel-high screen
# the line under the single-head map: what a row is, for each source (a source not named: its rows unexplained)
ROWS_ABOUT = {
    "attention": "Each row sums to 1: a query's attention is shared among the keys. A column that takes most rows' "
                 "weight (often [CLS], [SEP] or '.') is an attention sink: a place heads park attention, not "
                 "necessarily a sign of meaning.",
    "norm": "Each row is a query token; each cell the size (vector norm) of what the key token passes to it "
            "through this head. Raw norms: rows do not sum to 1.",
    "norm-residual": "Each row is a token; each cell the norm of the part of its attention-block output (residual "
                     "and LayerNorm included) that comes from the key token. Raw norms: rows do not sum to 1; "
                     "every head of a layer shows the same map.",
    "globenc": "Each row is a token; each cell the norm of the part of its output of the whole layer that comes "
               "from the key token. Raw norms: rows do not sum to 1; every head of a layer shows the same map.",
    "alti": "Each row is a token; each cell the key token's share of its attention-block output (residual "
            "included). Each row sums to 1; every head of a layer shows the same map.",
    "value-zeroing": "Each row is a token; each cell how much its layer output changes when the key token's values "
                     "are zeroed. Each row sums to 1; every head of a layer shows the same map.",
    "decompx": "Each row is a token; each cell the norm of the part of its representation after this layer that "
               "comes from the input token in the column, through every layer so far. Raw norms: rows do not sum "
               "to 1; every head of a layer shows the same map.",
    "rollout": "Each row is a token at this layer; each cell how much of it comes from the input token in the "
               "column, attention multiplied up from layer 1 with each token's own residual copy counted (close to "
               "the identity at layer 1). Each row sums to 1.",
    "flow": "Each row is a token at this layer; each cell the largest attention flow from the input token in the "
            "column up to it. Each row sums to 1.",
}


def per_head_codes(weights: np.ndarray, top: int, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """(codes, scales) of (layers, heads, q, k) weights: rint(weight * top / its head's largest weight) as
    ``dtype``, and each head's largest weight (1 for a head of zeros) as float32.

    Head by head through one temporary the size of a head, which stays in the CPU's cache: the whole
    (layers, heads, q, k) float temporary went to memory and back three times (38 ms at 512 tokens on 6 x 12
    heads against 25 ms here; issue 45). The codes are the same, float32 product for float32 product."""
    weights = np.asarray(weights, dtype=np.float32)
    scales = weights.max(axis=(-1, -2))  # (layers, heads) float32
    scales[scales <= 0] = 1.0
    factors = top / scales  # (layers, heads) float32
    codes = np.empty(weights.shape, dtype=dtype)  # (layers, heads, q, k)
    scaled = np.empty(weights.shape[2:], dtype=np.float32)  # (q, k): one head
    for layer, head in np.ndindex(*weights.shape[:2]):
        np.multiply(weights[layer, head], factors[layer, head], out=scaled)
        np.rint(scaled, out=scaled)
        codes[layer, head] = scaled
    return codes, scales


def quantise(weights: np.ndarray, bits: int) -> tuple[bytes, np.ndarray]:  # little-endian, as the page reads
    """Codes of ``weights`` (layers, heads, q, k) scaled per head to [0, 2**bits - 1], and the scales."""
    codes, scales = per_head_codes(weights, 2 ** bits - 1, "<u2" if bits == 16 else np.uint8)
    return codes.tobytes(), scales.astype(np.float64)


LIGHT_LEVELS = 127  # the drop-in's codes: 7 bits, deflated (a weight to within 0.4 % of its head's largest)


def light_codes(weights: np.ndarray) -> tuple[bytes, np.ndarray]:
    """(deflated 7-bit codes, per-head scales) of (layers, heads, q, k) weights: BertViz-sized pages
    (~250 KB for 12 x 12 heads at 64 tokens) that the page inflates with DecompressionStream."""
    import zlib

    codes, scales = per_head_codes(weights, LIGHT_LEVELS, np.uint8)
    return zlib.compress(codes.tobytes(), 9), scales.astype(np.float64)


def dequantise(payload: dict[str, Any], codes_bytes: bytes) -> np.ndarray:
    """The weights a payload and its codes carry, (layers, heads, q, k) float32: what the page draws."""
    dtype = "<u2" if payload["bits"] == 16 else np.uint8
    if payload.get("compressed") == "deflate":
        import zlib

        codes_bytes = zlib.decompress(codes_bytes)
    nq, nk = len(payload["labels"]), len(payload.get("key_labels", payload["labels"]))
    codes = np.frombuffer(codes_bytes, dtype=dtype)
    codes = codes.reshape(payload["layers"], payload["heads"], nq, nk).astype(np.float32)
    scales = np.asarray(payload["scales"], dtype=np.float32)[..., None, None]
    return codes * scales / payload.get("levels", 2 ** payload["bits"] - 1)


def heatmap_template(labels: list[str], bits: int) -> Figure:
    """The single-head figure without its numbers: styling stays in Python, the page fills z, the
    labels of the rows and columns the pair filter keeps, the title and the height."""
    view = AttentionView(np.zeros((1, 1), dtype=np.float32), labels[:1], labels[:1], [0], [0], [])
    fig = heatmap_figure(view, "", filename="attention", height=MAIN_HEIGHT[0])
    trace = fig["data"][0]
    trace["z"] = None
    if bits == 8:
        trace["hovertemplate"] = "query %{y}<br>key %{x}<br>weight ≈ %{z:.3f} (8-bit)<extra></extra>"
    return fig


@dataclass(frozen=True)
class PayloadView:
    """What the page opens on (0-based layer and head, pair filter) and the words around the weights
    (notes, source label, model, title prefix): none of it changes a code, so it travels as one."""

    layer: int = 0
    head: int = 0
    pair_filter: str = "all"
    notes: Sequence[str] = ()
    source_label: str = ""
    model: str = ""
    title_prefix: str = ""
    source: str = "attention"  # the registry's name of what the weights are (figures.base.QUANTITIES)
    scale: str = "auto"  # the colour scale the page opens on: "fixed", "per-head" or "auto" (base.resolve_scale)


@dataclass(frozen=True)
class KeyAxis:
    """The columns of rectangular weights (e.g. cross-attention), whose keys are not the query rows."""

    labels: list[str]
    segments: Sequence[int] | None = None  # None: every key in segment 0


def view_payload(analysis: Analysis, opts: ViewOptions, extra_notes: Sequence[str] = (),
                 source_label: str = "", scale: str = "auto") -> tuple[dict[str, Any], bytes]:
    """What the page needs for the single-head heatmap and the head view of ``analysis`` under the
    server-side display options (word level, hidden specials) of ``opts``, opened on its layer, head
    and pair filter and on the colour ``scale`` ("fixed", "per-head" or "auto"): the JSON part and the codes.
    ``token_index``: each row's first token position in the analysis (the neuron view opens on it)."""
    view = attention_view(analysis.attention, analysis.tokens, analysis.word_ids, analysis.segment_ids,
                          Display(opts.hide_special, opts.word_level))
    shown = PayloadView(layer=opts.layer, head=opts.head, pair_filter=opts.pair_filter,
                        notes=list(extra_notes) + view.notes, source_label=source_label, model=analysis.model,
                        source=analysis.source, scale=scale)
    meta, codes = weights_payload(view.weights, view.query_labels, view.query_segments, shown)
    meta["token_index"] = list(view.query_tokens)
    return meta, codes


def open_head_codes(meta: dict[str, Any], codes: bytes) -> bytes:
    """The codes of the head the page opens on (``meta``'s layer and head): the page draws that head from
    these first, while it fetches every head's codes (issue 45: the open view before the rest)."""
    nq = len(meta["labels"])
    nk = len(meta.get("key_labels") or meta["labels"])
    size = nq * nk * (2 if meta["bits"] == 16 else 1)
    start = (int(meta["layer"]) * int(meta["heads"]) + int(meta["head"])) * size
    return codes[start:start + size]


def scale_fields(source: str, scale: str, scales: np.ndarray) -> dict[str, Any]:
    """What the page needs to draw ``source``'s weights on either colour scale: the scale it opens on, the top
    of the fixed scale (1, or the largest weight of any head for raw norms), each scale's colour bar title,
    and the line under the map that says what a row is."""
    mode = resolve_scale(scale, source)
    fixed_max = 1.0 if source in ROWS_SUM_TO_ONE else float(max(scales.max(), 1e-6))
    titles = {m: colorbar_title(quantity(source) + scale_note(m, source))["text"] for m in ("fixed", "per-head")}
    return {"source": source, "scale": mode, "fixed_max": round(fixed_max, 8), "colorbar_titles": titles,
            "about": ROWS_ABOUT.get(source, "")}


def weights_payload(weights: np.ndarray, labels: list[str], segments: Sequence[int], view: PayloadView = PayloadView(),
                    keys: KeyAxis | None = None, light: bool = False) -> tuple[dict[str, Any], bytes]:
    """Any (layers, heads, query, key) weights with their row labels (and column labels, ``keys``, when the
    attention is rectangular, e.g. cross-attention) as a payload and its codes; ``light``: the
    drop-in's deflated 7-bit codes (``light_codes``) instead of 16- or 8-bit ones."""
    layers, heads, nq, nk = weights.shape  # (layers, heads, query, key)
    bits = 8 if light else 16 if max(nq, nk) <= CODE16_MAX_TOKENS else 8
    codes, scales = (light_codes if light else lambda w: quantise(w, bits))(np.asarray(weights, dtype=np.float32))
    meta = {
        "version": 1, "id": uuid.uuid4().hex, "model": view.model, "source_label": view.source_label,
        "title_prefix": view.title_prefix, "layers": layers, "heads": heads, "layer": int(view.layer),
        "head": int(view.head), "pair_filter": view.pair_filter,
        "labels": list(labels), "short": [short_label(lab) for lab in labels], "segments": list(segments),
        "bits": bits, "scales": scales.round(8).tolist(), "codes_bytes": len(codes), "notes": list(view.notes),
        "heatmap": None if light else heatmap_template(list(labels), bits),
        "height": {"min": MAIN_HEIGHT[0], "max": MAIN_HEIGHT[1], "base": 150, "row": 22},
        "head_view_max_tokens": HEAD_VIEW_MAX_TOKENS, "head_colours": HEAD_COLOURS,
        **scale_fields(view.source, view.scale, scales),
    }
    if light:
        meta.update({"levels": LIGHT_LEVELS, "compressed": "deflate"})
    if keys is not None:
        meta.update({"key_labels": list(keys.labels), "key_short": [short_label(lab) for lab in keys.labels],
                     "key_segments": list(keys.segments if keys.segments is not None else [0] * len(keys.labels))})
    return meta, codes
