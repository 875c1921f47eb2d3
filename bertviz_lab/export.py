"""Attention of an Analysis as files: long-format CSV (pandas) and compressed .npz, each written
under a temporary name and renamed when complete, so an interrupted export never leaves a file
that looks whole."""
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


CSV_MAX_ROWS = 2_000_000  # ~70 MB of CSV; larger analyses export as .npz


def csv_rows(analysis: Analysis) -> int:
    return int(analysis.attention.size)


def _atomic(path: Path, write) -> Path:
    tmp = path.with_name(f".{path.name}.partial")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def export_csv(analysis: Analysis, folder: Path, max_rows: int | None = CSV_MAX_ROWS) -> Path:
    """One row per (layer, head, query, key); refuses analyses over ``max_rows`` rows (use .npz)."""
    if max_rows is not None and csv_rows(analysis) > max_rows:
        raise ValueError(f"the CSV would have {csv_rows(analysis):,} rows (limit {max_rows:,}); export .npz instead")
    return _atomic(Path(folder) / "attention.csv",
                   lambda tmp: attention_frame(analysis).to_csv(tmp, index=False, float_format="%.6g"))


def export_npz(analysis: Analysis, folder: Path) -> Path:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, attention=analysis.attention, tokens=np.array(analysis.tokens),
                                segment_ids=np.array(analysis.segment_ids), token_ids=np.array(analysis.token_ids))

    return _atomic(Path(folder) / "attention.npz", write)
