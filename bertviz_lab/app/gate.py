"""The one door every event of the app goes through (``events.wire`` wraps each handler here):

- every forward pass the event makes is charged to the server's per-request budget
  (``bert.budget``: tokens and masks per input, model work and wall time per request), so no
  endpoint, present or future, runs over-cap input or holds a worker past the time limit;
- a refused request, or a disk that is full, answers one sentence in the event's own message
  box (never a server path or a traceback);
- a session that now holds an analysis takes one of the server's bounded slots.
"""
from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from typing import Any

import gradio as gr

from ..bert import BudgetExceeded, spending
from .state import Limits, Session, SessionSlots

# Where each event says what went wrong: the first of these among its outputs.
MESSAGE_OUTPUTS = ("message", "intervention_message", "syntax_message", "syntax_arcs_text", "notes")
STALE = ["bvl-stale"]  # the views' class after a refused Run: they show the previous input, greyed
DISK_FULL = "the server's disk is full right now; nothing was saved. Try again in a few minutes."
DISK_ERROR = "the server could not write a file; nothing was saved. Try again in a few minutes."


def message_output(outputs: tuple[str, ...]) -> str | None:
    """The first of MESSAGE_OUTPUTS among an event's outputs, else its own result title (``*_message``)."""
    return next((name for name in MESSAGE_OUTPUTS if name in outputs),
                next((name for name in outputs if name.endswith("_message")), None))


def disk_message(error: OSError) -> str:
    """A write failed: one sentence, no path (``str(error)`` would show the server's folders)."""
    return DISK_FULL if error.errno in (errno.ENOSPC, errno.EDQUOT) else DISK_ERROR


class Gate:
    """Wraps handlers with the server's limits; one per app."""

    def __init__(self, ui: Any, limits: Limits) -> None:
        self.ui, self.limits = ui, limits
        self.budget = limits.budget()
        self.slots = SessionSlots(limits.sessions)

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

    def wrap(self, fn: Callable, outputs: tuple[str, ...]) -> Callable:
        """``fn`` under the budget; Gradio still sees its signature (progress, request, event data)."""

        @functools.wraps(fn)
        def gated(*args: Any, **kwargs: Any) -> Any:
            try:
                with spending(self.budget):
                    result = fn(*args, **kwargs)
            except BudgetExceeded as error:
                shown = next((v for v in (*args, *kwargs.values()) if isinstance(v, Session)), None)
                stale = shown.stale_note() if shown is not None and "payload" in outputs else ""
                return self.refused(args, kwargs, outputs, str(error) + stale)
            except OSError as error:
                return self.refused(args, kwargs, outputs, disk_message(error))
            for value in (*args, *kwargs.values()):
                if isinstance(value, Session) and value.holds_work():
                    self.slots.hold(value)
            return result

        return gated
