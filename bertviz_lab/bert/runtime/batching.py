"""Concurrent forward passes of one length share one batch (issue 45: 16 visitors on a 2-core server).

When several requests run the model at once (Gradio serves four events at a time), each pass alone
leaves the matrix units half idle and the threads fight over the cores. Here a pass that arrives while
another runs waits for it, and then every waiting pass with the same key (same length, same captures)
runs as one batch: no timer, so a lone visitor waits for nothing, and under load the batches grow by
themselves. Each request gets back its own row only (its own tensors, never another's), and is charged
to its own budget before it joins (``budget.charge``), as if it ran alone. If a batch fails, every
request in it runs again alone, so one request's error stays its own. The oldest waiting request leads
the next batch, so no length waits behind others forever.

A shared pass computes each row as a pass of its own would, up to float rounding (batched matrix
products may sum in another order: ~1e-6 in float32), so two Runs of one input may differ in the last
digits, and predictions tied to that precision may swap places.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_ROWS = 16  # rows per shared batch


@dataclass(eq=False)
class _Ticket:
    key: Hashable
    item: Any
    finished: bool = False
    result: Any = None
    alone: bool = False  # the shared batch failed: run this item by itself


class SharedPasses:
    """``run(key, item)`` returns ``run_batch([items])[i]`` for its item, batched with the others of its key
    that wait while a batch runs."""

    def __init__(self, run_batch: Callable[[Sequence[Any]], Sequence[Any]], max_rows: int = MAX_ROWS) -> None:
        self.run_batch, self.max_rows = run_batch, max_rows
        self._ready = threading.Condition()
        self._waiting: list[_Ticket] = []
        self._running = False
        self.batch_sizes: list[int] = []  # what ran, for tests and benchmarks (the last 1,000)

    def run(self, key: Hashable, item: Any) -> Any:
        ticket = _Ticket(key, item)
        with self._ready:
            self._waiting.append(ticket)
            self._ready.notify_all()  # the oldest waiting request may lead now
            while not ticket.finished and (self._running or self._waiting[0] is not ticket):
                self._ready.wait()
            if not ticket.finished:  # nobody runs: this thread runs the batch of its key
                batch = [ticket] + [t for t in self._waiting if t.key == key and t is not ticket][:self.max_rows - 1]
                self._waiting = [t for t in self._waiting if t not in batch]
                self._running = True
        if not ticket.finished:
            self._run(batch)
        if ticket.alone:
            return self.run_batch([item])[0]
        return ticket.result

    def _run(self, batch: list[_Ticket]) -> None:
        results = None
        try:
            results = self.run_batch([t.item for t in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a shared pass gave {len(results)} results for {len(batch)} requests")
        except Exception:
            if len(batch) == 1:
                raise  # its own error
            results = None
        finally:
            with self._ready:
                for row, t in enumerate(batch):
                    t.finished = True
                    t.result, t.alone = (results[row], False) if results is not None else (None, True)
                self.batch_sizes = (self.batch_sizes + [len(batch)])[-1000:]
                self._running = False
                self._ready.notify_all()
