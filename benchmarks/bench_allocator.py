"""Does the app's opt-in allocator setting (bertviz_lab/bert/allocator.py) still pay?

The same analyze() calls (the Run action's forward pass and capture) in two fresh processes,
one with glibc's defaults and one with keep_freed_memory(), side by side in one run.

    python benchmarks/bench_allocator.py
"""
from __future__ import annotations

import json
import subprocess
import sys

from sections import run_recorded

LENGTHS = (32, 128, 512)


def measure(keep: bool) -> dict[int, float]:
    from common import median_seconds

    from bertviz_lab import load
    from bertviz_lab.bert.allocator import keep_freed_memory

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
    results = {}
    for mode in ("default", "keep", "default", "keep"):  # interleaved fresh processes
        run = subprocess.run([sys.executable, __file__, "--measure", mode], capture_output=True, text=True, check=True)
        row = json.loads(run.stdout.strip().splitlines()[-1])
        results.setdefault(mode, []).append(row)
    print(f"{'tokens':>6} {'glibc defaults ms':>18} {'keep freed memory ms':>21} {'ratio':>6}")
    for n in LENGTHS:
        base = min(r[str(n)] for r in results["default"]) * 1e3
        keep = min(r[str(n)] for r in results["keep"]) * 1e3
        print(f"{n:>6} {base:>18.1f} {keep:>21.1f} {keep / base:>6.2f}")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("allocator", "Allocator setting: does keep_freed_memory() still pay?", __doc__, _entry)
