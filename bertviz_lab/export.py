"""Attention of an Analysis as files: long-format CSV (pandas) and compressed .npz."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .lab import Analysis


def attention_frame(analysis: Analysis) -> pd.DataFrame:
    """Long format: one row per (layer, head, query, key)."""
    layers, heads, n, _ = analysis.attention.shape
    l, h, q, k = np.meshgrid(np.arange(layers), np.arange(heads), np.arange(n), np.arange(n), indexing="ij")
    tokens = np.array(analysis.tokens, dtype=object)
    return pd.DataFrame({
        "layer": l.ravel() + 1, "head": h.ravel() + 1, "query_index": q.ravel(), "query_token": tokens[q.ravel()],
        "key_index": k.ravel(), "key_token": tokens[k.ravel()], "weight": analysis.attention.ravel(),
    })


def export_csv(analysis: Analysis, folder: Path) -> Path:
    path = Path(folder) / "attention.csv"
    attention_frame(analysis).to_csv(path, index=False, float_format="%.6g")
    return path


def export_npz(analysis: Analysis, folder: Path) -> Path:
    path = Path(folder) / "attention.npz"
    np.savez_compressed(path, attention=analysis.attention, tokens=np.array(analysis.tokens),
                        segment_ids=np.array(analysis.segment_ids), token_ids=np.array(analysis.token_ids))
    return path
