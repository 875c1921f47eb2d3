"""Hook points and the contexts that capture or edit activations at them.

A hook point is an identity module placed on an activation users want to read or edit
(TransformerLens style). Its name is its attribute path in the model, assigned once by
:func:`name_hook_points`, never typed by hand.

Captures and edits live in a :class:`HookRun` that is bound to the *current context*
(a :class:`contextvars.ContextVar`), not to the model. Two threads (or two asyncio tasks)
running the same model therefore never see each other's tensors, and leaving the ``with``
block always unbinds the run, also when the forward pass raised.
"""
from __future__ import annotations

import contextlib
import contextvars
import fnmatch
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn

Edit = Callable[[torch.Tensor, str], torch.Tensor]

_ACTIVE_RUN: contextvars.ContextVar[HookRun | None] = contextvars.ContextVar(
    "bertviz_lab_active_hook_run", default=None
)


class HookPoint(nn.Module):
    """Identity on the activation; hands it to the active run if there is one."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "<unnamed>"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        run = _ACTIVE_RUN.get()
        if run is None:
            return x
        return run.visit(self.name, x)

    def extra_repr(self) -> str:
        return self.name


def name_hook_points(model: nn.Module) -> list[str]:
    """Give every hook point its module path as name; return the names in forward order."""
    names = []
    for path, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = path
            names.append(path)
    return names


@dataclass
class HookRun:
    """What one call captures and edits. Holds its own tensors; nothing is shared."""

    capture: frozenset[str] = frozenset()
    edits: dict[str, list[Edit]] = field(default_factory=dict)
    detach: bool = True
    cache: dict[str, torch.Tensor] = field(default_factory=dict)
    calls: int = 0

    def needs(self, name: str) -> bool:
        return name in self.capture or name in self.edits

    def visit(self, name: str, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        for edit in self.edits.get(name, ()):
            x = edit(x, name)
        if name in self.capture:
            self.cache[name] = x.detach() if self.detach else x
        return x


def active_run() -> HookRun | None:
    """The run bound to this thread/task, if any (used by fast paths to skip work)."""
    return _ACTIVE_RUN.get()


def resolve_names(patterns: Iterable[str], known: list[str]) -> list[str]:
    """Expand glob patterns (``*hook_pattern``) against the model's hook names.

    An unknown exact name is an error: a typo must not silently capture nothing.
    """
    chosen: list[str] = []
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            matches = fnmatch.filter(known, pattern)
            if not matches:
                raise KeyError(f"no hook point matches {pattern!r}")
            chosen.extend(matches)
        elif pattern in known:
            chosen.append(pattern)
        else:
            raise KeyError(f"unknown hook point {pattern!r}; see model.hook_names")
    return list(dict.fromkeys(chosen))


@contextlib.contextmanager
def hook_run(
    known: list[str],
    capture: Iterable[str] = (),
    edits: dict[str, Edit | list[Edit]] | None = None,
    detach: bool = True,
) -> Iterator[HookRun]:
    """Bind a run to the current context for the duration of the block."""
    edit_map: dict[str, list[Edit]] = {}
    for pattern, fns in (edits or {}).items():
        fn_list = list(fns) if isinstance(fns, (list, tuple)) else [fns]
        for name in resolve_names([pattern], known):
            edit_map.setdefault(name, []).extend(fn_list)
    run = HookRun(capture=frozenset(resolve_names(capture, known)), edits=edit_map, detach=detach)
    token = _ACTIVE_RUN.set(run)
    try:
        yield run
    finally:
        _ACTIVE_RUN.reset(token)
