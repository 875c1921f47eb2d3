"""Does the app's opt-in allocator setting (bertviz_lab/bert/allocator.py) still pay?

The same analyze() calls (the Run action's forward pass and capture) in two fresh processes,
one with glibc's defaults and one with keep_freed_memory(), side by side in one run.

    python benchmarks/bench_allocator.py
"""
from __future__ import annotations

import json
import sys

from sections import run_recorded

LENGTHS = (32, 128, 512)


def measure(keep: bool) -> dict[int, float]:
    from common import median_seconds

    from bertviz_lab import load
    from bertviz_lab.bert.runtime.allocator import keep_freed_memory

    applied = keep_freed_memory() if keep else False
    lab = load("default", device="cpu")
    out = {}
    for n in LENGTHS:
        text = " ".join(["word"] * (n - 2))
        out[n] = median_seconds(lambda text=text: lab.analyze(text), repeat=15 if n < 512 else 8)
    return {"applied": applied, **{str(k): v for k, v in out.items()}}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2] == "keep")))
        return
    from common import fresh_process_table

    fresh_process_table(__file__, ("default", "keep"), ("glibc defaults ms", "keep freed memory ms"), LENGTHS)


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("allocator", "Allocator setting: does keep_freed_memory() still pay?", __doc__, _entry)
