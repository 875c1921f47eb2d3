"""A command's options as an experiment recipe (``tasks/recipes.py``), and a recipe back as a command's
arguments: the one translation between the two, so ``bertviz-lab run`` re-runs exactly what a record says.

A setting is recorded as the command parsed it when that value, written back as text, parses to itself
(numbers, words, paths); otherwise (a head list such as ``3-5,6-1``, parsed to 0-based pairs) as the text the
person typed, so a recipe always goes back through the command's own checks."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..tasks.recipes import Recipe, as_input, seeds_apart

# What a recipe names apart from its settings (the checkpoint, the engine) or never (how the result is shown,
# where it is written, the internals of the parser).
NOT_SETTINGS = {"help", "json", "model", "device", "dtype", "allow_pickle", "weights_sha256", "engine",
                "ray_address", "workers", "out", "func", "argv", "needs_mlm_head", "command", "action_name",
                "loaded_checkpoint", "parser", "main"}
SENTENCE_INPUTS = {"text", "text_option", "pair", "donor", "resample_text"}
ROUND_TRIP = {None, str, int, float, Path}


def subparser(parser: argparse.ArgumentParser, action: str) -> argparse.ArgumentParser | None:
    """The sub-command ``action`` of the ``bertviz-lab`` parser (None: no such command)."""
    return parser._subparsers._group_actions[0].choices.get(action)  # noqa: SLF001 (argparse keeps them here)


def option_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The command's options by name (argparse's dest), without the ones a recipe names elsewhere."""
    return {a.dest: a for a in parser._actions if a.dest not in NOT_SETTINGS}  # noqa: SLF001


def typed_values(argv: list[str], parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The options as typed (text), for the ones whose parsed value does not round-trip: the command's
    arguments parsed again with every type left as text."""
    raw = argparse.ArgumentParser(add_help=False)
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._HelpAction):  # noqa: SLF001
            continue
        if not action.option_strings:
            raw.add_argument(action.dest, nargs=action.nargs, default=None)
        elif action.nargs == 0:
            raw.add_argument(*action.option_strings, dest=action.dest, action="store_true")
        else:
            kind = ("extend" if isinstance(action, argparse._ExtendAction) else  # noqa: SLF001
                    "append" if isinstance(action, argparse._AppendAction) else "store")  # noqa: SLF001
            raw.add_argument(*action.option_strings, dest=action.dest, nargs=action.nargs, action=kind, default=None)
    known, _ = raw.parse_known_args(argv[1:])
    return vars(known)


def as_json(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def recipe_of(args: argparse.Namespace) -> Recipe | None:
    """The recipe of a parsed command (None for one that was not parsed from a command line)."""
    root = getattr(args, "parser", None)
    parser = subparser(root, getattr(args, "action_name", "")) if root is not None else None
    if parser is None:
        return None
    actions, typed, options, inputs = option_actions(parser), None, {}, {}
    for name, action in actions.items():
        value = getattr(args, name, None)
        if value is None or value is False or value == [] or name not in vars(args):
            continue
        if action.type not in ROUND_TRIP and action.nargs != 0:
            if not _round_trips(action, value):
                typed = typed if typed is not None else typed_values(args.argv, parser)
                value = typed.get(name, value)
        if name in SENTENCE_INPUTS:
            inputs[name] = value
        elif isinstance(value, Path) or (isinstance(value, (list, tuple)) and value and isinstance(value[0], Path)):
            inputs[name] = as_input(value)
        else:
            options[name] = as_json(value)
    settings, seeds = seeds_apart(options)
    info = getattr(args, "loaded_checkpoint", None)
    model = getattr(args, "model", None)
    checkpoint = ({"name": info.checkpoint, "sha256": info.sha256} if info is not None else
                  {"name": model if isinstance(model, str) else json.dumps(model), "sha256": None})
    engine = {"kind": getattr(args, "engine", "local"), "workers": getattr(args, "workers", 2),
              "address": getattr(args, "ray_address", None)}
    return Recipe(args.action_name, checkpoint, inputs, settings, seeds, engine)


def _round_trips(action: argparse.Action, value: Any) -> bool:
    try:
        values = value if isinstance(value, (list, tuple)) and action.nargs not in (None, "?") else [value]
        return all(action.type(str(v)) == v for v in values)
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return False


def recipe_argv(recipe: Recipe, parser: argparse.ArgumentParser) -> list[str]:
    """The command's arguments that a recipe's options stand for (after checking every name is one of the
    command's options), positionals after ``--`` so a sentence that starts with "-" stays a sentence."""
    from ..lab import InputError

    actions = option_actions(parser)
    options, positionals = [], []
    for name, value in recipe.options().items():
        action = actions.get(name)
        if action is None:
            raise InputError(f"the recipe's setting {name!r} is not a setting of {recipe.action} in this bertviz-lab "
                             f"(the recipe was written by {recipe.written_by or 'an unknown version'}); its settings: "
                             f"{', '.join(sorted(actions))}")
        if value is None or value is False:
            continue
        if not action.option_strings:
            positionals.append(str(value))
        elif action.nargs == 0:
            options.append(action.option_strings[0])
        elif isinstance(value, list) and isinstance(action, argparse._AppendAction) and action.nargs is None:  # noqa: SLF001
            for v in value:
                options += [action.option_strings[0], str(v)]
        elif isinstance(value, list) and action.nargs not in (None, "?"):
            options += [action.option_strings[0], *map(str, value)]
        else:
            options += [action.option_strings[0], str(value)]
    return options + (["--", *positionals] if positionals else [])
