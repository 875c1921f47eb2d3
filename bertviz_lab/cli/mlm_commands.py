"""Commands about the masked-word and next-sentence heads: ``eval-mlm`` and ``eval-nsp`` (accuracy
with intervals, or the teaching set), ``train-mlm-head`` (resumable legs) and ``select-head`` (the rule fixed before the runs it
chooses between). ``train-twins`` is ``twin_commands``."""
from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

from ..lab import InputError
from .options import (
    add_engine_options,
    add_model_options,
    chosen_checkpoint,
    command,
    emit,
    engine_from_args,
    lab_from_args,
    positive_int,
    seed,
    share,
)

EXAMPLES = {
    "eval-mlm": ["bertviz-lab eval-mlm --teaching", "bertviz-lab eval-mlm --text-file sentences.txt --json"],
    "eval-nsp": ["bertviz-lab eval-nsp --text-file assets/minilm-mlm/heldout-ewt.txt",
                 "bertviz-lab eval-nsp --text-file documents.txt --json"],
    "train-mlm-head": ["bertviz-lab train-mlm-head --corpus data/corpus --out runs/v1 --steps 3000",
                       "bertviz-lab train-mlm-head --corpus data/corpus --out runs/v1 --steps 3000 --resume"],
    "select-head": ["bertviz-lab select-head --corpus data/corpus --chain runs/chain1",
                    "bertviz-lab select-head --corpus data/corpus --chain runs/chain1 runs/chain2 --shipped assets/minilm-mlm"],
}
COMMAND = "python -m bertviz_lab"


def add_commands(sub: argparse._SubParsersAction) -> None:
    for add in (add_eval, add_eval_nsp, add_train, add_select):
        add(sub)


def add_scoring_options(p: argparse.ArgumentParser, limit: str, batch_size: int) -> None:
    """What eval-mlm and eval-nsp share: the model, the seed, a cap, the batch size."""
    add_model_options(p, needs_mlm_head=True)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument(limit, type=positive_int, default=None)
    p.add_argument("--batch-size", type=positive_int, default=batch_size)


def interval(r: dict, key: str, ci: str) -> str:
    return f"{r[key]:.4f} [{r[ci][0]:.4f}, {r[ci][1]:.4f}]"


# ---- eval-mlm / eval-nsp -------------------------------------------------------------------
def add_eval(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "eval-mlm", "masked-word top-1/top-5 accuracy on a text file, or on the teaching set",
                EXAMPLES["eval-mlm"])
    p.add_argument("--text-file", type=Path, default=None, help="one sentence per line; one word per line is masked")
    p.add_argument("--teaching", nargs="?", const="shipped", default=None, metavar="TSV",
                   help="score the teaching set (assets/teaching_cloze.tsv, or this file): sentences with an "
                        "accepted answer at top 1 / in the top 5")
    add_scoring_options(p, "--max-sentences", 64)
    add_engine_options(p, "batches of sentences")
    p.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    from ..mlm.evaluate import Batching, evaluate
    from ..sentences import read_lines

    if (args.text_file is None) == (args.teaching is None):
        raise InputError("give either --text-file FILE or --teaching")
    if args.text_file is not None and not args.text_file.is_file():
        raise FileNotFoundError(f"no such file: {args.text_file}")
    lab = lab_from_args(args)
    if not lab.model.has_mlm_head:
        raise InputError(f"model {chosen_checkpoint(args)!r} has no MLM head; eval-mlm needs one")
    weights = lab.checkpoint_info().describe()
    if args.teaching is not None:
        from ..mlm.teaching import score_teaching_file

        result = score_teaching_file(lab, None if args.teaching == "shipped" else Path(args.teaching))
        return emit(args, {**result, "model": weights}, teaching_summary(result, weights))
    scores = evaluate(lab, read_lines(args.text_file), seed=args.seed, max_sentences=args.max_sentences,
                      progress=sys.stderr.isatty(), batching=Batching(args.batch_size, engine_from_args(args)))
    if not scores["n"]:
        raise InputError(f"{args.text_file} has no line with a whole word to mask; nothing was scored")
    rows = (("all", scores), ("function words", scores["function_words"]), ("content words", scores["content_words"]))
    return emit(args, {"model": weights, **scores}, [
        f"model: {weights}",
        *(f"{name}: top-1 {interval(r, 'top1', 'top1_ci')}  top-5 {interval(r, 'top5', 'top5_ci')}  (n={r['n']})"
          for name, r in rows),
        f"masked: {scores['masking']}; intervals: 95% Wilson"])


def teaching_summary(result: dict, weights: str) -> Iterator[str]:
    yield f"model: {weights}"
    yield "| topic | n | accepted at top 1 | accepted in top 5 |\n|---|---:|---:|---:|"
    for topic, r in result["topics"].items():
        yield f"| {topic} | {r['n']} | {r['top1_hits']} | {r['top5_hits']} |"
    yield (f"| **all** | {result['n']} | {result['top1_hits']} ({result['top1']:.0%}) | {result['top5_hits']} "
           f"({result['top5']:.0%}) |")
    yield (f"95% Wilson intervals: top 1 [{result['top1_ci'][0]:.2f}, {result['top1_ci'][1]:.2f}], "
           f"top 5 [{result['top5_ci'][0]:.2f}, {result['top5_ci'][1]:.2f}]")
    for row in result["items"]:
        mark = "ok " if row["top1_ok"] else ("top5" if row["top5_ok"] else " -  ")
        yield f"{mark} {row['sentence']}  ->  {', '.join(row['top5'])}"


def add_eval_nsp(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "eval-nsp", "next-sentence accuracy on documents (IsNext vs a random sentence of another "
                                 "document)", EXAMPLES["eval-nsp"])
    p.add_argument("--text-file", required=True, type=Path,
                   help="documents of one sentence per line, separated by blank lines")
    add_scoring_options(p, "--max-pairs", 32)
    p.set_defaults(func=run_eval_nsp)


def run_eval_nsp(args: argparse.Namespace) -> int:
    from ..mlm.evaluate_nsp import evaluate_nsp
    from ..mlm.running_text import read_documents

    if not args.text_file.is_file():
        raise FileNotFoundError(f"no such file: {args.text_file}")
    documents = read_documents(args.text_file)
    if len(documents) < 2 or not any(len(d) > 1 for d in documents):
        raise InputError(f"{args.text_file}: needs at least two documents (blank-line separated), one of them "
                         "with two or more sentences")
    lab = lab_from_args(args)
    if not lab.model.has_nsp_head:
        raise InputError(f"model {chosen_checkpoint(args)!r} has no next-sentence head; eval-nsp needs one")
    scores = evaluate_nsp(lab, documents, seed=args.seed, max_pairs=args.max_pairs, batch_size=args.batch_size,
                          progress=sys.stderr.isatty())
    weights = lab.checkpoint_info().describe()
    rows = (("all", scores), ("IsNext", scores["is_next"]), ("NotNext", scores["not_next"]))
    return emit(args, {"model": weights, **scores}, [
        f"model: {weights}", *(f"{name}: accuracy {interval(r, 'accuracy', 'ci')} (n={r['n']})" for name, r in rows),
        f"pairs: {scores['protocol']}; intervals: 95% Wilson"])


# ---- train-mlm-head / select-head ----------------------------------------------------------
def add_train(sub: argparse._SubParsersAction) -> None:
    from ..mlm.train import TrainSettings

    d = TrainSettings()
    p = command(sub, "train-mlm-head", "train an MLM head for the embedded encoder", EXAMPLES["train-mlm-head"])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--corpus", default=d.corpus, help="folder made by build-corpus (train.txt)")
    add_model_options(p, needs_mlm_head=True, what="the encoder to train a head for", loading=False)
    p.add_argument("--steps", type=positive_int, default=d.steps)
    p.add_argument("--seed", type=seed, default=d.seed)
    p.add_argument("--train-layers", type=int, default=d.train_layers, choices=range(0, 7),
                   help="fine-tune this many top encoder layers (0 = frozen encoder)")
    p.add_argument("--batch-size", type=positive_int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--head-lr", type=float, default=d.head_lr)
    p.add_argument("--whole-word", action="store_true", help="mask whole words (all their pieces) together")
    p.add_argument("--nsp", action="store_true", help="also train the pooler and a next-sentence head "
                   "(needs a corpus built with --running-text)")
    p.add_argument("--init", default=None, metavar="HEAD_FOLDER",
                   help="start from an earlier trained head folder (e.g. assets/minilm-mlm) instead of a fresh head")
    p.add_argument("--running-share", type=share, default=d.running_share,
                   help="share of each epoch's inputs taken from running text")
    p.add_argument("--pair-fraction", type=share, default=d.pair_fraction,
                   help="share of running-text sentences that start a next-sentence pair")
    p.add_argument("--no-bf16", action="store_true", help="train in float32")
    p.add_argument("--eval-every", type=positive_int, default=d.eval_every)
    p.add_argument("--checkpoint-every", type=positive_int, default=d.checkpoint_every,
                   help="steps between resumable checkpoints in --out")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt (same settings)")
    p.add_argument("--leg-minutes", type=float, default=None, metavar="MINUTES",
                   help="end this leg with a checkpoint after this many minutes; --resume runs the next leg "
                        "(the learning-rate schedule spans --steps over all legs)")
    p.set_defaults(func=run_train)


def command_line(argv: list[str], drop: str | None = None) -> str:
    """The command as ``main`` received it (the sub-command first), runnable again with ``python -m``."""
    return " ".join([COMMAND, shlex.join([a for a in argv if a != drop])])


def run_train(args: argparse.Namespace) -> int:
    from ..mlm.model_card import publish_if_shippable
    from ..mlm.train import TrainSettings, train

    settings = TrainSettings(corpus=args.corpus, steps=args.steps, seed=args.seed, device=args.device,
                             train_layers=args.train_layers, batch_size=args.batch_size, lr=args.lr,
                             head_lr=args.head_lr, whole_word=args.whole_word, bf16=not args.no_bf16,
                             nsp=args.nsp, init=args.init, running_share=args.running_share,
                             pair_fraction=args.pair_fraction, eval_every=args.eval_every,
                             checkpoint_every=args.checkpoint_every, model=chosen_checkpoint(args))
    leg_command = command_line(args.argv)
    try:
        record = train(args.out, settings, resume=args.resume, leg_minutes=args.leg_minutes, command=leg_command)
    except ValueError as error:  # a checkpoint written with other settings, a corpus without running text
        raise InputError(str(error)) from None
    if record is None:  # the leg ended; the chain goes on with --resume
        out = {"model": settings.model, "leg_ended": True, "checkpoint": str(args.out / "checkpoint.pt"),
               "next_leg": leg_command if args.resume else leg_command + " --resume"}
        return emit(args, out, [f"this leg of training a head for {settings.model} ended at a checkpoint; run the "
                                f"next leg with: {out['next_leg']}"])
    out = {"model": settings.model, **{k: record[k] for k in ("steps", "train_seconds", "fine_tuned_layers",
                                                              "asset_bytes")}}
    report = publish_if_shippable(args.out, Path(args.corpus), settings.model, command_line(args.argv, "--resume"),
                                  device=args.device)
    out["published"] = None if report is None else {k: v for k, v in report.items() if k != "teaching"}
    return emit(args, out, [f"trained a head for {settings.model}: {out['steps']} steps in {out['train_seconds']} s, "
                            f"{out['asset_bytes']:,} bytes in {args.out}"
                            + ("; published with its model card" if report is not None else "")])


def add_select(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "select-head", "choose between trained heads by the rule written in the model card "
                                    "(development data only: the development cloze set and validation text)",
                EXAMPLES["select-head"])
    p.add_argument("--corpus", type=Path, default=Path("data/corpus"), help="the corpus the chain trained on")
    p.add_argument("--shipped", type=Path, default=None, help="the shipped head folder (default: assets/minilm-mlm)")
    p.add_argument("--chain", type=Path, nargs="+", required=True, metavar="RUN",
                   help="train-mlm-head --out folders: every head kept at a validation point (RUN/steps/step-N) competes")
    add_model_options(p, needs_mlm_head=True, what="the encoder the heads belong to", loading=False)
    p.add_argument("--publish", type=Path, default=None, metavar="FOLDER",
                   help="when a chain's head wins, make FOLDER a self-contained head like assets/minilm-mlm "
                        "(held-out report, model card with the chain and this choice); when the shipped head "
                        "stays, its model card records the chain and the choice instead")
    p.set_defaults(func=run_select)


def run_select(args: argparse.Namespace) -> int:
    from ..lab import load
    from ..mlm.selection import select_head
    from ..resources import DEFAULT_MLM_HEAD

    encoder = chosen_checkpoint(args)
    selection = select_head(args.shipped or DEFAULT_MLM_HEAD, args.chain, args.corpus,
                            lambda folder: load(encoder, device=args.device, mlm_head=folder), publish=args.publish,
                            device=args.device)
    selection["model"] = encoder
    return emit(args, selection, [
        f"encoder: {encoder}",
        *("  ".join(f"{k} {v}" for k, v in row.items()) for row in selection["candidates"]),
        selection["why"],
        *(f"{what}: {selection[key]}" for key, what in (("published", "published"), ("recorded_in", "recorded in"))
          if key in selection)])
