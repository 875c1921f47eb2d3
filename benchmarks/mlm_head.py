"""The shipped masked-word and next-sentence head (``default``), re-measured on the held-out slices it
ships with (assets/minilm-mlm/: whole passages of UD EWT, GUM and LinES and WordNet lines, never
trained on) and on the teaching set, float16 weights as shipped: masked-word top-1 / top-5 per source
and pooled over the running text ("natural English"), with Wilson intervals; next-sentence accuracy
with its bootstrap interval; teaching top 1 / top 5 of 42. The training chain that made the head,
its curve and the runs measured but not shipped are in docs/HISTORY.md and the model card.

    python benchmarks/mlm_head.py [--write]
"""
from __future__ import annotations

import time

from sections import markdown_table, run_recorded

from bertviz_lab import load
from bertviz_lab.mlm.report import heldout_report
from bertviz_lab.resources import DEFAULT_MLM_HEAD


def interval(r: dict, key: str) -> str:
    low, high = r[f"{key}_ci"]
    return f"{r[key]:.3f} [{low:.3f}, {high:.3f}]"


def main() -> None:
    start = time.perf_counter()
    lab = load("default", device="cpu")
    report = heldout_report(lab, DEFAULT_MLM_HEAD)
    rows = [[name, interval(r, "top1"), interval(r, "top5"), r["n"]] for name, r in report["mlm"].items()]
    natural = report["natural_english"]
    rows.append(["running text pooled (natural English)", interval(natural, "top1"), interval(natural, "top5"),
                 natural["n"]])
    print(f"model: {report['model']}\n")
    print(markdown_table(["held-out slice", "top-1 [95% CI]", "top-5 [95% CI]", "n"], rows))
    nsp = report["nsp"]
    print(f"\nnext sentence: {nsp['accuracy']:.3f} [{nsp['ci'][0]:.3f}, {nsp['ci'][1]:.3f}] over {nsp['n']} pairs "
          f"(IsNext {nsp['is_next']['accuracy']:.3f}, NotNext {nsp['not_next']['accuracy']:.3f})")
    teaching = report["teaching"]
    print(f"teaching set: top 1 {teaching['top1_hits']} of {teaching['n']}, top 5 {teaching['top5_hits']} of "
          f"{teaching['n']}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    run_recorded("mlm-head", "The shipped masked-word and next-sentence head, on its held-out slices", __doc__, main)
