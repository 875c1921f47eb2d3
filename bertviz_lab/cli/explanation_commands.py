"""Commands that judge explanations: ``faithfulness`` (which ranking of the context tokens, from
which attention source, to trust: hide each ranking's top-k tokens and measure the drop in the
gold word's log-probability, AOPC, with ERASER's comprehensiveness and sufficiency; or, with
``--protocol naopc-sst2``, Edin et al.'s published protocol for a sentiment classifier with NAOPC
bounds, ``interventions/naopc.py``)."""
from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from itertools import accumulate
from pathlib import Path

from ..bert.loading.checkpoints import SST2_CHECKPOINTS
from ..interventions.faithfulness import RANKINGS
from .options import (
    WorkBar,
    add_engine_options,
    add_model_options,
    command,
    count,
    emit,
    engine_from_args,
    lab_from_args,
    positive_int,
    seed,
)

EXAMPLES = {
    "faithfulness": ["bertviz-lab faithfulness --max-sentences 50",
                     "bertviz-lab faithfulness --protocol naopc-sst2 --model textattack/bert-base-uncased-SST-2"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "faithfulness", "which attention-based explanation to trust: hide each ranking's top-k tokens "
                                     "and measure the drop in log P(gold word) (AOPC), with ERASER's "
                                     "comprehensiveness and sufficiency for the top word", EXAMPLES["faithfulness"])
    p.add_argument("--text-file", type=Path, default=None,
                   help="one sentence per line (default: the shipped held-out lines)")
    p.add_argument("--max-sentences", type=positive_int, default=200)
    p.add_argument("--k", type=positive_int, default=5, help="hide the top 1..k tokens")
    p.add_argument("--rankings", dest="rankings", nargs="+", default=None, metavar="RANKING",
                   help="the rankings to score (default: all; the random control is always scored): "
                        + ", ".join(f"'{name}'" for name in RANKINGS))
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--resamples", type=count, default=1000)
    p.add_argument("--protocol", choices=("ours", "naopc-sst2"), default="ours",
                   help="'ours' (default): hide tokens from attention, masked-word predictions; 'naopc-sst2': Edin et "
                        "al.'s released protocol for a sequence classifier (words replaced by [MASK] cumulatively in "
                        "rank order, mean drop in P(class 1) over every step) with exact NAOPC bounds; its weights are "
                        "the shipped SST-2 classifier 'sst2' unless --model names others")
    p.add_argument("--sentences", type=Path, default=None,
                   help="naopc-sst2: a tab-separated file with a header, a 'sentence' (or 'text') column and a label "
                        "column (GLUE's SST-2 layout), or a .csv such as the paper's data/sst2_test_short.csv; the "
                        "rows labelled 1 are scored (default: that file, shipped in assets/naopc)")
    p.add_argument("--label-column", default="label", help="naopc-sst2: the label column of --sentences")
    add_model_options(p, needs_mlm_head=True)
    add_engine_options(p)
    p.set_defaults(func=run_faithfulness)


def run_faithfulness(args: argparse.Namespace) -> int:
    from ..interventions.faithfulness import FaithfulnessSettings
    from ..tasks.faithfulness_check import FaithfulnessRequest, faithfulness_check

    if args.protocol == "naopc-sst2":
        return run_naopc(args)
    if args.sentences is not None:
        from ..lab import InputError
        raise InputError("--sentences is for --protocol naopc-sst2; the default protocol reads --text-file")
    from ..sentences import truncation_note

    settings = FaithfulnessSettings(k_max=args.k, seed=args.seed, max_sentences=args.max_sentences,
                                    rankings=tuple(args.rankings or RANKINGS))
    request = FaithfulnessRequest(str(args.text_file) if args.text_file else None, settings, args.resamples,
                                  engine_from_args(args))
    lab = lab_from_args(args)
    with WorkBar("faithfulness", "sentence", faithfulness_work(settings), "sentence",
                 cost=faithfulness_cost(lab, request)) as bar:
        record = faithfulness_check(request, lab, progress=bar)
    out = record.to_json()
    note = truncation_note(record.result.truncated) if record.result.truncated else ""
    return emit(args, out, faithfulness_summary(out, note))


def faithfulness_cost(lab, request) -> Callable[[int], float]:
    """The work of the check's first k sentences, for the estimate: a sentence costs its tokens (measured: its
    time over its tokens varies 18 % between sentences, its time alone 44 %), in the order the check takes them
    (the lines it keeps: ``faithfulness.scored_items``), read once when the estimate is made."""
    from ..interventions.faithfulness import scored_items

    cumulative: list[float] = []

    def cost(k: int) -> float:
        if not cumulative:
            cumulative.extend(accumulate((len(enc.ids) for enc, _, _ in
                                          scored_items(lab, request.lines(), request.settings)), initial=0))
        return cumulative[min(k, len(cumulative) - 1)]
    return cost


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


EXPLAINING = 290  # a sentence's explanations cost about as much as 290 of its masked inputs (benchmarks/bench_estimates.py)


def naopc_cost(lab, lines: list[str]) -> Callable[[int], float]:
    """The work of the protocol's first k sentences, for the estimate: a sentence in bounds costs its tokens x
    (2^words masked inputs + its explanations), one out of bounds nearly nothing (it is counted, not run)."""
    from ..interventions.naopc import MAX_TOKENS, MAX_WORDS, out_of_bounds, word_groups

    weights = []
    for line in (line for line in lines if line.strip()):
        enc = lab.encode(line, truncate=True)
        groups = word_groups(lab, enc)
        weights.append(0.0 if out_of_bounds(enc, groups, MAX_WORDS, MAX_TOKENS) else
                       len(enc.ids) * (2 ** len(groups) + EXPLAINING))
    cumulative = [0.0, *accumulate(weights)]
    return lambda k: cumulative[min(k, len(weights))]


SST2_CHECKPOINT = SST2_CHECKPOINTS[0]  # the protocol's weights when none are named: the shipped classifier


def run_naopc(args: argparse.Namespace) -> int:
    """Edin et al.'s protocol on the positive rows of --sentences (or every line of --text-file). The file
    is read before the model loads, so whatever is wrong with it is one sentence at once (naopc.read_text)."""
    from ..interventions.naopc import (
        MAX_TOKENS,
        MAX_WORDS,
        check_names,
        naopc,
        read_labelled,
        read_sentence_lines,
    )
    from ..resources import NAOPC_SHORT_SET

    if args.sentences is None and args.text_file is None:
        args.sentences = NAOPC_SHORT_SET
    lines = (read_labelled(args.sentences, args.label_column) if args.sentences
             else read_sentence_lines(args.text_file))
    lines = [line for line in lines if line.strip()][:args.max_sentences]
    names = check_names(args.rankings)
    lab = lab_from_args(args, args.model or SST2_CHECKPOINT)

    def describe(sentences: int) -> str:
        return (f"{sentences:,} sentences x up to 2^{MAX_WORDS} masked inputs of up to {MAX_TOKENS} tokens each "
                f"(every subset of the words, for the exact bounds) + {len(names)} rankings' explanations")
    with WorkBar("faithfulness", "sentence", describe, "sentence", cost=naopc_cost(lab, lines)) as bar:
        result = naopc(lab, lines, names, seed=args.seed, progress=bar, engine=engine_from_args(args))
    out = {"sentences_file": str(args.sentences or args.text_file), **result.to_json(args.resamples, args.seed)}
    return emit(args, out, naopc_summary(out))


def naopc_summary(out: dict) -> Iterator[str]:
    yield (f"model: {out['model']}; protocol naopc-sst2 (Edin et al. 2024, github.com/JoakimEdin/naopc): words "
           "replaced by [MASK] in rank order, mean drop in P(class 1) over every step; comprehensiveness (higher = "
           "more faithful), sufficiency (lower = more faithful), each also normalised by the sentence's exact "
           "bounds (NAOPC, 0..1); 95% bootstrap intervals")
    for row in sorted(out["rankings"], key=lambda r: -r["comprehensiveness"]):
        yield (f"{row['ranking']:<28} comp. {row['comprehensiveness']:.3f} [{row['comprehensiveness_ci_low']:.3f}, "
               f"{row['comprehensiveness_ci_high']:.3f}]  suff. {row['sufficiency']:.3f} "
               f"[{row['sufficiency_ci_low']:.3f}, {row['sufficiency_ci_high']:.3f}]  NAOPC comp. "
               f"{row['naopc_comprehensiveness']:.3f} [{row['naopc_comprehensiveness_ci_low']:.3f}, "
               f"{row['naopc_comprehensiveness_ci_high']:.3f}]  NAOPC suff. {row['naopc_sufficiency']:.3f} "
               f"[{row['naopc_sufficiency_ci_low']:.3f}, {row['naopc_sufficiency_ci_high']:.3f}]  n={row['n']}")
    yield (f"bounds (means over sentences): upper {out['upper_bound_mean']:.3f}, lower {out['lower_bound_mean']:.3f}; "
           f"{out['above_half']} of {out['rankings'][0]['n']} sentences have P(class 1) > 0.5 (the paper's tables "
           "keep only those)")
    if out["skipped_long"]:
        yield (f"{out['skipped_long']} sentences skipped: more than {out['max_words']} words (exact bounds need 2^n "
               "forward passes)")
    if out["skipped_tokens"]:
        yield (f"{out['skipped_tokens']} sentences skipped: more than {out['max_tokens']} tokens with [CLS] and [SEP] "
               "(each of the 2^n masked inputs costs in proportion to its tokens; the short set needs at most 18)")
