"""Position schemes, one file each (``base.PositionScheme``): what the encoder asks instead of testing flags.

``SCHEMES`` is the one list (name -> class), filled by importing the scheme files below; ``build`` makes a
config's schemes in their order."""
from __future__ import annotations

from typing import Any

from . import alibi, disentangled, learned, none, relative, rotary, sinusoidal  # noqa: F401  (each registers itself)
from .scheme import SCHEMES, PassPositions, PositionScheme, register

__all__ = ["SCHEMES", "PassPositions", "PositionScheme", "build", "register"]


def build(cfg: Any) -> tuple[PositionScheme, ...]:
    """The schemes ``cfg.positions`` names, made for this config; an unknown name is one sentence."""
    unknown = [name for name in cfg.positions if name not in SCHEMES]
    if unknown:
        raise ValueError(f"position scheme {unknown[0]!r} is not one of {', '.join(SCHEMES)}")
    return tuple(SCHEMES[name](cfg) for name in cfg.positions)
