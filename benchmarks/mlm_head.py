"""The shipped masked-word and next-sentence head (``default``), re-measured on the held-out slices it
ships with (assets/minilm-mlm/: whole passages of UD EWT, GUM, LinES and Brown and WordNet lines, never
trained on) and on the teaching set, float16 weights as shipped: masked-word top-1 / top-5 per source
and pooled over the running text ("natural English"), with Wilson intervals; next-sentence accuracy
with its bootstrap interval; teaching top 1 / top 5 of 42, per topic; the top predictions for "The
capital of France is [MASK].". The training chain that made the head, its curve and the runs measured
but not shipped are in docs/HISTORY.md and the model card.

With ``--write`` the same measurement also writes the README's section ``readme-mlm-figures`` (the
teaching table and the France prediction), so the README quotes the shipped head, never typed figures
(tests/test_readme_figures.py checks them against the head).

    python benchmarks/mlm_head.py [--write]
"""
from __future__ import annotations

import sys
import time

from sections import ROOT, command_line, markdown_table, run_recorded, write_section

from bertviz_lab import load
from bertviz_lab.mlm.model_card import running_size, shipped_sources
from bertviz_lab.mlm.report import heldout_report
from bertviz_lab.mlm.teaching import FRANCE, topic_label
from bertviz_lab.resources import DEFAULT_MLM_HEAD

README = ROOT / "README.md"
README_SECTION = "readme-mlm-figures"


def interval(r: dict, key: str) -> str:
    low, high = r[f"{key}_ci"]
    return f"{r[key]:.3f} [{low:.3f}, {high:.3f}]"


def teaching_table(teaching: dict) -> str:
    """Per topic and in all: how many sentences have an accepted answer at top 1 and in the top 5."""
    rows = [[topic_label(t), r["n"], r["top1_hits"], r["top5_hits"]] for t, r in teaching["topics"].items()]
    rows.append(["**all**", teaching["n"], f"**{teaching['top1_hits']} ({teaching['top1']:.0%})**",
                 f"**{teaching['top5_hits']} ({teaching['top5']:.0%})**"])
    return markdown_table(["topic", "n", "accepted at top 1", "accepted in top 5"], rows).replace(
        "|---|---|---|---|", "|---|---:|---:|---:|")


def france_line(predictions: list[tuple[str, float]]) -> str:
    (word, p), rest = predictions[0], predictions[1:]
    after = ", ".join(f"{w} {q:.3f}" for w, q in rest)
    return f'"{FRANCE}" → **{word}** (probability {p:.3f}; then {after})'


def measure() -> dict:
    """One load of the shipped head, every figure of both sections from it."""
    lab = load("default", device="cpu")
    report = heldout_report(lab, DEFAULT_MLM_HEAD)
    predictions = lab.analyze(FRANCE, top_k=5).mlm[0].predictions
    return {"report": report, "weights": lab.checkpoint_info().describe(),
            "france": [(p.token, p.probability) for p in predictions]}


def main(measured: dict) -> None:
    start = time.perf_counter()
    measured.update(measure())
    report = measured["report"]
    rows = [[name, interval(r, "top1"), interval(r, "top5"), r["n"]] for name, r in report["mlm"].items()]
    natural = report["natural_english"]
    rows.append(["running text pooled (natural English)", interval(natural, "top1"), interval(natural, "top5"),
                 natural["n"]])
    print(f"model: {measured['weights']}\n")
    print(markdown_table(["held-out slice", "top-1 [95% CI]", "top-5 [95% CI]", "n"], rows))
    nsp = report["nsp"]
    print(f"\nnext sentence: {nsp['accuracy']:.3f} [{nsp['ci'][0]:.3f}, {nsp['ci'][1]:.3f}] over {nsp['n']} pairs "
          f"(IsNext {nsp['is_next']['accuracy']:.3f}, NotNext {nsp['not_next']['accuracy']:.3f})")
    teaching = report["teaching"]
    print(f"teaching set: top 1 {teaching['top1_hits']} of {teaching['n']}, top 5 {teaching['top5_hits']} of "
          f"{teaching['n']}\n")
    print(teaching_table(teaching))
    print(f"\n{france_line(measured['france'])}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


def readme_body(measured: dict) -> str:
    """The README's account of the shipped head: the weights measured, the France answer, the teaching table."""
    teaching = measured["report"]["teaching"]
    return f"""Measured on the shipped weights (float16, as `default` loads them): {measured['weights']}.

{france_line(measured['france'])}

The teaching set (`assets/teaching_cloze.tsv`: {teaching['n']} sentences a teacher types first, each with its
accepted answers; `python -m bertviz_lab eval-mlm --teaching`):

{teaching_table(teaching)}

On text held out and never trained on (natural English: UD EWT, GUM, LinES and Brown passages, one word
masked per sentence; WordNet glosses; next-sentence pairs from other documents) its figures, with
intervals, are in the model card (`assets/minilm-mlm/MODEL_CARD.md`) and in BENCHMARKS.md's section
`mlm-head`, which the run that wrote this section measured. MiniLM-L6 is small and was trained on
{running_size(shipped_sources())}: expect misses on facts and rare words, and
low probabilities even when the first answer is right."""


def write_readme(measured: dict, command: str) -> None:
    text = README.read_text(encoding="utf-8")
    if f"<!-- begin {README_SECTION}:" not in text or f"<!-- end {README_SECTION} -->" not in text:
        raise SystemExit(f"README.md has no {README_SECTION} markers: put them where the section belongs")
    write_section(README_SECTION, "benchmarks/mlm_head.py", "How good the shipped heads are", readme_body(measured),
                  path=README, command=command)
    print(f"wrote the section {README_SECTION!r} of README.md")


if __name__ == "__main__":
    write, command, measured = "--write" in sys.argv[1:], command_line(), {}
    run_recorded("mlm-head", "The shipped masked-word and next-sentence head, on its held-out slices", __doc__,
                 lambda: main(measured))
    if write:
        write_readme(measured, command)
