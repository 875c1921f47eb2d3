"""ZeroGPU support on Hugging Face Spaces: the handlers that run the model get ``spaces.GPU``
when the Space runs on ZeroGPU (``SPACES_ZERO_GPU`` set and the ``spaces`` package present);
everywhere else they are returned unchanged."""
from __future__ import annotations

import os
from collections.abc import Callable


def on_gpu(fn: Callable) -> Callable:
    if not os.environ.get("SPACES_ZERO_GPU"):
        return fn
    try:
        import spaces
    except ImportError:
        return fn
    return spaces.GPU(fn)
