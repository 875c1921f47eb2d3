"""The one door every event of the app goes through (``events.wire`` wraps each handler here):

- every forward pass the event makes is charged to the server's per-request budget
  (``bert.budget``: tokens and masks per input, model work and wall time per request), so no
  endpoint, present or future, runs over-cap input or holds a worker past the time limit;
- a refused request, or a disk that is full, answers one sentence in the event's own message
  box (never a server path or a traceback);
- a session that now holds an analysis takes one of the server's bounded slots;
- on a server with a time limit, the worker stops waiting for the event at the limit plus ``GRACE`` seconds and
  answers that it was stopped: the event runs on a thread of the gate's own, and stops itself at its next
  check of the budget (the encoder checks before every layer, long loops on every round: ``bert/runtime/budget.py``),
  so what cannot check (one SciPy or NumPy call) holds no worker past the limit;
- corpus-sized work (a treebank, a sentence set) runs one request at a time across every door: the page's
  events, the API and the MCP tools take the same slot.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import functools
import inspect
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as WaitedTooLong
from typing import Any

import gradio as gr

from ..bert import BudgetExceeded, CheckpointError, DeviceError, spending
from ..bert.runtime.budget import time_message
from ..bert.runtime.errors import InputError
from .state import Limits, Session, SessionSlots

# Where each event says what went wrong: the first of these among its outputs.
MESSAGE_OUTPUTS = ("message", "intervention_message", "syntax_message", "syntax_arcs_text", "syntax_parse_message",
                   "notes")
STALE = ["bvl-stale"]  # the views' class after a refused Run: they show the previous input, greyed
DISK_FULL = "the server's disk is full right now; nothing was saved. Try again in a few minutes."
DISK_ERROR = "the server could not write a file; nothing was saved. Try again in a few minutes."
LOG = logging.getLogger("bertviz_lab.app")
GRACE = 0.5  # seconds past the time limit a worker waits for an event before it answers for it
REQUEST_THREADS = 32  # events running at once on the gate's threads (Gradio runs 4; the rest are stopping)


def message_output(outputs: tuple[str, ...]) -> str | None:
    """The first of MESSAGE_OUTPUTS among an event's outputs, else its own result title (``*_message``)."""
    return next((name for name in MESSAGE_OUTPUTS if name in outputs),
                next((name for name in outputs if name.endswith("_message")), None))


def unexpected_message(error: Exception) -> str:
    """A failure no handler foresaw, in the app's words: its Python text ("integer modulo by zero", "can't allocate
    memory: you tried to allocate 64000000000 bytes") is logged on the server, never shown."""
    if isinstance(error, MemoryError) or "allocate" in str(error):
        return ("this request needs more memory than the server can give it; choose a shorter input, fewer "
                "sentences or smaller numbers")
    return ("the server could not answer this request (the failure is logged for the operator); check the values "
            "you gave, or try a shorter input")


def disk_message(error: OSError) -> str:
    """A write failed: one sentence, no path (``str(error)`` would show the server's folders)."""
    return DISK_FULL if error.errno in (errno.ENOSPC, errno.EDQUOT) else DISK_ERROR


class Gate:
    """Wraps handlers with the server's limits; one per app."""

    def __init__(self, ui: Any, limits: Limits) -> None:
        self.ui, self.limits = ui, limits
        self.budget = limits.budget()
        self.slots = SessionSlots(limits.sessions)
        self._corpus = threading.Lock()  # corpus-sized work: one request at a time, whichever door it came through
        self._threads: tuple[int, ThreadPoolExecutor] | None = None  # (the process it belongs to, the pool)

    def refusal(self, outputs: tuple[str, ...], text: str) -> dict:
        name = message_output(outputs)
        if name is None:  # an endpoint with no message box (the /attention API): Gradio shows the error
            raise gr.Error(text)
        out = {getattr(self.ui, name): f"⚠️ {text}"}
        if "views_box" in outputs:  # a refused Run: the views no longer describe the text above
            out[self.ui.views_box] = gr.update(elem_classes=STALE)
        return out

    def refused(self, args: tuple, kwargs: dict, outputs: tuple[str, ...], message: str) -> Any:
        """The refusal in the event's own message place; its session notes that a place drawn on request may now
        hold it (so the next Run clears it)."""
        for value in (*args, *kwargs.values()):
            if isinstance(value, Session):
                value.shown_on_request = True
                value.sent.clear()  # the refused reply may have carried none of the controls it noted as sent
                value.sent["greyed"] = "views_box" in outputs  # refusal() greys the views
        return self.refusal(outputs, message)

    def wrap(self, fn: Callable, outputs: tuple[str, ...], corpus: bool = False) -> Callable:
        """``fn`` under the budget (and, with ``corpus``, in the one corpus slot); Gradio still sees its signature
        (progress, request, event data)."""

        @functools.wraps(fn)
        def gated(*args: Any, **kwargs: Any) -> Any:
            try:
                result = self.run(fn, args, kwargs, corpus)
            except BudgetExceeded as error:
                shown = next((v for v in (*args, *kwargs.values()) if isinstance(v, Session)), None)
                stale = shown.stale_note() if shown is not None and "payload" in outputs else ""
                return self.refused(args, kwargs, outputs, str(error) + stale)
            except OSError as error:
                return self.refused(args, kwargs, outputs, disk_message(error))
            except gr.Error:
                raise  # the app's own sentence, for an endpoint with no message box
            except (InputError, CheckpointError, DeviceError) as error:  # the app's own sentences, not caught above
                return self.refused(args, kwargs, outputs, str(error))
            except Exception as error:  # noqa: BLE001 - no Python text reaches a visitor (issue 56)
                LOG.exception("an event failed: %s", getattr(fn, "__name__", fn))
                return self.refused(args, kwargs, outputs, unexpected_message(error))
            for value in (*args, *kwargs.values()):
                if isinstance(value, Session) and value.holds_work():
                    self.slots.hold(value)
            return result

        return gated

    def run(self, fn: Callable, args: tuple, kwargs: dict, corpus: bool) -> Any:
        """``fn(*args, **kwargs)`` charged to a fresh budget; where the budget has a time limit, on one of the gate's
        threads, waited for until the limit plus GRACE (then BudgetExceeded, and the event stops itself at its next
        check). Generator handlers run here, checked only cooperatively."""
        seconds = self.budget.seconds if self.budget else None
        if seconds is None or inspect.isgeneratorfunction(inspect.unwrap(fn)):
            with spending(self.budget), self.corpus_slot(corpus, None):
                return fn(*args, **kwargs)

        def charged() -> Any:
            with spending(self.budget), self.corpus_slot(corpus, seconds):
                return fn(*args, **kwargs)

        running = self.threads().submit(contextvars.copy_context().run, charged)
        try:
            return running.result(timeout=seconds + GRACE)
        except WaitedTooLong:
            raise BudgetExceeded(time_message(seconds)) from None

    def threads(self) -> ThreadPoolExecutor:
        """The gate's threads, made anew in a forked child (ZeroGPU runs GPU handlers in one), which inherits the
        parent's pool but none of its threads."""
        if self._threads is None or self._threads[0] != os.getpid():
            self._threads = (os.getpid(), ThreadPoolExecutor(REQUEST_THREADS, thread_name_prefix="bvl-request"))
        return self._threads[1]

    def corpus_slot(self, corpus: bool, seconds: float | None):
        """The one slot of corpus-sized work, taken for the request's time at most (then BudgetExceeded)."""
        return _held(self._corpus, seconds) if corpus else contextlib.nullcontext()


@contextlib.contextmanager
def _held(lock: threading.Lock, seconds: float | None) -> Iterator[None]:
    """``lock`` held for the block, waited for ``seconds`` at most (None: as long as it takes)."""
    if not lock.acquire(timeout=-1 if seconds is None else seconds):
        raise BudgetExceeded("the server is busy with another treebank or sentence-set request; try again in a minute")
    try:
        yield
    finally:
        lock.release()
