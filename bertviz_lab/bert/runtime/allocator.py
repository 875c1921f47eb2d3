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
import threading

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENAS = 2  # malloc arenas in all: each keeps up to the trim threshold of freed memory
TRIM_EVERY = 30.0  # seconds between two hand-backs of freed memory by a server (``trim_periodically``)


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
        libc = _libc()
        ok = libc.mallopt(M_MMAP_THRESHOLD, min(threshold_bytes, 1 << 25)) == 1
        ok &= libc.mallopt(M_TRIM_THRESHOLD, threshold_bytes) == 1
        ok &= libc.mallopt(M_ARENA_MAX, arenas) == 1
    except (OSError, AttributeError):
        return False
    return bool(ok)


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def release_freed_memory() -> bool:
    """Hand the freed pages of every arena back to the OS (glibc's ``malloc_trim(0)``); True when some were.

    The thresholds above keep the freed memory at the top of each heap for the next request; what freed chunks
    lie between live ones (an evicted session's analysis amid newer ones) stays mapped whatever the threshold,
    and under a long mixed load that fragmentation grew by ~50 MB a minute (issue 56, BENCHMARKS.md soak).
    ``malloc_trim`` also gives back those interior pages (``madvise``), which only a call like this one does."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return _libc().malloc_trim(0) == 1
    except (OSError, AttributeError):
        return False


def trim_periodically(every: float = TRIM_EVERY) -> threading.Event:
    """Start a daemon thread that calls ``release_freed_memory`` every ``every`` seconds; set the returned
    event to stop it. A server process opts in (as for ``keep_freed_memory``): the next request after a trim
    faults its pages in again, a few milliseconds once per ``every`` seconds, not per request."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            release_freed_memory()

    threading.Thread(target=loop, name="bertviz-lab-trim", daemon=True).start()
    return stop
