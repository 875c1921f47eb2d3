"""Interventions over sentence sets (issue 12), embedded model, CPU, one run:

1. the directional sweep with symmetric sinks and its matched random controls over 500 held-out
   lines (P(gold) both / left / right / controls, each with its 95% interval; target <= 60 s),
   and the strict masks for comparison;
2. the head-ablation sweep (72 heads) with zero and mean ablation over 200 sentences
   (target <= 60 s each), batched vs one forward per head (target >= 3x).

    python benchmarks/bench_sets.py
"""
from __future__ import annotations

import time

from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.interventions.sets import SetSettings, ablation_set, directional_set
from bertviz_lab.interventions.sweeps import AblationRun, ablation_drops, mean_head_outputs
from bertviz_lab.resources import DEFAULT_MLM_HEAD, SAMPLE_TREEBANK
from bertviz_lab.sentences import masked_items
from bertviz_lab.treebank import read_conllu


def main() -> None:
    lab = load("default", device="cpu")
    lines = (DEFAULT_MLM_HEAD / "heldout.txt").read_text().splitlines()
    for sinks in ("symmetric", "strict"):
        start = time.perf_counter()
        effects = directional_set(lab, lines, sinks=sinks, settings=SetSettings(max_sentences=500)).effects
        seconds = time.perf_counter() - start
        cells = ", ".join(f"{c} {float(e.mean):.3f} [{float(e.ci_low):.3f}, {float(e.ci_high):.3f}]"
                          for c, e in effects.items())
        print(f"directional, {sinks} sinks, n={effects['both'].n}, {seconds:.1f} s: {cells}")
    reference = mean_head_outputs(lab, [s.text for s in read_conllu(SAMPLE_TREEBANK)])
    for name, ref in (("zero", None), ("mean", reference)):
        start = time.perf_counter()
        result = ablation_set(lab, lines, ref, settings=SetSettings(max_sentences=200))
        seconds = time.perf_counter() - start
        best = result.most_important
        e = best.effect
        print(f"ablation ({name}), 72 heads x {result.effect.n} sentences: {seconds:.1f} s; most important head "
              f"{best.layer + 1}-{best.head + 1} (chosen on {best.selected_on} sentences), drop on the other "
              f"{e.n}: {float(e.mean):.3f} [{float(e.ci_low):.3f}, {float(e.ci_high):.3f}]")
    items = masked_items(lab, lines, 0, 20)
    start = time.perf_counter()
    for enc, position, gold in items:
        ablation_drops(lab, enc, [position], [gold])
    batched = time.perf_counter() - start
    start = time.perf_counter()
    for enc, position, gold in items:
        ablation_drops(lab, enc, [position], [gold], run=AblationRun(batched=False))
    loop = time.perf_counter() - start
    print(f"ablation over {len(items)} sentences: batched {batched:.1f} s, one forward per head {loop:.1f} s, "
          f"ratio {loop / batched:.1f}x (target >= 3x)")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("sets", "Interventions over sentence sets: time and held-out most important head", __doc__, _entry)
