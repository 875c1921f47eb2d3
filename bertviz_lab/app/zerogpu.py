"""ZeroGPU support on Hugging Face Spaces: the handlers that run the model get ``spaces.GPU``
when the Space runs on ZeroGPU (``SPACES_ZERO_GPU`` set and the ``spaces`` package present);
everywhere else they are returned unchanged.

Each asks for the GPU time its request may use, not ``spaces.GPU``'s default 60 s: the server's time budget
per request (the gate stops a request's forward passes there and answers ``GRACE`` later) plus the time to
move the weights to the GPU. ZeroGPU schedules a shorter request sooner and checks a visitor's remaining quota
against it, so a sub-second Run on a public Space asks for ~20 s, not 60."""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from .gate import GRACE

DEFAULT_SECONDS = 60  # spaces.GPU's own default: a server with no time budget
TO_GPU_SECONDS = 3  # moving the weights onto the GPU when a request acquires it (MiniLM: well under a second)
MAX_SECONDS = 120  # the most ZeroGPU grants an unauthenticated visitor


def budget_seconds(gate: Any) -> float | None:
    """The time one request may take on the server of ``gate`` (None: no gate, or no time budget)."""
    return getattr(getattr(gate, "budget", None), "seconds", None)


def gpu_seconds(budget_seconds: float | None) -> int:
    """The GPU duration of one request under a time budget of ``budget_seconds`` (None: no budget)."""
    if budget_seconds is None:
        return DEFAULT_SECONDS
    return min(MAX_SECONDS, math.ceil(budget_seconds + GRACE + TO_GPU_SECONDS))


def on_gpu(fn: Callable, budget_seconds: float | None = None) -> Callable:
    if not os.environ.get("SPACES_ZERO_GPU"):
        return fn
    try:
        import spaces
    except ImportError:
        return fn
    return spaces.GPU(duration=gpu_seconds(budget_seconds))(fn)
