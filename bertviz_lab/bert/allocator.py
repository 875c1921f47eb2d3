"""An opt-in process-wide setting: keep freed large CPU buffers in the heap instead of handing
them back to the OS.

Captured attention is many tensors of (heads, query, key) floats; with glibc's defaults each
forward pass maps fresh pages for them and pays a page fault per 4 KiB. Raising the mmap and
trim thresholds lets the next request reuse the same memory (the effect jemalloc/tcmalloc
give, as PyTorch's CPU performance guide recommends). It changes the whole process, so the
library never calls it by itself: the app does (``--no-keep-freed-memory`` turns it off), and
benchmarks/bench_allocator.py measures what it buys. Linux/glibc only; a no-op elsewhere.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def keep_freed_memory(threshold_bytes: int = 1 << 30) -> bool:
    """Raise glibc's mmap/trim thresholds for this process; True when glibc accepted them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, min(threshold_bytes, 1 << 25)) == 1
        ok &= libc.mallopt(M_TRIM_THRESHOLD, threshold_bytes) == 1
    except (OSError, AttributeError):
        return False
    return bool(ok)
