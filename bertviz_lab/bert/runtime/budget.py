"""What one request may spend, checked before every forward pass of the encoder and inside long work.

A public server must bound every request that runs the model, including endpoints added
later. Checking inputs in each handler leaves that to memory; checking here does not: whatever
path a request takes (an analysis, a sweep, a sentence set, a treebank, a null model), every
forward pass of :class:`~bertviz_lab.bert.encoder.model.BertLab` calls :func:`charge`, and inside
:func:`spending` the pass is refused once it would exceed the budget. Outside ``spending``
(the command line, training, notebooks) nothing is checked.

Time is checked more often than passes start (issue 56: a structural probe answered after 121 s, flow
after 37 s, sweeps after 55 s, each "stopped after 15 s" only once a next pass was due): the encoder
checks it before every layer, and loops that run without the encoder (probe training, attention flow,
syntax scoring and decoding) call :func:`check_time` on each round. What cannot check (one SciPy or
NumPy call) is bounded by the app's gate, which stops waiting for a request at its limit plus a
second and answers for it (``app/gate.py``).

The budget lives in a ``ContextVar``, so concurrent requests (threads) each see their own.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch


class BudgetExceeded(ValueError):
    """A request asked for more than the server allows; the message says the limit and what to do."""


@dataclass(frozen=True)
class Budget:
    """Caps for one request; None means no cap."""

    tokens: int | None = None  # tokens per input (real tokens of the longest row of a pass)
    masks: int | None = None  # masked-word predictions per input (MLM rows of one row of a pass)
    token_passes: int | None = None  # sum over the request's passes of rows x tokens (the work done)
    seconds: float | None = None  # wall time from the request's start to the start of its last pass

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.tokens, self.masks, self.token_passes, self.seconds))


LOCAL_HINT = "run bertviz-lab on your own machine for larger requests"


def time_message(seconds: float) -> str:
    return (f"this request was stopped after {seconds:.0f} s, the most this server gives one request (choose fewer "
            f"sentences or a shorter input, or {LOCAL_HINT})")


class Spend:
    """What the current request has spent so far."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.start = time.monotonic()
        self.token_passes = 0
        self.passes = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def over_time(self) -> bool:
        return self.budget.seconds is not None and self.elapsed() > self.budget.seconds

    def stop_if_over_time(self) -> None:
        if self.over_time():
            raise BudgetExceeded(time_message(self.budget.seconds))

    def charge(self, tokens: int, rows: int, masks: int) -> None:
        """Refuse the next pass if it breaks a cap; else count it."""
        b = self.budget
        if b.tokens is not None and tokens > b.tokens:
            raise BudgetExceeded(f"this server takes up to {b.tokens} tokens per input; this input has {tokens} "
                                 f"({LOCAL_HINT})")
        if b.masks is not None and masks > b.masks:
            raise BudgetExceeded(f"this server predicts up to {b.masks} masked words per input; this request asks "
                                 f"for {masks} (mask fewer tokens, or {LOCAL_HINT})")
        self.stop_if_over_time()
        work = rows * tokens
        if b.token_passes is not None and self.token_passes + work > b.token_passes:
            raise BudgetExceeded(f"this request needs more model work than this server gives one request "
                                 f"(up to {b.token_passes:,} token passes); choose fewer sentences or a shorter "
                                 f"input, or {LOCAL_HINT}")
        self.token_passes += work
        self.passes += 1


_current: ContextVar[Spend | None] = ContextVar("bertviz_lab_budget", default=None)


@contextmanager
def spending(budget: Budget | None) -> Iterator[Spend | None]:
    """Every forward pass inside is charged to ``budget`` (nothing is checked for an empty one)."""
    if not budget:
        yield None
        return
    spend = Spend(budget)
    token = _current.set(spend)
    try:
        yield spend
    finally:
        _current.reset(token)


@contextmanager
def exempt() -> Iterator[None]:
    """Passes inside are charged to no request: a batch shared by several requests, each of which was
    charged for its own row before it joined (``bert/runtime/batching.py``)."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Spend | None:
    return _current.get()


def check_time() -> None:
    """A cooperative stop for long work: raise BudgetExceeded once the current request is past its time (nothing
    outside ``spending``; costs a ContextVar read and a clock read)."""
    spend = _current.get()
    if spend is not None:
        spend.stop_if_over_time()


def charge(input_ids: torch.Tensor, attention_mask: torch.Tensor | None, mlm_positions: torch.Tensor | None,
           compute_mlm: bool) -> None:
    """Called by the model before a forward pass: charge it to the request's budget, if any."""
    spend = _current.get()
    if spend is None:
        return
    rows, length = input_ids.shape  # (batch, pos)
    tokens = int(attention_mask.sum(1).max()) if attention_mask is not None and rows else length
    if not compute_mlm:
        masks = 0
    elif mlm_positions is not None:
        masks = int(mlm_positions.sum(1).max()) if rows else 0  # (batch, pos) bool -> per row
    else:
        masks = length  # logits at every position
    spend.charge(tokens, rows, masks)
