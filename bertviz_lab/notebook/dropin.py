"""A drop-in for BertViz's ``head_view`` and ``model_view`` (same signatures; Vig 2019, "A
Multiscale Visualization of Attention in the Transformer Model", github.com/jessevig/bertviz):
``from bertviz_lab import head_view`` instead of ``from bertviz import head_view`` gives the same
call on any model's ``outputs.attentions`` (encoder, decoder or encoder-decoder), rendered with
bertviz-lab's compact offline views: no CDN, no require.js, weights as 16-bit codes instead of
JSON floats, and every figure exports to PNG/SVG.

BertViz conventions kept: ``attention`` is a tuple with one tensor per layer, each (batch, heads,
query, key) with batch 1 (numpy arrays, or one (layers, heads, query, key) array, work too);
``layer`` and ``heads`` are 0-based, and the views label layers and heads 0-based as asked (an index out of
range is a ValueError with the range); ``sentence_b_start`` splits a pair; ``prettify_tokens``
turns the Ġ/▁ of BPE and SentencePiece tokens into plain text.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..figures.payload import KeyAxis, PayloadView, weights_payload
from ..lab import Analysis, Lab
from ..naming import unique_labels
from .widget import Section, ViewerPage, display_or_return, viewer_html


def as_array(attention: Any) -> np.ndarray:
    """(layers, heads, query, key) float32 from a per-layer tuple of (1, heads, q, k) tensors or arrays."""
    if attention is None:
        raise ValueError("attention is missing")
    if isinstance(attention, np.ndarray) and attention.ndim == 4:
        return attention.astype(np.float32)
    layers = []
    for a in attention:
        if hasattr(a, "detach"):
            a = a.detach().float().cpu().numpy()
        a = np.asarray(a, dtype=np.float32)
        if a.ndim == 4:
            if a.shape[0] != 1:
                raise ValueError(f"attention has a batch of {a.shape[0]}; pass one input (batch size 1), as BertViz")
            a = a[0]
        if a.ndim != 3:
            raise ValueError(f"each layer's attention must be (batch, heads, query, key); got shape {a.shape}")
        layers.append(a)
    return np.stack(layers)  # (layers, heads, query, key)


def check_indices(asked: Sequence[int], n: int, name: str, what: str) -> None:
    """BertViz's 0-based indices, each an integer in [0, n): anything else is refused by name, not drawn as nothing."""
    bad = [i for i in asked if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < n]
    if bad:
        raise ValueError(f"{name} {bad} out of range: this attention has {n} {what}, numbered 0 to {n - 1} "
                         "(0-based, as BertViz)")


def prettify(tokens: Sequence[str]) -> list[str]:
    """BPE (Ġ) and SentencePiece (▁) word-start marks as plain text, as BertViz shows them."""
    return [str(t).replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\\n").strip() or str(t) for t in tokens]


@dataclass(frozen=True)
class DropinInputs:
    """What BertViz's head_view and model_view are given to draw: one attention and its tokens, or an
    encoder-decoder's encoder, decoder and cross attentions and their tokens."""

    attention: Any = None
    tokens: Sequence[str] | None = None
    encoder_attention: Any = None
    decoder_attention: Any = None
    cross_attention: Any = None
    encoder_tokens: Sequence[str] | None = None
    decoder_tokens: Sequence[str] | None = None


@dataclass(frozen=True)
class DropinDisplay:
    """How BertViz's keywords say to show every section: the layer and heads opened (0-based, as
    BertViz), the layers kept, where sentence B starts and whether tokens are prettified."""

    layer: int | None = None
    heads: Sequence[int] | None = None
    include_layers: Sequence[int] | None = None
    sentence_b_start: int | None = None
    prettify_tokens: bool = True


def _section(name: str, attention: Any, rows: Sequence[str], columns: Sequence[str] | None, shown: DropinDisplay,
             light: bool = True) -> Section:
    weights = as_array(attention)
    layer, heads, include_layers = shown.layer, shown.heads, shown.include_layers
    n_layers, n_heads = weights.shape[:2]
    if include_layers is not None:
        check_indices(include_layers, n_layers, "include_layers", "layers")
        weights = weights[[int(i) for i in include_layers]]
    check_indices(heads or (), n_heads, "heads", "heads")
    nq, nk = weights.shape[-2:]
    rows = prettify(rows) if shown.prettify_tokens else [str(t) for t in rows]
    cols = None if columns is None else (prettify(columns) if shown.prettify_tokens else [str(t) for t in columns])
    if len(rows) != nq or (cols is not None and len(cols) != nk) or (cols is None and nq != nk):
        raise ValueError(f"{name}: attention has {nq} x {nk} positions but {len(rows)} tokens"
                         + ("" if cols is None else f" and {len(cols)} key tokens"))
    b_start = shown.sentence_b_start
    segments = [0] * nq if b_start is None else [0 if i < b_start else 1 for i in range(nq)]
    start = 0 if layer is None else (list(include_layers).index(layer) if include_layers is not None else layer)
    if not 0 <= start < weights.shape[0]:
        raise ValueError(f"layer {layer} is not among the {weights.shape[0]} layers shown (0-based, as BertViz)")
    row_labels = unique_labels(rows, list(range(nq)))
    keys = None if cols is None else KeyAxis(unique_labels(cols, list(range(nk))))
    meta, codes = weights_payload(weights, row_labels, segments,
                                  PayloadView(layer=start, head=min(heads or [0]), title_prefix=f"{name}: " if name else ""),
                                  keys, light=light)
    # named as asked: BertViz's 0-based indices, the original ones where include_layers keeps some layers
    meta["layer_names"] = [int(i) for i in (include_layers if include_layers is not None else range(n_layers))]
    meta["head_names"] = list(range(n_heads))
    if heads:
        meta["heads_shown"] = sorted({int(h) for h in heads})
    return Section(name, meta, codes, weights)


def _sections(given: DropinInputs, shown: DropinDisplay) -> list[Section]:
    if given.attention is not None:
        if given.tokens is None:
            raise ValueError("'tokens' is required")
        return [_section("", given.attention, given.tokens, None, shown)]
    out = []
    unpaired = replace(shown, sentence_b_start=None)  # an encoder-decoder's sections are no sentence pair
    for name, att, rows, cols in (("Encoder", given.encoder_attention, given.encoder_tokens, None),
                                  ("Decoder", given.decoder_attention, given.decoder_tokens, None),
                                  ("Cross", given.cross_attention, given.decoder_tokens, given.encoder_tokens)):
        if att is None:
            continue
        if rows is None or (name == "Cross" and cols is None):
            raise ValueError(f"{name.lower()} attention needs its tokens (encoder_tokens / decoder_tokens)")
        out.append(_section(name, att, rows, cols, unpaired))
    if not out:
        raise ValueError("You must specify at least one attention argument.")
    return out


def head_view(attention=None, tokens=None, sentence_b_start=None, prettify_tokens=True, layer=None, heads=None,
              encoder_attention=None, decoder_attention=None, cross_attention=None, encoder_tokens=None,
              decoder_tokens=None, include_layers=None, html_action="view"):
    """BertViz's ``head_view``: the head view with layer/head controls, head toggles and token hover,
    as a light page (no plotly.js; deflated 7-bit weights, ~250 KB at 64 tokens x 12 x 12 heads);
    "return" gives an object whose ``.data`` is the HTML.
    ``layer`` and ``heads`` are 0-based, as in BertViz: the drop-ins are the one documented exception
    to bertviz-lab's 1-based layers and heads."""
    given = DropinInputs(attention, tokens, encoder_attention, decoder_attention, cross_attention, encoder_tokens,
                         decoder_tokens)
    sections = _sections(given, DropinDisplay(layer, heads, include_layers, sentence_b_start, prettify_tokens))
    page = viewer_html(sections, page=ViewerPage(pair=sentence_b_start is not None, light=True))
    return display_or_return(page, html_action)


def model_view(attention=None, tokens=None, sentence_b_start=None, prettify_tokens=True, display_mode="dark",
               encoder_attention=None, decoder_attention=None, cross_attention=None, encoder_tokens=None,
               decoder_tokens=None, include_layers=None, include_heads=None, html_action="view"):
    """BertViz's ``model_view``: every layer and head at a glance (a small image each; a click opens
    it in the head view above), on one dark or light ground (``display_mode``), ``include_layers``
    and ``include_heads`` honoured; no plotly.js."""
    given = DropinInputs(attention, tokens, encoder_attention, decoder_attention, cross_attention, encoder_tokens,
                         decoder_tokens)
    sections = _sections(given, DropinDisplay(include_layers=include_layers, sentence_b_start=sentence_b_start,
                                              prettify_tokens=prettify_tokens))
    if include_heads is not None:
        for section in sections:
            check_indices(include_heads, section.meta["heads"], "include_heads", "heads")
            section.meta["thumb_heads"] = sorted({int(h) for h in include_heads})
            section.meta["head"] = section.meta["thumb_heads"][0]
    if display_mode not in ("dark", "light"):
        raise ValueError("display_mode must be 'dark' or 'light', as in BertViz")
    page = viewer_html(sections, page=ViewerPage(pair=sentence_b_start is not None, light=True, thumbnails=True,
                                                 dark=display_mode == "dark"))
    return display_or_return(page, html_action)


def show(analysis: Analysis, layer: int = 1, head: int = 1, html_action: str = "view", view: str = "head",
         lab: Lab | None = None):
    """One call in a notebook: the interactive single-head heatmap and head view of an analysis
    (1-based layer and head, as its titles say), with sentence-pair filters for pairs; with
    ``view="neuron"`` (and the ``lab`` that made the analysis) the neuron view: query and key vectors."""
    if view == "neuron":
        if lab is None:
            raise ValueError("the neuron view needs the model: show(analysis, view='neuron', lab=lab)")
        from .neuron_show import show_neuron

        return show_neuron(lab, analysis, layer, head, html_action)
    if view != "head":
        raise ValueError("view must be 'head' or 'neuron'")
    segments = analysis.segment_ids
    meta, codes = weights_payload(analysis.attention, unique_labels(analysis.tokens, list(range(len(analysis.tokens)))),
                                  segments, PayloadView(layer=layer - 1, head=head - 1, model=analysis.model,
                                              source=analysis.source))
    page = viewer_html([Section("", meta, codes)],
                       page=ViewerPage(include_plotlyjs=True if html_action == "return" else "once", pair=any(segments),
                                       title=f"{analysis.model}"))
    return display_or_return(page, html_action)
