"""Position schemes, one file each (``base.PositionScheme``): what the encoder asks instead of testing flags.

``SCHEMES`` is the one list (name -> class), filled by importing every module of this folder; ``build`` makes a
config's schemes in their order."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from .scheme import SCHEMES, PassPositions, PositionScheme, register

for _module in pkgutil.iter_modules(__path__):  # every file here is a scheme that registers itself: adding one is a file
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["SCHEMES", "PassPositions", "PositionScheme", "build", "register"]


def build(cfg: Any) -> tuple[PositionScheme, ...]:
    """The schemes ``cfg.positions`` names, made for this config; an unknown name is one sentence."""
    unknown = [name for name in cfg.positions if name not in SCHEMES]
    if unknown:
        raise ValueError(f"position scheme {unknown[0]!r} is not one of {', '.join(SCHEMES)}")
    return tuple(SCHEMES[name](cfg) for name in cfg.positions)
