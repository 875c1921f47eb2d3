"""Controls whose values travel together, as one typed value per group (a frozen dataclass).

An event sends one value per input component, in the order of its ``inputs`` (``events.EVENTS``): that order,
and the names of the handler's parameters, are the public API ``gradio_client`` callers use. A handler an event
calls takes those values as they come and builds the forms itself (``RunController.run``); the work behind it
takes the forms (``RunController.analyze``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunInput:
    """What a Run analyses: sentence A, the optional sentence B and how many predictions to list."""

    text: str = ""
    pair: str = ""
    top_k: float = 5


@dataclass(frozen=True)
class ViewControls:
    """The controls every view follows (1-based layer and head, as the sliders show them)."""

    layer: float = 1
    head: float = 1
    hide: bool = False
    word: bool = False
    pair_filter: str = "all"
    scale: str = "fixed"  # "fixed" 0-1 or "per-head" colour scale for attention maps


@dataclass(frozen=True)
class TreebankChoice:
    """Which treebank the Syntax tab scores, and whose weights."""

    treebank: str = "sample"  # "sample" or "upload"
    upload: str | None = None
    use_loaded: bool = False  # the loaded model's weights instead of the published ones
