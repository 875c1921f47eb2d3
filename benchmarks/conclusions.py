"""What the tool concludes, measured on UD English EWT *dev* (never the test split), each comparison
paired over the same sentences with its 95% interval and the sentence that interval supports
(issue 28):

- directional: P(gold) with both sides, left only, right only and the matched controls (symmetric
  and strict sinks), and the paired differences each claim rests on;
- positional: the sinusoidal probe against its norm-matched random control;
- faithfulness: AOPC of every ranking, each against random and the top one against the rest;
- syntax: how many relations' best heads beat the offset baseline in sample and held out, and the
  null model's seed-to-seed spread (5 seeds).

    python benchmarks/conclusions.py --conllu data/ud/en_ewt-ud-dev.conllu --write

``--write`` puts each part's section into BENCHMARKS.md (benchmarks/sections.py); without it the
sections are printed. Models: ``default`` (it has the MLM head) for the masked-word parts, the
published weights for syntax, as the CLI chooses them.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sections import markdown_table, write_section  # noqa: E402  (benchmarks/ is the script's folder)

from bertviz_lab import load
from bertviz_lab.bert import ORIGINAL_CHECKPOINT
from bertviz_lab.interventions import make_intervention
from bertviz_lab.interventions.faithfulness import FaithfulnessSettings, faithfulness
from bertviz_lab.interventions.sets import SetSettings, directional_set, intervention_and_control
from bertviz_lab.sentences import truncation_note
from bertviz_lab.syntax.run import run_syntax
from bertviz_lab.syntax.summary import Settings
from bertviz_lab.treebank import read_conllu, sentence_texts

SCRIPT = "benchmarks/conclusions.py"
PARTS = ("directional", "positional", "faithfulness", "syntax")


def interval(effect) -> str:
    return f"{float(effect.mean):.3f} [{float(effect.ci_low):.3f}, {float(effect.ci_high):.3f}]"


def differences_table(differences) -> str:
    return markdown_table(["a - b", "difference [95% CI]", "n", "what the interval supports"],
                          [[f"{d.a} - {d.b}", interval(d.effect), d.effect.n, d.verdict()] for d in differences])


def directional(lab, lines: list[str], n: int) -> str:
    parts = []
    for sinks in ("symmetric", "strict"):
        result = directional_set(lab, lines, sinks=sinks, settings=SetSettings(max_sentences=n))
        rows = [[c, interval(e), e.n] for c, e in result.effects.items()]
        parts.append(f"**{sinks} sinks** (P(gold) of one seeded masked word per sentence; {lab.name})\n\n"
                     + markdown_table(["condition", "mean P(gold) [95% CI]", "n"], rows) + "\n\n"
                     + differences_table(result.differences) + "\n\n" + truncation_note(result.truncated))
    return "\n\n".join(parts)


def positional(lab, lines: list[str], n: int) -> str:
    result = intervention_and_control(lab, lines, make_intervention("sinusoidal-positions"),
                               make_intervention("random-positions"), SetSettings(max_sentences=n))
    rows = [[name, *(interval(s.effects[m]) for m in s.effects)] for name, s in
            (("sinusoidal-positions (intervention)", result.intervention), ("random-positions (control)", result.control))]
    return (f"Learned position embeddings replaced by the fixed sinusoidal table, or by random vectors of\n"
            f"the same row norms (the control); {lab.name}.\n\n"
            + markdown_table(["intervention", "mean JS (nats) [95% CI]", "change in P(gold) [95% CI]"], rows)
            + "\n\n" + differences_table(result.differences))


def faith(lab, lines: list[str], n: int) -> str:
    result = faithfulness(lab, lines, FaithfulnessSettings(max_sentences=n))

    def cell(r, key):
        return f"{r[key]:.3f} [{r[key + '_ci_low']:.3f}, {r[key + '_ci_high']:.3f}]"

    rows = [[r["source"], f"{r['aopc']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]", cell(r, "comprehensiveness"),
             cell(r, "sufficiency"), r["n"]] for r in sorted(result.table(), key=lambda r: -r["aopc"])]
    return (f"AOPC over k = 0..5 hidden context tokens (higher = hiding what the source points at hurts\n"
            f"more), and ERASER's comprehensiveness (higher = more faithful) and sufficiency (lower = more\n"
            f"faithful) of the model's top word, mean over the bins 1, 5, 10, 20 and 50 % of the context;\n"
            f"{result.model}.\n\n" + markdown_table(["ranking", "AOPC [95% CI]", "comprehensiveness [95% CI]",
                                                      "sufficiency [95% CI]", "n"], rows) + "\n\n"
            + differences_table(result.differences()) + f"\n\n**Conclusion printed by the tool:** {result.conclusion()}.")


def syntax(conllu: Path, device: str) -> str:
    lab = load(ORIGINAL_CHECKPOINT, device=device)
    summary = run_syntax(lab, read_conllu(conllu), Settings(resamples=1000, seed=0, min_arcs=50, null_seeds=5)).summary
    best = summary.best_heads
    listed = best[best.relation != "all"]
    in_sample = listed.p_value_in_sample < 0.05
    held_out = listed.heldout_p_value < 0.05
    lost = sorted(listed.relation[in_sample & ~held_out])
    rows = [[r.relation, r["count"], f"{r.best_head} {r.direction}", f"{r.accuracy:.3f}", f"{r.p_value_in_sample:.3f}",
             f"{r.heldout_head} {r.heldout_direction}", f"{r.heldout_difference:+.3f} "
             f"[{r.heldout_difference_ci_low:+.3f}, {r.heldout_difference_ci_high:+.3f}]", f"{r.heldout_p_value:.3f}",
             f"{r.null_accuracy:.3f} [{r.null_ci_low:.3f}, {r.null_ci_high:.3f}]",
             f"{r.null_seed_min:.3f}-{r.null_seed_max:.3f}"] for _, r in best.iterrows()]
    spread = (listed.null_seed_max - listed.null_seed_min)
    return (f"{summary.sentences_used} sentences, {summary.checkpoint.describe()}; relations with >= 50 arcs; "
            f"p-values one-sided, head minus the best offset baseline (paired bootstrap, 1,000 resamples).\n\n"
            f"- significant (p < 0.05) **in sample** (head and baseline chosen on all sentences): "
            f"**{int(in_sample.sum())} of {len(listed)}** relations\n"
            f"- significant **held out** (chosen on half the sentences, compared on the other half): "
            f"**{int(held_out.sum())} of {len(listed)}**\n"
            f"- significant in sample but not held out: {', '.join(lost) or 'none'}\n"
            f"- null model (5 seeds): the best random head's accuracy differs between seeds by "
            f"{np.median(spread):.3f} (median over relations), at most {spread.max():.3f}\n\n"
            + markdown_table(["relation", "arcs", "best head (in sample)", "accuracy", "p in sample", "held-out head",
                              "held-out head - baseline [95% CI]", "p held out", "null model [95% CI]",
                              "null, seed range"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conllu", type=Path, required=True, help="UD English EWT dev (en_ewt-ud-dev.conllu)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--sentences", type=int, default=300, help="sentences for the masked-word sets")
    parser.add_argument("--faithfulness-sentences", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--write", action="store_true", help="write the sections into BENCHMARKS.md")
    args = parser.parse_args()
    if "test" in args.conllu.name:
        parser.error("the test split is for final evaluation only; use the dev split")
    lines = sentence_texts(args.conllu)
    lab = load("default", device=args.device) if set(args.parts) - {"syntax"} else None
    made = {
        "directional": lambda: ("Directional masks and their controls on EWT dev",
                                directional(lab, lines, args.sentences)),
        "positional": lambda: ("The sinusoidal probe and its norm-matched control on EWT dev",
                               positional(lab, lines, args.sentences)),
        "faithfulness": lambda: ("Faithfulness of token rankings on EWT dev",
                                 faith(lab, lines, args.faithfulness_sentences)),
        "syntax": lambda: ("Best heads in sample and held out, and the null model's seeds, on EWT dev",
                           syntax(args.conllu, args.device)),
    }
    for part in args.parts:
        title, body = made[part]()
        body = f"Data: {args.conllu.name} (UD English EWT dev, CC BY-SA 4.0).\n\n{body}"
        if args.write:
            write_section(f"conclusions-{part}", SCRIPT, title, body)
            print(f"wrote the {part} section")
        else:
            print(f"### {title}\n\n{body}\n")


if __name__ == "__main__":
    main()
