"""The ``bertviz-lab`` parser tree and ``main``: each command family's module adds its commands
(options and examples) and its ``run_*`` functions; ``main`` runs the chosen one and is the one
place a user's error becomes one sentence on stderr with exit status 2, never a traceback."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from ..bert import BudgetExceeded, CheckpointError, DeviceError
from ..interventions import InterventionError
from ..lab import InputError
from ..treebank import TreebankError
from . import (
    analysis_commands,
    corpus_commands,
    explanation_commands,
    interventions_commands,
    mlm_commands,
    probing_commands,
    recipe_commands,
    scoring_commands,
    twin_commands,
)
from .options import Parser

FAMILIES = (analysis_commands, scoring_commands, probing_commands, explanation_commands, interventions_commands, corpus_commands,
            mlm_commands, twin_commands, recipe_commands)
EXAMPLES = {name: lines for family in FAMILIES for name, lines in family.EXAMPLES.items()}
USER_ERRORS = (InputError, CheckpointError, DeviceError, FileNotFoundError, InterventionError, TreebankError,
               BudgetExceeded)


def build_parser() -> Parser:
    """Every command; each sub-command's --help ends with two real examples."""
    parser = Parser(prog="bertviz-lab", description="Look inside BERT. Every command prints a short summary, or "
                                                    "one JSON object with --json.")
    sub = parser.add_subparsers(dest="command", required=True)
    for family in FAMILIES:
        family.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (``argv`` without the program name; default ``sys.argv[1:]``): its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv  # what this run was asked, e.g. for a training leg's resume command
    args.parser, args.main = parser, main  # a record's recipe reads the parser; ``run`` runs a recipe through main
    try:
        return args.func(args)
    except USER_ERRORS as error:
        print(f"error: {one_sentence(error)}", file=sys.stderr)
        return 2
    except OSError as error:  # unwritable --out, a full disk, a name the file system refuses
        where = f" {error.filename}" if error.filename else ""
        print(f"error: cannot read or write{where}: {error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def one_sentence(error: BaseException) -> str:
    """An error's message on one line (a FileNotFoundError's args may be a tuple)."""
    text = str(error.args[0]) if len(error.args) == 1 else str(error)
    return " ".join(text.split())


def main_exit() -> None:
    """Entry point of the ``bertviz-lab`` console script (``python -m bertviz_lab`` does the same)."""
    sys.exit(main())
