"""Commands that judge explanations: ``faithfulness`` (which ranking of the context tokens, from
which attention source, to trust: hide each ranking's top-k tokens and measure the drop in the
gold word's log-probability, AOPC, with ERASER's comprehensiveness and sufficiency)."""
from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path

from ..interventions.faithfulness import RANKINGS
from .options import WorkBar, add_model_options, command, count, emit, lab_from_args, positive_int

EXAMPLES = {
    "faithfulness": ["bertviz-lab faithfulness --max-sentences 50",
                     "bertviz-lab faithfulness --text-file sentences.txt --rankings globenc alti rollout --json"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "faithfulness", "which attention-based explanation to trust: hide each ranking's top-k tokens "
                                     "and measure the drop in log P(gold word) (AOPC), with ERASER's "
                                     "comprehensiveness and sufficiency for the top word", EXAMPLES["faithfulness"])
    p.add_argument("--text-file", type=Path, default=None,
                   help="one sentence per line (default: the shipped held-out lines)")
    p.add_argument("--max-sentences", type=positive_int, default=200)
    p.add_argument("--k", type=positive_int, default=5, help="hide the top 1..k tokens")
    p.add_argument("--rankings", "--sources", dest="rankings", nargs="+", default=None, metavar="RANKING",
                   help="the rankings to score (default: all; the random control is always scored): "
                        + ", ".join(f"'{name}'" for name in RANKINGS) + " (--sources is the old name of this flag, "
                        "kept as an alias for one release)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resamples", type=count, default=1000)
    add_model_options(p, needs_mlm_head=True)
    p.set_defaults(func=run_faithfulness)


def run_faithfulness(args: argparse.Namespace) -> int:
    from ..interventions.faithfulness import FaithfulnessSettings, faithfulness
    from ..resources import DEFAULT_MLM_HEAD
    from ..sentences import heldout_lines, read_lines, truncation_note

    lines = read_lines(args.text_file) if args.text_file else heldout_lines()
    lab = lab_from_args(args)
    settings = FaithfulnessSettings(k_max=args.k, seed=args.seed, max_sentences=args.max_sentences,
                                    rankings=tuple(args.rankings or RANKINGS))
    with WorkBar("faithfulness", "sentence", faithfulness_work(settings), "the first sentence") as bar:
        result = faithfulness(lab, lines, settings, progress=bar)
    out = {"k": args.k, "text_file": str(args.text_file or DEFAULT_MLM_HEAD / "heldout.txt"),
           **result.to_json(resamples=args.resamples, seed=args.seed)}
    note = truncation_note(result.truncated) if result.truncated else ""
    return emit(args, out, faithfulness_summary(out, note))


def faithfulness_work(settings) -> Callable[[int], str]:
    """What the estimate line says the work is, for a number of sentences: each ranking's top 1..k
    tokens hidden and ERASER's bins hidden and kept alone, batched into one pass per sentence."""
    from ..interventions.faithfulness import ERASER_BINS, check_rankings

    rankings, sets = len(check_rankings(settings.rankings)), settings.k_max + 2 * len(ERASER_BINS)

    def describe(sentences: int) -> str:
        return (f"{sentences:,} sentences x {rankings} rankings x ({settings.k_max} steps + {2 * len(ERASER_BINS)} "
                f"ERASER sets) = {sentences * rankings * sets:,} perturbed inputs, run as one batch per sentence")
    return describe


def faithfulness_summary(out: dict, note: str) -> Iterator[str]:
    yield (f"model: {out['model']}; AOPC over k = 0..{out['k']} (higher = more faithful); ERASER comprehensiveness "
           "(higher = more faithful) and sufficiency (lower = more faithful) of the top word; 95% bootstrap intervals")
    for row in sorted(out["rankings"], key=lambda r: -r["aopc"] if r["n"] else float("inf")):
        if not row["n"]:
            yield f"{row['ranking']:<28} not scored on any sentence"
            continue
        yield (f"{row['ranking']:<28} AOPC {row['aopc']:6.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]  "
               f"comp. {row['comprehensiveness']:.3f} [{row['comprehensiveness_ci_low']:.3f}, "
               f"{row['comprehensiveness_ci_high']:.3f}]  suff. {row['sufficiency']:.3f} "
               f"[{row['sufficiency_ci_low']:.3f}, {row['sufficiency_ci_high']:.3f}]  n={row['n']}")
    yield "paired differences (same sentences):"
    yield from (f"  {difference['verdict']}" for difference in out["differences"])
    yield out["conclusion"]
    if note:
        yield note
