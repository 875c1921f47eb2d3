"""Small timing and memory helpers shared by the benchmark scripts."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path


def median_seconds(fn: Callable[[], object], repeat: int = 20, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int = 20, warmup: int = 3) -> dict[str, float]:
    """Time several functions round-robin so machine noise hits them alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def peak_rss_increase_mib(fn: Callable[[], object]) -> float:
    """Peak resident memory added while fn runs (Linux: resets the high-water mark first)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return float("nan")
    before = _status_kib("VmRSS")
    fn()
    return (_status_kib("VmHWM") - before) / 1024
