"""Single-head ablation sweep (every head zeroed alone) on the embedded model for a 24-token
sentence with one [MASK]: batched (all ablated copies in one forward) vs one forward per head.

    python benchmarks/bench_ablation.py
"""
from __future__ import annotations

import numpy as np
from common import median_seconds
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.interventions import ablation_sweep
from bertviz_lab.interventions.sweeps import AblationRun


def timed(fn, repeat=5):
    return median_seconds(fn, repeat=repeat, warmup=1)


def main() -> None:
    lab = load("default", device="cpu")
    words = ("the old man who lived next to the station walked his small dog to the [MASK] every single morning "
             "before he went to work in the city").split()
    text = next(" ".join(words[:k]) for k in range(3, len(words) + 1) if len(lab.encode(" ".join(words[:k])).ids) >= 24)
    if "[MASK]" not in text:
        raise SystemExit("the benchmark sentence lost its [MASK]")
    n = len(lab.encode(text).ids)
    batched = ablation_sweep(lab, text, run=AblationRun(batched=True)).drops
    single = ablation_sweep(lab, text, run=AblationRun(batched=False)).drops
    assert np.allclose(batched, single, atol=1e-4)
    t_batched = timed(lambda: ablation_sweep(lab, text, run=AblationRun(batched=True)))
    t_single = timed(lambda: ablation_sweep(lab, text, run=AblationRun(batched=False)))
    heads = lab.n_layers * lab.n_heads
    print(f"{heads} heads, {n} tokens, model {lab.name}")
    print(f"batched sweep:      {t_batched * 1e3:7.1f} ms (target <= 1000 ms)")
    print(f"one head at a time: {t_single * 1e3:7.1f} ms")
    print(f"ratio one-at-a-time / batched: {t_single / t_batched:.1f}x (target >= 3x)")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("ablation", "Single-head ablation sweep: batched vs one forward per head", __doc__, _entry)
