"""Figures and tables for the Syntax tab: per-relation heatmaps and the gold-vs-attention arcs
of one sentence."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import plots
from .syntax import DIRECTIONS, ProbeResult, Sentence, live_arcs


def relation_heatmap(result: ProbeResult, relation: str, direction: str) -> plots.Figure:
    counts = result.counts
    key = (relation, direction)
    if key not in counts.correct:
        raise KeyError(f"no {relation} arcs in this treebank")
    total = counts.total[key]
    offset, base = counts.baseline(relation, direction)
    return plots.layer_head_figure(counts.correct[key] / max(total, 1),
                                   f"{relation} ({direction}, n={total}): accuracy per head; "
                                   f"best fixed offset {offset:+d} scores {base:.2f}",
                                   f"syntax-{relation}-{direction.replace('->', '-')}", value_label="accuracy")


def best_heads_table(result: ProbeResult) -> pd.DataFrame:
    table = result.best_heads.copy()
    for col in ("accuracy", "baseline_accuracy"):
        table[col] = table[col].round(3)
    return table


def _arc(x0: float, x1: float, up: bool, colour: str, width: float, dash: str = "solid") -> dict:
    height = 0.35 + 0.22 * abs(x1 - x0)
    y = height if up else -height
    return {"type": "path", "path": f"M {x0},0 Q {(x0 + x1) / 2},{2 * y} {x1},0",
            "line": {"color": colour, "width": width, "dash": dash}}


def arcs_figure(sentence: Sentence, word_attn: np.ndarray, layer: int, head: int) -> tuple[plots.Figure, str]:
    """Gold dependency arcs above the words; the head's strongest word-to-word attention below
    (green where it recovers a gold arc in either direction)."""
    n = len(sentence.words)
    predicted = live_arcs(word_attn, layer, head)
    gold = {(d, sentence.heads[d] - 1): sentence.relations[d] for d in range(n) if sentence.heads[d] > 0}
    undirected = {frozenset(k) for k in gold}
    shapes, annotations, lines = [], [], []
    for (d, h), rel in gold.items():
        shapes.append(_arc(d, h, True, "#2b6cb0", 2))
        annotations.append({"x": (d + h) / 2, "y": 0.35 + 0.22 * abs(d - h) + 0.05, "text": rel, "showarrow": False,
                            "font": {"size": 11, "color": "#2b6cb0"}, "yanchor": "bottom"})
    for src, dst in predicted:
        hit = frozenset((src, dst)) in undirected
        shapes.append(_arc(src, dst, False, "#2f855a" if hit else "#a0aec0", 2.5 if hit else 1.2,
                           "solid" if hit else "dot"))
    for (d, h), rel in gold.items():
        dep_to_head = predicted[d][1] == h
        head_to_dep = predicted[h][1] == d
        mark = "✓" if dep_to_head or head_to_dep else "✗"
        how = " and ".join(x for x, ok in zip(DIRECTIONS, (dep_to_head, head_to_dep)) if ok) or "not recovered"
        lines.append(f"- {mark} **{rel}**: {sentence.words[d]} → {sentence.words[h]} ({how})")
    recovered = sum(1 for x in lines if x.startswith("- ✓"))
    span = max(0.35 + 0.22 * (n - 1), 1.0) * 2
    data = [{"type": "scatter", "mode": "text+markers", "x": list(range(n)), "y": [0] * n,
             "text": sentence.words, "textposition": "middle center", "marker": {"size": 1, "color": "white"},
             "textfont": {"size": 14, "color": "#111"}, "hoverinfo": "text", "showlegend": False}]
    layout = {"title": {"text": f"Gold arcs (above) vs layer {layer + 1}, head {head + 1}: each word's most-attended "
                                "word (below; green = a gold arc)"},
              "shapes": shapes, "annotations": annotations, "height": 520,
              "xaxis": {"visible": False, "range": [-0.8, n - 0.2]},
              "yaxis": {"visible": False, "range": [-span * 0.55, span * 0.6]},
              "margin": {"l": 20, "r": 20, "t": 70, "b": 20}}
    summary = f"Layer {layer + 1}, head {head + 1} recovers {recovered} of {len(gold)} gold arcs:\n\n" + "\n".join(lines)
    return plots.figure(data, layout, f"arcs-L{layer + 1}-H{head + 1}"), summary


SPACY_MODELS = ("en_core_web_sm", "en_core_web_md", "en_core_web_lg", "en_core_web_trf")


def spacy_model_name() -> str | None:
    """The first installed English spaCy pipeline, or None (spaCy is optional, never required)."""
    import importlib.util

    if importlib.util.find_spec("spacy") is None:
        return None
    return next((name for name in SPACY_MODELS if importlib.util.find_spec(name) is not None), None)


def spacy_parse(text: str) -> Sentence | None:
    """A dependency parse of the live sentence, when spaCy and an English model are installed."""
    name = spacy_model_name()
    if name is None:
        return None
    import spacy

    doc = spacy.load(name)(text)
    sent = next(iter(doc.sents))
    words = [t.text for t in sent]
    heads = [0 if t.head.i == t.i else t.head.i - sent.start + 1 for t in sent]
    return Sentence(words, heads, [t.dep_.lower() for t in sent], [t.pos_ for t in sent], sent.text)
