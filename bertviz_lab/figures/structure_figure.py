"""The comparison a paper would print: per layer, the structural probe's UUAS beside trees decoded
from the best single head and from the best head ensemble of that layer, with the probe on
random weights and the right-branching baseline, each with its 95% interval, all on the same
held-out sentences."""
from __future__ import annotations

import pandas as pd

from .base import Figure, figure, fit_title

SERIES = (  # method, legend, colour, dash, marker
    ("structural probe", "structural probe (representations)", "#2b6cb0", "solid", "circle"),
    ("head ensemble tree", "tree of the layer's best head ensemble (<= 4 heads)", "#2f855a", "solid", "diamond"),
    ("best head tree", "tree of the layer's best single head", "#dd6b20", "solid", "square"),
    ("structural probe, random weights", "structural probe on random weights (null model)", "#e53e3e", "dot",
     "x"),
    ("structural probe, control task", "structural probe on the control task (Hewitt & Liang; selectivity = "
     "the gap)", "#2b6cb0", "dot", "circle-open"),
    ("perturbed masking tree", "perturbed masking (no probe; Eisner, gold root)", "#6b46c1", "dash", "triangle-up"),
)
BASELINE = "right-branching"


def structure_figure(comparison: pd.DataFrame, model: str, treebank: str) -> Figure:
    """Lines with error bars per method over layers (0 = embeddings); right-branching as a band."""
    data = []
    for method, name, colour, dash, marker in SERIES:
        rows = comparison[comparison.method == method].sort_values("layer")
        if not len(rows):
            continue
        y = rows.uuas.to_numpy(dtype=float)
        heads = rows.heads.fillna("").tolist() if "heads" in rows else [""] * len(rows)
        data.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": rows.layer.astype(int).tolist(),
                     "y": y.tolist(), "line": {"color": colour, "dash": dash}, "marker": {"symbol": marker, "size": 8},
                     "error_y": {"type": "data", "symmetric": False, "array": (rows.ci_high - y).tolist(),
                                 "arrayminus": (y - rows.ci_low).tolist(), "thickness": 1.2, "width": 4},
                     "customdata": heads,
                     "hovertemplate": f"layer %{{x}}<br>{name}: UUAS %{{y:.3f}}<br>%{{customdata}}<extra></extra>"})
    base = comparison[comparison.method == BASELINE]
    layers = comparison.layer.dropna().astype(int)
    x = [int(layers.min()) - 0.3, int(layers.max()) + 0.3] if len(layers) else [0, 1]
    if len(base):
        b = base.iloc[0]
        data.append({"type": "scatter", "mode": "lines", "name": f"right-branching (UUAS {b.uuas:.3f})", "x": x + x[::-1],
                     "y": [b.ci_high, b.ci_high, b.ci_low, b.ci_low], "fill": "toself", "fillcolor": "rgba(113,128,150,0.25)",
                     "line": {"color": "rgba(113,128,150,0.6)", "width": 1}, "hoverinfo": "skip"})
    sentences = int(comparison.sentences.max()) if len(comparison) else 0
    layout = {"height": 500, "xaxis": {"title": {"text": "layer (0 = embeddings)"}, "dtick": 1},
              "yaxis": {"title": {"text": "UUAS (punctuation left out)"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.3, "yanchor": "top"}, "margin": {"b": 150}}
    fit_title(layout, f"Syntax in {model}: structural probe vs attention trees on {treebank}, {sentences} held-out "
                      "sentences, 95% intervals")
    return figure(data, layout, "structure-comparison")
