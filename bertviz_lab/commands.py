"""Subcommands that live in other modules, registered on the main parser."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .cli_common import EXTRA_COMMANDS, add_model_options, positive_int


def build_corpus_command(sub) -> None:
    p = sub.add_parser("build-corpus", help="write the WordNet training/held-out corpus (needs wordnet-base)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--heldout", type=positive_int, default=2000)
    p.add_argument("--seed", type=int, default=0)

    def run(args) -> int:
        from .corpus import build_corpus

        print(json.dumps(build_corpus(args.out, heldout=args.heldout, seed=args.seed)))
        return 0

    p.set_defaults(func=run)


def train_command(sub) -> None:
    from .train_mlm import TrainSettings

    d = TrainSettings()
    p = sub.add_parser("train-mlm-head", help="train an MLM head for the embedded encoder")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--corpus", default=d.corpus, help="folder made by build-corpus (train.txt)")
    p.add_argument("--steps", type=positive_int, default=d.steps)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device)
    p.add_argument("--train-layers", type=int, default=d.train_layers, choices=range(0, 7),
                   help="fine-tune this many top encoder layers (0 = frozen encoder)")
    p.add_argument("--batch-size", type=positive_int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--head-lr", type=float, default=d.head_lr)
    p.add_argument("--whole-word", action="store_true")
    p.add_argument("--no-bf16", action="store_true", help="train in float32")
    p.add_argument("--eval-every", type=positive_int, default=d.eval_every)

    def run(args) -> int:
        from .train_mlm import train

        settings = TrainSettings(corpus=args.corpus, steps=args.steps, seed=args.seed, device=args.device,
                                 train_layers=args.train_layers, batch_size=args.batch_size, lr=args.lr,
                                 head_lr=args.head_lr, whole_word=args.whole_word, bf16=not args.no_bf16,
                                 eval_every=args.eval_every)
        record = train(args.out, settings)
        print(json.dumps({k: record[k] for k in ("steps", "train_seconds", "fine_tuned_layers", "asset_bytes")}))
        return 0

    p.set_defaults(func=run)


def eval_command(sub) -> None:
    p = sub.add_parser("eval-mlm", help="masked-word top-1/top-5 accuracy on a text file")
    p.add_argument("--text-file", required=True, type=Path)
    add_model_options(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--batch-size", type=positive_int, default=64)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (last line)")

    def run(args) -> int:
        from .analysis import InputError, load
        from .mlm_eval import evaluate

        if not args.text_file.is_file():
            raise FileNotFoundError(f"no such file: {args.text_file}")
        lab = load(args.model, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)
        if not lab.model.has_mlm_head:
            raise InputError(f"model {args.model!r} has no MLM head; eval-mlm needs one")
        lines = args.text_file.read_text(encoding="utf-8").splitlines()
        scores = evaluate(lab, lines, seed=args.seed, max_sentences=args.max_sentences, batch_size=args.batch_size,
                          progress=sys.stderr.isatty())
        if args.json:
            print(json.dumps(scores))
        else:
            print(f"top-1 {scores['top1']:.4f}  top-5 {scores['top5']:.4f}  (n={scores['n']})")
        return 0

    p.set_defaults(func=run)


EXTRA_COMMANDS.extend([build_corpus_command, train_command, eval_command])
