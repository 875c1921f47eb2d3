"""Commands that change a forward pass and measure what changed: ``compare`` (one intervention,
baseline vs intervened), ``sweep`` (many at once: directional context, every head ablated, the
positional interventions), ``patch`` (activation patching from a donor input) and ``positions``
(learned vs sinusoidal position embeddings). The records come from ``interventions.records``."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from ..interventions import KINDS
from ..lab import InputError
from .options import (
    WorkBar,
    add_engine_options,
    add_model_options,
    command,
    emit,
    engine_from_args,
    lab_from_args,
    positive_int,
    seed,
)

EXAMPLES = {
    "compare": ['bertviz-lab compare "The cat [MASK] on the mat." --intervention left-only --json',
                "bertviz-lab compare --intervention ablate-heads --heads 3-9 --ablation resample --sample"],
    "sweep": ['bertviz-lab sweep "The cat [MASK] on the mat." --kind directional',
              "bertviz-lab sweep --kind ablation --ablation mean --text-file sentences.txt --json"],
    "patch": ['bertviz-lab patch "The keys to the cabinet [MASK] on the table." --donor "The key to the cabinet '
              '[MASK] on the table." --correct are --wrong is',
              "bertviz-lab patch --pairs-file pairs.txt --json"],
    "positions": ["bertviz-lab positions --n 64", "bertviz-lab positions --n 128 --json"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    for add in (add_compare, add_sweep, add_patch, add_positions):
        add(sub)


def add_sentence_set_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text-file", type=Path, default=None,
                   help="a sentence set, one per line: one seeded masked word each, mean effect with a 95%% interval")
    p.add_argument("--conllu", type=Path, default=None, help="a sentence set from a CoNLL-U file's sentences")
    p.add_argument("--sample", action="store_true", help="the sentence set of the shipped sample treebank")
    p.add_argument("--max-sentences", type=positive_int, default=500)
    add_engine_options(p)


def add_ablation_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ablation", choices=("zero", "mean", "resample"), default="zero",
                   help="replace a head's output by zeros, its mean over --reference-file, or its output on a "
                        "sentence drawn (seeded by --seed) from --reference-file, position by position")
    p.add_argument("--reference-file", type=Path, default=None,
                   help="mean and resample ablation: lines to average over or draw from (default: the sample "
                        "treebank's sentences)")
    p.add_argument("--resample-text", default=None,
                   help="resample ablation from this one input (it needs at least as many tokens as the input)")


def ablation_of(args: argparse.Namespace):
    from ..interventions.records import Ablation

    return Ablation(args.ablation, args.reference_file, args.resample_text, args.seed)


def sentence_set_of(args: argparse.Namespace) -> list[str] | None:
    """The sentence set the flags name (None: one input, which must then be given)."""
    from ..interventions.records import sentence_set

    wanted = args.text_file is not None or args.conllu is not None or args.sample
    if not wanted and not args.text:
        raise InputError("give the input text, or --text-file / --conllu / --sample for a sentence set")
    return sentence_set(args.text_file, args.conllu) if wanted else None


def set_work(sentences: int) -> str:
    """What a sentence-set command's estimate line says the work is."""
    return f"{sentences:,} sentences, one seeded masked word each"


def effect_line(name: str, e: dict) -> str:
    return f"{name}: {e['mean']:+.4f} [{e['ci_low']:+.4f}, {e['ci_high']:+.4f}] (n={e['n']})"


# ---- compare -------------------------------------------------------------------------------
def add_compare(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "compare", "run an input baseline vs intervened (masking, context, ablation, positions); "
                                "with --text-file or --conllu over many sentences with 95%% intervals",
                EXAMPLES["compare"])
    p.add_argument("text", nargs="?", default=None, help="the input, unless a sentence set is given")
    add_sentence_set_options(p)
    p.add_argument("--pair", default=None)
    p.add_argument("--intervention", dest="intervention", required=True, choices=KINDS,
                   help="what to change in the forward pass")
    p.add_argument("--positions", type=int, nargs="*", default=[], help="token positions for mask-tokens / hide-keys")
    p.add_argument("--mask", type=int, nargs="*", default=[], help="positions masked in both runs")
    p.add_argument("--heads", default="", help="ablate-heads: 1-based layer-head list, e.g. '3-5,6-1'")
    p.add_argument("--shift", type=int, default=0, help="shift-positions: k")
    p.add_argument("--seed", type=seed, default=0, help="shuffle / control seed")
    p.add_argument("--sinks", choices=("symmetric", "strict"), default="symmetric",
                   help="left-only/right-only: every query may see [CLS]/[SEP] (symmetric) or not (strict)")
    p.add_argument("--unit", choices=("words", "tokens"), default="words", help="shuffle-words: what is shuffled")
    add_ablation_options(p)
    p.add_argument("--top-k", type=positive_int, default=5)
    add_model_options(p, needs_mlm_head=True)
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from ..interventions.records import ablation_reference
    from ..tasks.intervene import InterveneRequest, InterveneSetRequest, InterventionSpec, intervene, intervene_set

    lines = sentence_set_of(args)
    lab = lab_from_args(args)
    spec = InterventionSpec(args.intervention, heads=args.heads, shift=args.shift, seed=args.seed, sinks=args.sinks,
                            unit=args.unit, ablation=args.ablation)
    reference = lambda: ablation_reference(lab, ablation_of(args))  # noqa: E731 (made only if the ablation needs it)
    if lines is not None:
        request = InterveneSetRequest(tuple(lines), spec, seed=args.seed, max_sentences=args.max_sentences,
                                      engine=engine_from_args(args))
        with WorkBar("compare", "sentence", set_work, "sentence") as bar:
            record = intervene_set(request, lab, reference, progress=bar).to_json()
        return emit(args, record, [f"model: {record['model']}", f"intervention: {record['intervention']}, over a "
                                   "sentence set (one seeded masked gold word per line; mean, 95% interval)",
                                   *(effect_line(m, record[m]) for m in ("mean JS (nats)", "change in P(gold)"))])
    targets = tuple(args.positions) if spec.targets_picked_tokens else ()  # --positions: mask-tokens / hide-keys only
    request = InterveneRequest(args.text, spec, args.pair, picked=targets, mask=tuple(args.mask), top_k=args.top_k)
    record = intervene(request, lab, reference).to_json()
    return emit(args, record, compare_summary(record))


def compare_summary(record: dict) -> Iterator[str]:
    yield f"model: {record['model']}"
    yield f"intervention: {record['intervention']}; mean JS divergence {record['mean_js_divergence']:.4f} nats"
    for x in record["prediction_changes"]:
        yield (f"position {x['position']} ({x['token']}): p({x['baseline_top']}) {x['baseline_probability']:.4f} -> "
               f"{x['intervened_probability']:.4f}; intervened top-1 {x['intervened_top']}")
    if record["note"]:
        yield f"note: {record['note']}"


# ---- sweep ---------------------------------------------------------------------------------
def add_sweep(sub: argparse._SubParsersAction) -> None:
    from ..interventions.records import SWEEP_KINDS

    p = command(sub, "sweep", "directional-context, head-ablation or positional sweep; over one input or, "
                              "with --text-file, over many sentences with 95%% intervals", EXAMPLES["sweep"])
    p.add_argument("text", nargs="?", default=None, help="the input (with [MASK]s), unless --text-file is given")
    p.add_argument("--kind", required=True, choices=SWEEP_KINDS)
    p.add_argument("--pair", default=None)
    p.add_argument("--mask", type=int, nargs="*", default=[], help="positions to mask (besides typed [MASK])")
    add_sentence_set_options(p)
    p.add_argument("--sinks", choices=("symmetric", "strict"), default="symmetric")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--shift", type=int, default=10, help="positions: shift-positions by k")
    add_ablation_options(p)
    add_model_options(p, needs_mlm_head=True)
    p.set_defaults(func=run_sweep)


def run_sweep(args: argparse.Namespace) -> int:
    from ..interventions.records import Sweep, sweep_record, sweep_set_record

    lines = sentence_set_of(args)
    sweep = Sweep(args.kind, args.pair, tuple(args.mask), args.sinks, args.seed, args.shift, ablation_of(args))
    lab = lab_from_args(args)
    if lines is None:
        record = sweep_record(lab, args.text, sweep)
        return emit(args, record, sweep_summary(record))
    with WorkBar(f"{args.kind} sweep", "sentence", set_work, "sentence") as bar:
        record = sweep_set_record(lab, lines, sweep, max_sentences=args.max_sentences, progress=bar,
                                  engine=engine_from_args(args))
    return emit(args, record, sweep_set_summary(record))


def sweep_summary(record: dict) -> Iterator[str]:
    yield f"model: {record['model']}; {record['kind']} sweep (--json for every number)"
    if record["kind"] == "directional":
        for r in record["rows"]:
            yield (f"position {r['position']} ({r['token']}), P({r['target']}): both {r['both']:.4f}, left-only "
                   f"{r['left_only']:.4f} (control {r['left_control']:.4f}), right-only {r['right_only']:.4f} "
                   f"(control {r['right_control']:.4f})")
    elif record["kind"] == "ablation":
        yield f"{record['ablation']} ablation; drop in log P({record['scored']}) when each head alone is ablated:"
        yield "  largest: " + ", ".join(f"{h['head']} {h['value']:+.4f}" for h in record["top_heads"])
    else:
        for r in record["rows"]:
            rank = r["gold word's rank after"]
            yield (f"{r['intervention']}: mean JS {r['mean JS (nats)']:.4f} nats, change in P(top-1) "
                   f"{r['change in P(top-1)']:+.4f}, masked-word JS {r['masked-word JS (nats)']:.4f} nats, gold word's "
                   f"rank after {rank:.1f}")


def sweep_set_summary(record: dict) -> Iterator[str]:
    yield (f"model: {record['model']}; {record['kind']} sweep over a sentence set (one seeded masked gold word per "
           "line; mean, 95% interval)")
    if record["kind"] == "directional":
        yield from (effect_line(f"P(gold), {c}", e) for c, e in record["p_gold"].items())
        yield from (d["verdict"] for d in record["differences"])
    else:
        best = record["most_important_head"]
        if best is not None:
            yield (f"most important head (chosen on {best['selected_on']} sentences, measured on the others): "
                   + effect_line(best["head"], best["heldout"]))
    if record["truncated_lines"]:
        yield f"note: {record['truncated_lines']} lines were cut to the model's length"


# ---- patch ---------------------------------------------------------------------------------
def add_patch(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "patch", "activation patching on a minimal pair: each head's output (and each layer's "
                              "residual at the [MASK]) from --donor into TEXT; change in the logit difference of "
                              "--correct minus --wrong", EXAMPLES["patch"])
    p.add_argument("text", nargs="?", default=None, help="the target input, with one [MASK]")
    p.add_argument("--donor", default=None,
                   help="the donor input: the same number of tokens, [MASK] in place")
    p.add_argument("--correct", default=None)
    p.add_argument("--wrong", default=None)
    p.add_argument("--pairs-file", type=Path, default=None,
                   help="many minimal pairs, one per line: target | donor | correct | wrong (mean with 95%% CI)")
    add_model_options(p, needs_mlm_head=True)
    add_engine_options(p, "--pairs-file's pairs")
    p.set_defaults(func=run_patch)


def run_patch(args: argparse.Namespace) -> int:
    from ..interventions.records import patch_record, patch_set_record

    if args.pairs_file is None and not (args.text and args.donor and args.correct and args.wrong):
        raise InputError("give TEXT --donor --correct --wrong, or --pairs-file")
    lab = lab_from_args(args)
    if args.pairs_file is not None:
        with WorkBar("patch", "pair", lambda n: f"{n:,} minimal pairs, every head and layer patched", "pair") as bar:
            record = patch_set_record(lab, args.pairs_file, progress=bar, engine=engine_from_args(args))
        return emit(args, record, [
            f"model: {record['model']}; {record['pairs']} minimal pairs, mean change in the logit difference",
            "  largest per head: " + ", ".join(f"{h['head']} {h['value']:+.3f}" for h in record["top_heads"]),
            "  per layer's residual at [MASK]: " + ", ".join(f"{v:+.3f}" for v in record["residual"]["mean"])])
    record = patch_record(lab, args.text, args.donor, args.correct, args.wrong)
    return emit(args, record, [
        f"model: {record['model']}",
        f"logit difference {args.correct} - {args.wrong}: target {record['baseline_logit_difference']:+.3f}, donor "
        f"{record['donor_logit_difference']:+.3f}; change when patched from the donor:",
        "  largest per head: " + ", ".join(f"{h['head']} {h['value']:+.3f}" for h in record["top_heads"]),
        "  per layer's residual at [MASK]: " + ", ".join(f"{v:+.3f}" for v in record["residual"])])


# ---- positions -----------------------------------------------------------------------------
def add_positions(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "positions", "cosine similarity of learned vs sinusoidal position embeddings",
                EXAMPLES["positions"])
    p.add_argument("--n", type=positive_int, default=64)
    add_model_options(p, needs_mlm_head=False)
    p.set_defaults(func=run_positions)


def run_positions(args: argparse.Namespace) -> int:
    from ..interventions.records import positions_record

    record = positions_record(lab_from_args(args), args.n)
    near = record["neighbour_similarity"]
    return emit(args, record, [f"model: {record['model']}; the first {record['n']} positions",
                               f"mean cosine similarity of neighbouring positions: learned {near['learned']:.3f}, "
                               f"sinusoidal {near['sinusoidal']:.3f} (--json for both {record['n']} x {record['n']} "
                               "matrices)"])
