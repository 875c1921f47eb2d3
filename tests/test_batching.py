"""Concurrent Runs share forward passes (bert/runtime/batching.py): each request gets exactly what it would alone,
never another's tensors, its own budget, and its own error."""
import threading
import time

import numpy as np
import pytest

from bertviz_lab.bert.runtime.batching import SharedPasses
from bertviz_lab.bert.runtime.budget import Budget, BudgetExceeded, spending


def wait_until(condition, seconds: float = 60) -> None:
    """Poll a condition (not a time) until it holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.005)


def test_passes_that_wait_while_one_runs_go_together_by_key():
    started, release = threading.Event(), threading.Event()
    seen = []

    def run_batch(items):
        seen.append(list(items))
        if items == ["first"]:
            started.set()
            release.wait(30)
        return [item.upper() for item in items]

    shared = SharedPasses(run_batch)
    results = {}
    first = threading.Thread(target=lambda: results.update(first=shared.run(5, "first")))
    first.start()
    assert started.wait(30)
    others = [threading.Thread(target=lambda k=k, item=item: results.update({item: shared.run(k, item)}))
              for k, item in ((5, "a"), (7, "b"), (5, "c"))]
    for t in others:
        t.start()
    wait_until(lambda: len(shared._waiting) == 3)  # all three wait for the first batch
    release.set()
    for t in [first, *others]:
        t.join(30)
    assert results == {"first": "FIRST", "a": "A", "b": "B", "c": "C"}
    assert seen[0] == ["first"] and sorted(map(sorted, seen[1:])) == [["a", "c"], ["b"]]  # one batch per key


def test_a_failed_shared_batch_reruns_each_request_alone():
    started, release = threading.Event(), threading.Event()

    def run_batch(items):
        if items == ["hold"]:
            started.set()
            release.wait(30)
        if "bad" in items:
            raise ValueError("bad item")
        return list(items)

    shared = SharedPasses(run_batch)
    results, errors = {}, {}

    def call(item):
        try:
            results[item] = shared.run(1, item)
        except ValueError as error:
            errors[item] = str(error)

    threads = [threading.Thread(target=call, args=(item,)) for item in ("hold", "good", "bad")]
    threads[0].start()
    assert started.wait(30)
    for t in threads[1:]:
        t.start()
    wait_until(lambda: len(shared._waiting) == 2)
    release.set()
    for t in threads:
        t.join(30)
    assert results == {"hold": "hold", "good": "good"} and errors == {"bad": "bad item"}


def test_concurrent_runs_get_their_own_results_and_share_batches(tiny_lab):
    texts = ["the cat sat on the [MASK] .", "a dog ran to the [MASK] .", "the [MASK] sat on the [MASK] .",
             "the cat sat on the mat ."]
    alone = {t: tiny_lab.analyze(t) for t in texts}
    before = len(tiny_lab._shared.batch_sizes)
    got: dict = {}
    barrier = threading.Barrier(8)

    def visitor(i):
        barrier.wait(30)
        for _ in range(6):
            text = texts[(i + _) % len(texts)]
            got.setdefault(text, []).append(tiny_lab.analyze(text))

    threads = [threading.Thread(target=visitor, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for text, analyses in got.items():
        for a in analyses:
            assert a.tokens == alone[text].tokens
            assert np.abs(a.attention - alone[text].attention).max() <= 1e-5
            assert [[p.token for p in m.predictions] for m in a.mlm] == \
                [[p.token for p in m.predictions] for m in alone[text].mlm]
            assert [m.predictions[0].probability for m in a.mlm] == \
                pytest.approx([m.predictions[0].probability for m in alone[text].mlm], abs=1e-5)
    assert sum(len(v) for v in got.values()) == 48
    assert max(tiny_lab._shared.batch_sizes[before:]) > 1  # some were shared


def test_each_request_is_charged_its_own_row_before_it_joins(tiny_lab):
    with spending(Budget(tokens=5)), pytest.raises(BudgetExceeded, match="up to 5 tokens"):
        tiny_lab.analyze("the cat sat on the mat today")
    with spending(Budget(token_passes=8)) as spend:
        tiny_lab.analyze("the cat sat")  # 5 tokens, one row
        assert spend.token_passes == 5 and spend.passes == 1
