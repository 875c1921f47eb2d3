"""One thread for the server's tensor work (bertviz_lab/bert/model_thread.py): what it buys.

A server answers each request on one of its worker threads. Before, the app loaded the model on the main
thread and every Run's pass ran on a worker: two threads with libgomp thread pools, more pool threads than
cores, so libgomp's idle threads stop spinning between a pass's parallel regions. With the model thread the
load and every pass run on one thread. Here each way runs in a fresh process (the pools cannot be undone
inside one), as a server would: the embedded model loaded, then Runs (``Lab.analyze``) called one after
another from a worker thread. Processes alternate (before, after, before, after); per size the better of
each way's two medians is printed, with the ratio.

    python benchmarks/bench_model_thread.py
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

from sections import run_recorded

LENGTHS = (32, 128, 512)


def measure(mode: str) -> dict[str, float]:
    from bench_browser import text_of
    from common import median_seconds

    from bertviz_lab import load
    from bertviz_lab.bert.runtime.allocator import keep_freed_memory
    from bertviz_lab.bert.runtime.model_thread import on_model_thread, use_model_thread

    keep_freed_memory()  # as the app, both ways
    if mode == "model-thread":
        use_model_thread()
    lab = on_model_thread(load, "default", device="cpu")  # without the model thread: here, the main thread
    worker = ThreadPoolExecutor(1)  # the server's worker thread a request runs on
    out = {}
    for n in LENGTHS:
        text = text_of(lab, n)
        out[str(n)] = median_seconds(lambda text=text: worker.submit(lab.analyze, text).result(),
                                     repeat=20 if n < 512 else 8)
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2])))
        return
    from common import fresh_process_table

    print("Runs from a worker thread; model loaded on the main thread (before) or on the model thread (after)")
    fresh_process_table(__file__, ("main-thread load", "model-thread"), ("before ms", "model thread ms"), LENGTHS)


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("model-thread", "One thread for tensor work: Runs from a server's worker thread", __doc__, _entry)
