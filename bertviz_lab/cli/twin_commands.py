"""``train-twins``: the position-scheme twins trained together (same data, masks, seed and steps), in resumable
legs, from the start the recipe names; exported as float16 weights with their model card."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..lab import InputError
from .mlm_commands import command_line
from .options import command, emit, positive_int, seed

EXAMPLES = {
    "train-twins": ["bertviz-lab train-twins --corpus data/corpus --out runs/twins --leg-minutes 40 --resume",
                    "bertviz-lab train-twins --out runs/twins-base --hidden 768 --layers 12 --heads 12 --ffn 3072 "
                    "--device cuda --export runs/twins-base/export"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    add_train_twins(sub)


def add_train_twins(sub: argparse._SubParsersAction) -> None:
    from ..mlm.twins import INITS, SCHEMES, TwinRecipe

    d = TwinRecipe()
    p = command(sub, "train-twins", "train the position-scheme twins together (same data, masks, seed and steps)",
                EXAMPLES["train-twins"])
    p.add_argument("--out", required=True, type=Path, help="the run's folder (checkpoint.pt, run.json)")
    p.add_argument("--corpus", default=d.corpus, help="folder made by build-corpus with --running-text")
    for name in ("hidden", "layers", "heads", "ffn", "length", "batch", "steps", "eval_every"):
        p.add_argument(f"--{name.replace('_', '-')}", type=positive_int, default=getattr(d, name))
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--seed", type=seed, default=d.seed)
    p.add_argument("--schemes", default=",".join(SCHEMES), help=f"comma-separated, of {', '.join(SCHEMES)}")
    p.add_argument("--init", choices=INITS, default=d.init,
                   help="where every twin starts: BERT's initialisation (scratch), the embedded encoder's weights "
                        "but its positions (minilm; its size only), or scratch distilled from the default head")
    p.add_argument("--device", default="cpu", help="cpu, cuda or mps")
    p.add_argument("--no-bf16", action="store_true", help="train in float32 (default: bfloat16 autocast)")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt (same settings)")
    p.add_argument("--leg-minutes", type=float, default=None, metavar="MINUTES",
                   help="end this leg with a checkpoint after this many minutes; --resume runs the next leg")
    p.add_argument("--stop-at", type=positive_int, default=None, metavar="STEP",
                   help="end this leg after STEP (to bring twins retrained alone to the others' step)")
    p.add_argument("--merge-into", type=Path, default=None, metavar="RUN",
                   help="after this leg, put these --schemes' twins into the run RUN (both at the same step)")
    p.add_argument("--export", type=Path, default=None, metavar="FOLDER",
                   help="when the run has reached --steps, write each twin's float16 weights and twins.json here")
    p.set_defaults(func=run_train_twins)


def run_train_twins(args: argparse.Namespace) -> int:
    from ..mlm.twins import SCHEMES, Leg, TwinRecipe, check_init, export_twins, merge_twins, shared_words, train_twins

    schemes = tuple(s.strip() for s in args.schemes.split(",") if s.strip())
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown or not schemes:
        raise InputError(f"--schemes: {', '.join(unknown) or 'none given'}; choose from {', '.join(SCHEMES)}")
    recipe = TwinRecipe(corpus=args.corpus, hidden=args.hidden, layers=args.layers, heads=args.heads, ffn=args.ffn,
                        length=args.length, batch=args.batch, steps=args.steps, lr=args.lr, seed=args.seed,
                        eval_every=args.eval_every, schemes=schemes, device=args.device, bf16=not args.no_bf16,
                        init=args.init)
    if args.hidden % args.heads:
        raise InputError(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    try:
        check_init(recipe)
    except ValueError as error:
        raise InputError(str(error)) from None
    if not (Path(args.corpus) / "train_docs.jsonl").is_file():
        raise InputError(f"{args.corpus} has no train_docs.jsonl: build it with build-corpus --running-text")
    shared = shared_words()
    leg = command_line(args.argv)
    run = train_twins(args.out, recipe, shared, Leg(args.resume, args.leg_minutes, leg, args.stop_at),
                      say=lambda line: print(line, file=sys.stderr, flush=True))
    if args.merge_into is not None:
        try:
            step = merge_twins(args.merge_into, args.out, schemes)
        except ValueError as error:
            raise InputError(str(error)) from None
        return emit(args, {"merged": list(schemes), "into": str(args.merge_into), "step": step},
                    [f"{', '.join(schemes)} merged into {args.merge_into} at step {step}"])
    out = {"step": run.step, "steps": recipe.steps, "checkpoint": str(args.out / "checkpoint.pt"),
           "loss": run.history[-1]["loss"] if run.history else None}
    if run.step < recipe.steps:
        out["next_leg"] = leg if args.resume else leg + " --resume"
        return emit(args, out, [f"this leg ended at step {run.step} of {recipe.steps}; next leg: {out['next_leg']}"])
    if args.export is not None:
        out["exported"] = export_twins(args.out, args.export, recipe, shared[0])
    return emit(args, out, [f"the twins reached step {run.step}" +
                            (f"; exported to {args.export}" if args.export is not None else "")])
