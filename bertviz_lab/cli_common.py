"""Pieces shared by the subcommands: option types, model options, and the registry of
subcommands defined outside __main__ (so ``python -m`` and imports see the same list)."""
from __future__ import annotations

import argparse
from collections.abc import Callable

# Other modules add their subcommands here (probe, train-mlm-head, eval-mlm ...).
EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="default",
                        help="'default' (embedded MiniLM-L6), a checkpoint folder, or a hub id such as bert-base-uncased")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    parser.add_argument("--dtype", default=None, help="float32 (default), float16 or bfloat16 (GPU only)")
    parser.add_argument("--allow-pickle", action="store_true", help="allow loading pytorch_model.bin pickles")


def lab_from_args(args: argparse.Namespace):
    """Load the model the --model/--device/--dtype/--allow-pickle options name."""
    from .analysis import load

    return load(args.model, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)
