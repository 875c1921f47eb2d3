"""Small timing and memory helpers shared by the benchmark scripts."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
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


def fresh_process_table(script: str, modes: tuple[str, str], labels: tuple[str, str], sizes: Sequence[int],
                        rounds: int = 2) -> None:
    """A setting that changes a whole process, measured before and after: ``script --measure MODE`` in fresh
    processes, the two modes alternating ``rounds`` times (its last stdout line: JSON of seconds per size);
    prints per size the better of each mode's medians and their ratio (after / before)."""
    results: dict[str, list[dict]] = {}
    for _ in range(rounds):
        for mode in modes:
            run = subprocess.run([sys.executable, script, "--measure", mode], capture_output=True, text=True, check=True)
            results.setdefault(mode, []).append(json.loads(run.stdout.strip().splitlines()[-1]))
    widths = [max(len(label), 9) + 1 for label in labels]
    print(f"{'tokens':>6} {labels[0]:>{widths[0]}} {labels[1]:>{widths[1]}} {'ratio':>6}")
    for n in sizes:
        before, after = (min(r[str(n)] for r in results[mode]) * 1e3 for mode in modes)
        print(f"{n:>6} {before:>{widths[0]}.1f} {after:>{widths[1]}.1f} {after / before:>6.2f}")
