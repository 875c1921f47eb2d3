"""Results as files, each written under a temporary name and renamed when complete, so an
interrupted export never leaves a file that looks whole: attention of an Analysis as long-format
CSV (pandas) and compressed .npz, and any set of text files at once (``write_atomically``)."""
from __future__ import annotations

import io
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


PARQUET_NOTE = "pip install pyarrow to have the large tables as Parquet too"


def parquet_bytes(frame: pd.DataFrame) -> bytes | None:
    """``frame`` as Parquet (pandas' own writer, so ``pd.read_parquet`` gives it back, types kept), or None
    when pyarrow is not installed (the CSV beside it holds the same table; PARQUET_NOTE says how)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def with_parquet(contents: dict[str, tuple[str, str | bytes]], tables: dict[str, tuple[str, pd.DataFrame]]
                 ) -> dict[str, tuple[str, str | bytes]]:
    """``contents`` plus each of ``tables`` (key -> (file name, frame)) as Parquet, when pyarrow is installed."""
    out = dict(contents)
    for key, (name, frame) in tables.items():
        data = parquet_bytes(frame)
        if data is not None:
            out[key] = (name, data)
    return out


def write_atomically(out: Path, contents: dict[str, tuple[str, str | bytes]]) -> dict[str, Path]:
    """key -> (file name, text or bytes): every file to a temporary name first, renamed at the end."""
    out.mkdir(parents=True, exist_ok=True)
    temps: dict[str, Path] = {}
    try:
        for key, (name, text) in contents.items():
            temps[key] = out / f".{name}.tmp"
            if isinstance(text, bytes):
                temps[key].write_bytes(text)
            else:
                temps[key].write_text(text, encoding="utf-8")
    except OSError:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    files = {}
    for key, tmp in temps.items():
        files[key] = out / contents[key][0]
        tmp.replace(files[key])
    return files


def check_writable(out: Path) -> None:
    """Fail before hours of work, not after: the folder must exist (or be creatable) and take a file."""
    out.mkdir(parents=True, exist_ok=True)
    trial = out / ".bertviz-lab-write-test"
    trial.write_text("ok", encoding="utf-8")
    trial.unlink()
