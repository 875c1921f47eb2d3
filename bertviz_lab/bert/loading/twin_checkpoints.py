"""The position-scheme twins as checkpoints: ``twin-learned``, ``twin-rotary``, ... (issue 58; trained by
``mlm/twins.py``). A twin's folder holds ``twin-<scheme>.safetensors`` (its own weights, float16) and one
``twins.json`` (the recipe, each twin's config, the training history); the word embeddings and the tokenizer every
twin shares are the embedded MiniLM's, read from its package, so they are shipped once. The shipped twins are in
``assets/twins``; ``$BERTVIZ_LAB_TWINS`` points at another folder (twins retrained at a larger size, or a test's)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from ...resources import ASSETS
from ..encoder.model import BertConfig

PREFIX = "twin-"
WORDS = "bert.embeddings.word_embeddings.weight"


def twins_folder() -> Path:
    """Where the twins are: ``$BERTVIZ_LAB_TWINS`` when set, else the shipped ``assets/twins``."""
    given = os.environ.get("BERTVIZ_LAB_TWINS")
    return Path(given).expanduser() if given else ASSETS / "twins"


def is_twin(name: str) -> bool:
    return name.startswith(PREFIX)


def twins_record(folder: Path | None = None) -> dict[str, Any]:
    """``twins.json`` of the folder, or {} when there are no twins there."""
    path = (folder or twins_folder()) / "twins.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def twin_names(folder: Path | None = None) -> list[str]:
    """The checkpoint names of the twins a folder holds, in the recipe's order (the page's model list)."""
    record = twins_record(folder)
    return [PREFIX + scheme for scheme in record.get("configs", {})]


class TwinMissing(ValueError):
    """No such twin in the twins folder; the message lists the ones there are."""


def read_twin(name: str, words: torch.Tensor, folder: Path | None = None) -> tuple[str, BertConfig, dict[str, torch.Tensor]]:
    """(display name, config, full state dict) of twin ``name``: its own weights in float32 plus the shared words."""
    folder = folder or twins_folder()
    record = twins_record(folder)
    scheme = name[len(PREFIX):]
    if scheme not in record.get("configs", {}):
        there = ", ".join(twin_names(folder)) or "none"
        raise TwinMissing(f"model {name!r}: no such twin in {folder} (twins there: {there})")
    cfg = BertConfig.from_dict(record["configs"][scheme])
    path = folder / f"{name}.safetensors"
    if not path.is_file():
        raise TwinMissing(f"model {name!r}: {path.name} is missing from {folder}")
    state = {k: v.float() for k, v in load_file(str(path)).items()}
    state[WORDS] = words.float()
    recipe = record.get("recipe", {})
    size = f"{recipe.get('layers')}x{recipe.get('hidden')}"
    display = (f"bertviz-lab position twin {name} ({size}, {record.get('step')} steps; the twins differ only in "
               f"their position scheme; words and tokenizer of all-MiniLM-L6-v2)")
    return display, cfg, state
