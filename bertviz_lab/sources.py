"""Attention from another source for an Analysis that was already run: norm-based weights
(Kobayashi et al. 2020, 2021) and the per-layer matrices rollout and flow run on. One more
forward pass of the same input captures value vectors and layer inputs (the Analysis keeps
only the softmax weights, so sessions stay small)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .bert.sources import NORM_CAPTURES, check_source, layer_source_from_cache, source_from_cache
from .lab import Analysis, InputError, Lab


def _cache(lab: Lab, analysis: Analysis):
    _, cache = lab.run(lab.batch_tensors([analysis.encoded()]), capture=NORM_CAPTURES, compute_mlm=False)
    return cache


def with_source(lab: Lab, analysis: Analysis, source: str) -> Analysis:
    """A copy of the analysis whose ``attention`` holds ``source`` (same shape: layers, heads, q, k)."""
    try:
        check_source(source)
    except ValueError as error:
        raise InputError(str(error)) from None
    if source == analysis.source:
        return analysis
    if analysis.source != "attention":
        raise InputError("convert from the softmax-attention analysis, not from another source")
    matrix = source_from_cache(lab.model, _cache(lab, analysis), source, 0, len(analysis.tokens))
    return replace(analysis, attention=np.ascontiguousarray(matrix, dtype=np.float32), source=source)


def layer_matrices(lab: Lab, analysis: Analysis, source: str) -> np.ndarray:
    """(layers, q, k): the per-layer matrix of ``source`` that rollout and flow run on."""
    check_source(source)
    return layer_source_from_cache(lab.model, _cache(lab, analysis), source, 0, len(analysis.tokens))



