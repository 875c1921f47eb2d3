"""Command line: ``python -m bertviz_lab analyze "TEXT" --json`` and friends.

Errors a person can fix go to stderr as one line with exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .analysis import InputError, InputTooLong
from .cli_common import EXTRA_COMMANDS, add_model_options, lab_from_args, positive_int
from .checkpoints import CheckpointError
from .devices import DeviceError
from .interventions import ProbeError
from .syntax import TreebankError

USER_ERRORS = (InputError, CheckpointError, DeviceError, FileNotFoundError, ProbeError, TreebankError)


def cmd_analyze(args: argparse.Namespace) -> int:
    lab = lab_from_args(args)
    try:
        result = lab.analyze(args.text, pair=args.pair, top_k=args.top_k, positions=args.position or (),
                             mask_positions=args.mask or (), truncate=args.truncate)
    except InputTooLong as error:
        raise InputError(f"the input is {error.n_tokens} tokens long, more than the model maximum of "
                         f"{error.maximum}; shorten it or pass --truncate") from None
    if result.truncated:
        print(f"note: input truncated from {result.n_tokens_before_truncation} to {len(result.tokens)} tokens",
              file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(attention=not args.no_attention)))
    else:
        print(f"model: {result.model} on {result.device}")
        print("tokens:", " ".join(f"{i}:{t}" for i, t in enumerate(result.tokens)))
        for p in result.mlm:
            preds = ", ".join(f"{q.token} {q.probability:.3f}" for q in p.predictions)
            print(f"position {p.position} ({p.original or p.token}): {preds}")
        for note in (result.mlm_note, result.nsp_note):
            if note:
                print("note:", note)
        if result.nsp is not None:
            print(f"next-sentence probability: {result.nsp:.3f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bertviz_lab", description="Look inside BERT.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("analyze", help="attention and masked-word predictions for one input")
    p.add_argument("text")
    p.add_argument("--pair", default=None, help="second segment (sentence B)")
    add_model_options(p)
    p.add_argument("--top-k", type=positive_int, default=5)
    p.add_argument("--mask", type=int, action="append", help="token position to replace by [MASK] (repeatable)")
    p.add_argument("--position", type=int, action="append", help="also predict at this position (repeatable)")
    p.add_argument("--truncate", action="store_true", help="cut inputs longer than the model maximum")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-attention", action="store_true", help="leave the attention array out of the JSON")
    p.set_defaults(func=cmd_analyze)
    for register in EXTRA_COMMANDS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from . import commands  # noqa: F401  registers the extra subcommands

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except USER_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
