"""The server's tensor work on one thread (bert/runtime/model_thread.py): off by default; when on, every call runs on
the one thread kept for it, with the caller's context (a request's budget), its errors raised to the caller, and
an analysis identical to one made on the caller's thread."""
import contextvars
import multiprocessing
import os
import threading

import numpy as np
import pytest
import torch

from bertviz_lab.bert.runtime.budget import Budget, BudgetExceeded, spending
from bertviz_lab.bert.runtime.model_thread import (
    THREAD_NAME,
    on_model_thread,
    on_passing_thread,
    stop_model_thread,
    use_model_thread,
    uses_model_thread,
)
from bertviz_lab.lab import ForwardChanges

WHO = contextvars.ContextVar("who", default="nobody")


@pytest.fixture
def model_thread():
    assert not uses_model_thread()
    use_model_thread()
    yield
    stop_model_thread()


def here() -> str:
    return threading.current_thread().name


def test_without_a_model_thread_work_stays_on_the_callers_thread():
    assert not uses_model_thread()
    assert on_model_thread(here) == here()
    assert on_passing_thread(here) == here()


def test_with_one_every_call_from_any_thread_runs_on_the_same_model_thread(model_thread):
    names, idents = [], set()

    def record():
        names.append(on_model_thread(here))
        idents.add(on_model_thread(threading.get_ident))

    callers = [threading.Thread(target=record) for _ in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(30)
    record()
    assert len(names) == 5 and all(n.startswith(THREAD_NAME) for n in names)
    assert len(idents) == 1 and threading.get_ident() not in idents


def test_the_model_thread_sees_the_callers_context_and_raises_its_errors_there(model_thread):
    WHO.set("request 7")
    assert on_model_thread(WHO.get) == "request 7"
    with pytest.raises(KeyError, match="missing"):
        on_model_thread(lambda: {}["missing"])
    assert on_model_thread(lambda: on_model_thread(here)).startswith(THREAD_NAME)  # nested: runs at once


def _child_runs(conn):
    conn.send(on_model_thread(here))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_runs_model_thread_work_on_its_own_thread(model_thread):
    """ZeroGPU runs a Space's GPU handlers in a forked child, which has no copy of the model thread."""
    assert on_model_thread(here).startswith(THREAD_NAME)  # the parent's thread is running
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child_runs, args=(child,), daemon=True)
    proc.start()
    try:
        assert parent.poll(60), "the child's work never ran"
        assert parent.recv() == "MainThread"
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()


def test_passing_work_runs_on_a_thread_that_ends_with_it(model_thread):
    WHO.set("loader")
    seen = on_passing_thread(lambda: (threading.current_thread(), WHO.get()))
    assert seen[0].name == f"{THREAD_NAME}-passing_0" and seen[1] == "loader"
    seen[0].join(5)
    assert not seen[0].is_alive()
    with pytest.raises(ValueError, match="bad"):
        on_passing_thread(lambda: (_ for _ in ()).throw(ValueError("bad")))


def test_an_analysis_on_the_model_thread_equals_one_made_here_and_ran_there(tiny_lab, model_thread, monkeypatch):
    stop_model_thread()
    alone = tiny_lab.analyze("the cat sat on the mat", masks=[2])
    use_model_thread()
    threads = []
    real_pass, real_stack = tiny_lab._shared_pass, tiny_lab.attention_of
    monkeypatch.setattr(tiny_lab, "_shared_pass", lambda items: threads.append(here()) or real_pass(items))
    monkeypatch.setattr(tiny_lab, "attention_of", lambda cache: threads.append(here()) or real_stack(cache))
    served = tiny_lab.analyze("the cat sat on the mat", masks=[2])
    assert len(threads) == 2 and all(t.startswith(THREAD_NAME) for t in threads)
    np.testing.assert_array_equal(served.attention, alone.attention)
    assert [p.token for p in served.mlm[0].predictions] == [p.token for p in alone.mlm[0].predictions]
    assert served.mlm[0].predictions[0].probability == alone.mlm[0].predictions[0].probability


def test_a_request_budget_still_refuses_a_pass_made_on_the_model_thread(tiny_lab, model_thread):
    enc = tiny_lab.encode("the cat sat on the mat")
    bias = torch.zeros((1, 1, len(enc.ids), len(enc.ids)))  # an intervention's pass: charged inside the model
    with spending(Budget(tokens=3)), pytest.raises(BudgetExceeded):
        tiny_lab.analyze_encoded(enc, changes=ForwardChanges(attention_bias=bias))
    with spending(Budget(tokens=3)), pytest.raises(BudgetExceeded):  # a Run's pass: charged before it joins
        tiny_lab.analyze("the cat sat on the mat")
