"""``bertviz-lab run RECIPE.json``: run an experiment recipe (``tasks/recipes.py``), the JSON object every
record carries under "recipe" (and every --out folder as recipe.json), the page's "Copy as recipe" gives and
the MCP door takes. Its files are checked against their SHA-256 before anything loads, its weights after
they load; a setting this version does not have is refused with one sentence."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..lab import InputError
from .options import command, positive_int

EXAMPLES = {
    "run": ["bertviz-lab run results/faithfulness/recipe.json",
            "bertviz-lab run recipe.json --engine ray --ray-address auto --out results/again --json"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "run", "run an experiment recipe (the \"recipe\" of any --json record, an --out folder's "
                            "recipe.json, or the page's \"Copy as recipe\")", EXAMPLES["run"])
    p.add_argument("recipe", type=Path, help="the recipe file (JSON)")
    p.add_argument("--engine", choices=("local", "ray"), default=None, help="instead of the recipe's engine")
    p.add_argument("--ray-address", default=None, help="with --engine ray: an existing Ray cluster")
    p.add_argument("--workers", type=positive_int, default=None, help="instead of the recipe's number of Ray workers")
    p.add_argument("--out", type=Path, default=None, help="where the action writes its files (an action with --out)")
    p.add_argument("--device", default=None, help="instead of auto: cpu, cuda, cuda:N or mps")
    p.set_defaults(func=run_recipe)


def recipe_command(args: argparse.Namespace) -> list[str]:
    """The command line the recipe (and the overrides given to ``run``) stands for."""
    from ..tasks.recipes import check_inputs, read_recipe
    from .recipe_of_args import recipe_argv, subparser

    recipe = read_recipe(args.recipe)
    if recipe.action == "run":
        raise InputError("a recipe runs an action, not another recipe")
    parser = subparser(args.parser, recipe.action)
    if parser is None:
        raise InputError(f"the recipe's action {recipe.action!r} is not a command of this bertviz-lab (the recipe was "
                         f"written by {recipe.written_by or 'an unknown version'})")
    argv = [recipe.action, *recipe_argv(recipe, parser)]
    check_inputs(recipe)
    known = {a.dest for a in parser._actions}  # noqa: SLF001
    tail = []
    if "model" in known and recipe.checkpoint.get("name"):
        tail += ["--model", recipe.checkpoint["name"]]
    if "weights_sha256" in known and recipe.checkpoint.get("sha256"):
        tail += ["--weights-sha256", recipe.checkpoint["sha256"]]
    if "engine" in known:
        engine = args.engine or recipe.engine.get("kind", "local")
        tail += ["--engine", engine, "--workers", str(args.workers or recipe.engine.get("workers") or 2)]
        address = args.ray_address or (recipe.engine.get("address") if engine == "ray" else None)
        tail += ["--ray-address", address] if address else []
    elif args.engine == "ray":
        raise InputError(f"{recipe.action} runs on this machine only (it has no --engine)")
    if args.out is not None:
        if "out" not in known:
            raise InputError(f"{recipe.action} writes no folder, so --out has nothing to do")
        tail += ["--out", str(args.out)]
    if args.device and "device" in known:
        tail += ["--device", args.device]
    if args.json:
        tail += ["--json"]
    if "--" in argv:  # the positionals stay last
        cut = argv.index("--")
        return argv[:cut] + tail + argv[cut:]
    return argv + tail


def run_recipe(args: argparse.Namespace) -> int:
    return args.main(recipe_command(args))  # dispatch.main, which parsed this command
