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
M_ARENA_MAX = -8
ARENAS = 2  # malloc arenas in all: each keeps up to the trim threshold of freed memory


def keep_freed_memory(threshold_bytes: int = 1 << 30, arenas: int = ARENAS) -> bool:
    """Raise glibc's mmap/trim thresholds for this process, and cap its malloc arenas; True when glibc accepted.

    Each arena keeps up to ``threshold_bytes`` of freed memory, and glibc gives threads up to 8 arenas per core:
    a server's many threads (Gradio's workers, the gate's) then kept ever more freed memory, and a 16-visitor
    soak grew without a plateau (issue 56: 2.9 -> 3.3 GB in its last third, +6 %). With two arenas it levelled
    off (last third within 5 % of the peak before it; BENCHMARKS.md, bench_soak). Call it before the server
    starts its threads: the cap holds for arenas made after it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, min(threshold_bytes, 1 << 25)) == 1
        ok &= libc.mallopt(M_TRIM_THRESHOLD, threshold_bytes) == 1
        ok &= libc.mallopt(M_ARENA_MAX, arenas) == 1
    except (OSError, AttributeError):
        return False
    return bool(ok)
