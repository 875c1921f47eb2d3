"""Keep freed large CPU buffers in the heap instead of handing them back to the OS.

Captured attention is many tensors of (heads, query, key) floats; with glibc's defaults each
forward pass maps fresh pages for them and pays a page fault per 4 KiB. Raising the mmap and
trim thresholds lets the next request reuse the same memory (the effect jemalloc/tcmalloc
give, as PyTorch's CPU performance guide recommends). Linux/glibc only; a no-op elsewhere.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
_done = False


def keep_freed_memory(threshold_bytes: int = 1 << 30) -> bool:
    global _done
    if _done or not sys.platform.startswith("linux"):
        return _done
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, min(threshold_bytes, 1 << 25)) == 1
        ok &= libc.mallopt(M_TRIM_THRESHOLD, threshold_bytes) == 1
    except (OSError, AttributeError):
        return False
    _done = bool(ok)
    return _done
