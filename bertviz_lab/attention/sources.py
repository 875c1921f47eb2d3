"""An Analysis in another attention source, and the per-layer matrices rollout and flow run on.

The registry itself (``bert/sources/source_registry.py``: every source's name, note, citation, shape facts,
cost and computation) is re-exported here, so views, the CLI, the app and notebooks have one door.
Converting an analysis runs one more forward pass of the same input, capturing what the source
needs (the Analysis keeps only the softmax weights, so sessions stay small).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..bert.sources.captured import Captured
from ..bert.sources.source_registry import SOURCES, Source, get_source, source_names
from ..lab import Analysis, InputError, Lab

__all__ = ["SOURCES", "Source", "get_source", "in_source", "layer_matrices", "source_names", "with_source"]


def _source(name: str) -> Source:
    try:
        return get_source(name)
    except ValueError as error:
        raise InputError(str(error)) from None


def _captured(lab: Lab, analysis: Analysis, source: Source) -> Captured:
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=source.captures, compute_mlm=False)
    return Captured(lab.model, cache, 0, len(analysis.tokens))


def with_source(lab: Lab, analysis: Analysis, source: str) -> Analysis:
    """A copy of the analysis whose ``attention`` holds ``source`` (same shape: layers, heads, q, k)."""
    chosen = _source(source)
    if source == analysis.source:
        return analysis
    if analysis.source != "attention":
        raise InputError("convert from the softmax-attention analysis, not from another source")
    matrix = chosen.weights(_captured(lab, analysis, chosen))  # (layers, heads, query, key)
    return replace(analysis, attention=np.ascontiguousarray(matrix, dtype=np.float32), source=source)


def in_source(lab: Lab, analysis: Analysis, source: str) -> tuple[Analysis, np.ndarray]:
    """The analysis in ``source`` and the per-layer matrices rollout and flow run on, from one forward pass (what
    the page shows when a visitor switches source; ``with_source`` then ``layer_matrices`` would run two)."""
    chosen = _source(source)
    if analysis.source != "attention":
        raise InputError("convert from the softmax-attention analysis, not from another source")
    captured = _captured(lab, analysis, chosen)
    matrix = chosen.weights(captured)  # (layers, heads, query, key)
    converted = replace(analysis, attention=np.ascontiguousarray(matrix, dtype=np.float32), source=source)
    return converted, chosen.layer_matrices(captured)


def layer_matrices(lab: Lab, analysis: Analysis, source: str) -> np.ndarray:
    """(layers, q, k): the per-layer matrix of ``source`` that rollout and flow run on."""
    chosen = _source(source)
    return chosen.layer_matrices(_captured(lab, analysis, chosen))
