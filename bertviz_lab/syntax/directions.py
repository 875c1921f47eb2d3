"""Which way an arc is read from an attention map: the project's names, the papers' names as
aliases, and one ``normalize_direction`` every caller uses, so a name is never silently read as
another direction.

For a word's map ``attn[query, key]`` (a row is what one word attends to):

- ``dep->head`` reads the dependent's *row*: the word the dependent attends to most is its head.
  Clark et al. (2019) call it "normal"; Limisiewicz et al. (2020) call it ``d2p`` (dependent to
  parent). Both are aliases of it.
- ``head->dep`` reads the dependent's *column*: the word that attends most to the dependent is its
  head (Clark's "transpose": the map transposed, then read as dep->head).
- ``head-row->dep`` reads the head's *row*, which must point at the dependent. This is what
  Limisiewicz et al.'s ``p2d`` (parent to dependent) computes, and it is not Clark's head->dep:
  a head with several dependents can point at only one of them, while in the dependent's column it
  can win for all of them. ``p2d`` is an alias of ``head-row->dep`` only.

Per-head scoring (``scoring.py``) computes Clark's two predictors; head ensembles
(``ensembles.py``) read all three.
"""
from __future__ import annotations

from collections.abc import Sequence

DEP_HEAD = "dep->head"
HEAD_DEP = "head->dep"
HEAD_ROW = "head-row->dep"
ALL_DIRECTIONS = (DEP_HEAD, HEAD_DEP, HEAD_ROW)
CLARK_DIRECTIONS = (DEP_HEAD, HEAD_DEP)  # what per-head scoring computes (Clark et al. 2019)
ALIASES = {"d2p": DEP_HEAD, "normal": DEP_HEAD, "transpose": HEAD_DEP, "p2d": HEAD_ROW}


def choices(allowed: Sequence[str]) -> str:
    """"dep->head, head->dep (or their aliases d2p, normal, transpose)" for ``allowed``."""
    aliases = [alias for alias, name in ALIASES.items() if name in allowed]
    return ", ".join(allowed) + (f" (or the aliases {', '.join(aliases)})" if aliases else "")


def normalize_direction(name: str, allowed: Sequence[str] = ALL_DIRECTIONS) -> str:
    """The project's name of the direction ``name`` (a project name or a paper's alias), checked
    against the directions the caller computes; anything else is a ValueError in one sentence."""
    direction = ALIASES.get(name, name) if isinstance(name, str) else name
    if direction in allowed:
        return direction
    if direction in ALL_DIRECTIONS:
        said = f"{name!r} ({direction})" if direction != name else repr(name)
        raise ValueError(f"direction {said} is not computed here; choose one of {choices(allowed)}")
    raise ValueError(f"unknown direction {name!r}; choose one of {choices(allowed)}")
