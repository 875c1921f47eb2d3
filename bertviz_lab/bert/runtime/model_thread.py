"""Where a server's tensor work runs: on one thread of its own (issue 45), opted into by the app.

PyTorch's CPU kernels run on OpenMP, and libgomp (GCC's OpenMP, which PyTorch's Linux wheels use)
gives every thread that starts a parallel region a thread pool of its own. Once the pools' threads
outnumber the cores, libgomp lets an idle pool thread spin only 100 times instead of 300,000 before it
sleeps (GOMP_SPINCOUNT, https://gcc.gnu.org/onlinedocs/libgomp/GOMP_005fSPINCOUNT.html), so each of a
forward pass's hundreds of parallel regions waits for its threads to be woken. A web server answers
requests on many worker threads, and the model was loaded on yet another; on the 2-core test machine a
128-token analysis took 23-25 ms when one thread had done all tensor work and 30-35 ms once a second
thread had run one (benchmarks/bench_model_thread.py: the model loaded on the main thread and Runs on a
worker, as a server did).

``use_model_thread()`` starts one long-lived thread; from then on ``on_model_thread(fn, ...)`` runs fn
there and waits for it, with the caller's context variables (so a request's budget, ``bert.budget``,
is charged as before). The app's launcher turns it on before it loads the model, so the load's pool
and every Run's pool are the same one. Without it (scripts, notebooks, tests: already one thread),
``on_model_thread`` simply calls fn. ``on_passing_thread`` is for long work that must not hold the model
thread up (another checkpoint's load). Work is not parallel across requests either way: a pass uses
every core, and concurrent Runs share batches (``bert/runtime/batching.py``).

The price: with one pool, its idle thread spins (libgomp's default, up to 300,000 times) before it sleeps,
CPU that other programs on the same cores no longer get. Sixteen gradio_client visitors running on the
server's own 2 cores got 18 % fewer Runs per second (p95 1.48 -> 1.87 s); sixteen light HTTP visitors, whose
clients cost the server's cores little (as browsers elsewhere), got 23 % more (BENCHMARKS.md, 16 visitors).
A lower GOMP_SPINCOUNT (10,000, set before PyTorch loads) won back most of that loss but also lost all of a
single Run's gain, so the app leaves libgomp's default.
"""
from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
THREAD_NAME = "bvl-model"

_starting = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_here = threading.local()  # .model is True on the model thread


def _mark() -> None:
    _here.model = True


def _forget_in_child() -> None:
    """A forked child (ZeroGPU runs a Space's GPU handlers in one) has no model thread: a fork copies only the
    thread that forked, so work handed to the parent's would never run. The child works on its own threads."""
    global _executor, _starting
    _executor, _starting = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def use_model_thread() -> None:
    """From now on, ``on_model_thread`` runs its work on one thread kept for it (process-wide; idempotent)."""
    global _executor
    with _starting:
        if _executor is None:
            _executor = ThreadPoolExecutor(1, thread_name_prefix=THREAD_NAME, initializer=_mark)


def uses_model_thread() -> bool:
    return _executor is not None


def stop_model_thread() -> None:
    """Back to running work on the caller's thread (tests; a process that stops serving). Waits for the work
    already handed over."""
    global _executor
    with _starting:
        executor, _executor = _executor, None
    if executor is not None:
        executor.shutdown(wait=True)


def on_model_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs) on the model thread when there is one (else here), with this context's variables;
    its exception is raised here. Called on the model thread itself, it runs at once (no deadlock)."""
    executor = _executor
    if executor is None or getattr(_here, "model", False):
        return fn(*args, **kwargs)
    context = contextvars.copy_context()
    return executor.submit(context.run, fn, *args, **kwargs).result()


def on_passing_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs) on a new thread that ends with it, when the model thread is in use (else here).
    For long tensor work that must not hold up the model thread (loading another checkpoint, which may
    download it): the OpenMP pool it starts ends with its thread, so no third pool stays behind."""
    if _executor is None:
        return fn(*args, **kwargs)
    with ThreadPoolExecutor(1, thread_name_prefix=f"{THREAD_NAME}-passing") as once:  # its thread ends on leaving
        return once.submit(contextvars.copy_context().run, fn, *args, **kwargs).result()
