"""An experiment recipe: one JSON object that says everything a result was made from, so that the page,
the command line (``bertviz-lab run RECIPE.json``), an agent (the MCP door) and a cluster (``--engine ray``)
run the same experiment.

    {"bertviz_lab_recipe": 1, "written_by": "bertviz-lab 0.1.0",
     "action": "faithfulness",                               # a command of the command line
     "checkpoint": {"name": "default", "sha256": "…"},       # the weights' SHA-256 (names and float32 values)
     "inputs": {"text_file": {"path": "lines.txt", "sha256": "…"}},   # or {"text": "a sentence"}
     "settings": {"k": 5, "max_sentences": 200, "protocol": "ours"},  # every setting, by its option's name
     "seeds": {"seed": 0},
     "engine": {"kind": "local", "workers": 2, "address": null}}

Inputs are a sentence (a string) or a file (a path with its SHA-256, checked before anything runs); settings
and seeds are the action's options, by name; a name the action does not have (a recipe from another
version) is refused with one sentence, never ignored. Reading and checking recipes lives here, once, for
every door; which settings an action has is the door's (the command line's options).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engines import ENGINES, Engine
from ..lab import InputError

FORMAT = 1
KEYS = ("bertviz_lab_recipe", "written_by", "action", "checkpoint", "inputs", "settings", "seeds", "engine")
MAX_RECIPE_BYTES = 1_000_000


def our_version() -> str:
    """The installed package's version (pyproject.toml's), or "(a checkout)" when it runs uninstalled."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bertviz-lab")
    except PackageNotFoundError:
        return "(a checkout)"


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (each relative name and its bytes, sorted)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def file_input(path: str | Path) -> dict:
    """A file input as a recipe names it: its path as given and its SHA-256."""
    return {"path": str(path), "sha256": file_sha256(path)}


def as_input(value: Any) -> Any:
    """An input as a recipe names it: a path that exists as a file input (with its SHA-256), one that does not as
    its text, a sentence as it is; a list item by item."""
    if isinstance(value, (list, tuple)):
        return [as_input(v) for v in value]
    if isinstance(value, Path):
        return file_input(value) if value.exists() else str(value)
    return value


@dataclass(frozen=True)
class Recipe:
    action: str
    checkpoint: dict  # {"name": ..., "sha256": ...}
    inputs: dict = field(default_factory=dict)  # option name -> a string, or a file {"path", "sha256"} (or a list)
    settings: dict = field(default_factory=dict)  # option name -> value
    seeds: dict = field(default_factory=dict)  # option name -> seed
    engine: dict = field(default_factory=lambda: Engine().to_json())
    written_by: str = field(default_factory=lambda: f"bertviz-lab {our_version()}")

    def to_json(self) -> dict:
        return {"bertviz_lab_recipe": FORMAT, "written_by": self.written_by, "action": self.action,
                "checkpoint": self.checkpoint, "inputs": self.inputs, "settings": self.settings, "seeds": self.seeds,
                "engine": self.engine}

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False)

    def options(self) -> dict:
        """Every option the recipe sets (settings, seeds and inputs; a file input as its path)."""
        return {**self.settings, **self.seeds, **{name: input_value(v) for name, v in self.inputs.items()}}


def input_value(value: Any) -> Any:
    if isinstance(value, list):
        return [input_value(v) for v in value]
    return value["path"] if isinstance(value, dict) else value


def seeds_apart(options: dict) -> tuple[dict, dict]:
    """(settings, seeds): the options whose name says seed go to the recipe's seeds."""
    seeds = {k: v for k, v in options.items() if "seed" in k}
    return {k: v for k, v in options.items() if k not in seeds}, seeds


def made_with(action: str, weights: Any, inputs: dict, options: dict) -> Recipe:
    """The recipe of a result a door made itself (the page): ``weights`` is its ``CheckpointInfo``; ``inputs``
    are sentences or files (a path becomes a file input with its SHA-256); ``options`` are the command's
    options by name (seeds set apart). Options at None are left out: the command's default is the same."""
    files = {name: as_input(value) for name, value in inputs.items() if value not in (None, "")}
    settings, seeds = seeds_apart({k: v for k, v in options.items() if v is not None})
    return Recipe(action, {"name": weights.checkpoint, "sha256": weights.sha256}, files, settings, seeds)


def recipe_from(data: Any, where: str = "the recipe") -> Recipe:
    """A recipe from its JSON object, checked: its format, its keys and their types. Its files' hashes are
    checked by ``check_inputs`` (relative paths are read from where the recipe is run)."""
    if not isinstance(data, dict):
        raise InputError(f"{where} is not a JSON object")
    if data.get("bertviz_lab_recipe") != FORMAT:
        raise InputError(f"{where} is not a bertviz-lab recipe of format {FORMAT} (its \"bertviz_lab_recipe\" is "
                         f"{data.get('bertviz_lab_recipe')!r})")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InputError(f"{where} has {', '.join(map(repr, unknown))}, which no recipe of format {FORMAT} has "
                         f"(its keys: {', '.join(KEYS)})")
    action, checkpoint = data.get("action"), data.get("checkpoint")
    if not isinstance(action, str) or not action:
        raise InputError(f"{where} names no action (e.g. \"analyze\", \"faithfulness\")")
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("name"), str):
        raise InputError(f"{where} names no checkpoint ({{\"name\": \"default\", \"sha256\": …}})")
    parts = {name: data.get(name, {}) for name in ("inputs", "settings", "seeds", "engine")}
    for name, value in parts.items():
        if not isinstance(value, dict):
            raise InputError(f"{where}: \"{name}\" must be a JSON object (got {type(value).__name__})")
    engine = {**Engine().to_json(), **parts["engine"]}
    if engine.get("kind") not in ENGINES:
        raise InputError(f"{where}: engine {engine.get('kind')!r} is not one of {', '.join(ENGINES)}")
    return Recipe(action, checkpoint, parts["inputs"], parts["settings"], parts["seeds"], engine,
                  str(data.get("written_by", "")))


def read_recipe(path: str | Path) -> Recipe:
    """A recipe file, read and checked (one sentence for whatever is wrong with it)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such recipe file")
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise InputError(f"{path} is larger than a recipe can be ({MAX_RECIPE_BYTES:,} bytes)")
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path} is not JSON: {error}") from None
    return recipe_from(data, str(path))


def check_inputs(recipe: Recipe) -> None:
    """Every file the recipe reads is the one it names: its SHA-256 as recorded, else one sentence."""
    for name, value in recipe.inputs.items():
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                continue  # a sentence
            path, expected = item.get("path"), item.get("sha256")
            if not isinstance(path, str) or not Path(path).exists():
                raise InputError(f"the recipe's input {name} is {path!r}, and there is no such file here")
            if expected and file_sha256(path) != expected:
                raise InputError(f"the recipe's input {name} ({path}) is not the file it was made with: its SHA-256 "
                                 f"is {file_sha256(path)[:12]}…, the recipe's {str(expected)[:12]}…")


def check_weights(recipe: Recipe, sha256: str) -> None:
    """The loaded weights are the ones the recipe names (when it names their SHA-256)."""
    expected = recipe.checkpoint.get("sha256")
    if expected and sha256 != expected:
        raise InputError(f"checkpoint {recipe.checkpoint['name']!r} here has weights SHA-256 {sha256[:12]}…, not the "
                         f"recipe's {str(expected)[:12]}…: these are other weights")
