"""Reading every head's codes after a Run (issue 45): by the page's main thread, as views.js did until
2026-12-04, beside by its worker that hands the buffer over without a copy, as it does now (both through
views.js's own ``bvl.readCodes``). The app serves the embedded model; after one Run at each size, Chromium
reads that Run's codes file --repeat times each way, alternating, under a trace. Printed per size: the
file's size, the wall time per read, and the CPU the page's main thread spent per read (the sum of its
tasks' thread time in the trace, divided by the reads): the time during which, just after the heatmap's
first paint, the page could not answer a person.

    python benchmarks/bench_codes_read.py [--repeat 10] [--sizes 32 128 512]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from bench_browser import ARGS, run, server_lab, texts_of
from sections import run_recorded

from bertviz_lab.app.ports import free_port

# In the page: read the file at `url` ([kind, url]) as views.js reads it, by the page or by its worker.
READ = r"""async ([kind, url]) => {
  const start = performance.now(), buffer = await window.bvl.readCodes(url, kind === 'worker');
  return [performance.now() - start, buffer.byteLength];
}"""


def main_thread_cpu_ms(trace_file: Path) -> float:
    """The thread time of every task the page's main thread ran while the trace recorded."""
    data = json.loads(trace_file.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    threads = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name"
               and e["args"]["name"] == "CrRendererMain"}
    return sum(e.get("tdur", 0) for e in events
               if (e.get("pid"), e.get("tid")) in threads and e.get("name") == "ThreadControllerImpl::RunTask") / 1e3


def main() -> None:
    from playwright.sync_api import sync_playwright

    from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512])
    args = parser.parse_args()
    lab = server_lab()
    demo = build_demo(lab)
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    folder = Path(tempfile.mkdtemp(prefix="bench-codes-"))
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(url)
            page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", timeout=60000)
            for n in args.sizes:
                text = texts_of(lab, n)[0]
                run(page, text)
                codes_url, size = page.evaluate("[window.bvl.state.p.codes_url, window.bvl.state.p.codes_bytes]")
                wall: dict[str, list[float]] = {"page": [], "worker": []}
                cpu: dict[str, list[float]] = {"page": [], "worker": []}
                for i in range(args.repeat + 1):  # the first round: warm-up
                    for kind in ("page", "worker") if i % 2 else ("worker", "page"):
                        trace = folder / f"{kind}.json"
                        browser.start_tracing(page=page, path=str(trace), categories=["toplevel"])
                        ms, got = page.evaluate(READ, [kind, codes_url])
                        browser.stop_tracing()
                        if got != size:
                            raise RuntimeError(f"read {got} bytes of {size}")
                        if i:
                            wall[kind].append(ms)
                            cpu[kind].append(main_thread_cpu_ms(trace))
                rows.append((len(lab.encode(text).ids), size, wall, cpu))
            browser.close()
    finally:
        demo.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"medians of {args.repeat} reads each way, alternating\n")
    print("| tokens | codes MB | wall ms: page / worker | page's main thread CPU ms: page / worker | CPU ratio |")
    print("|---:|---:|---:|---:|---:|")
    for tokens, size, wall, cpu in rows:
        page_cpu, worker_cpu = statistics.median(cpu["page"]), statistics.median(cpu["worker"])
        print(f"| {tokens} | {size / 1e6:.1f} | {statistics.median(wall['page']):.0f} / "
              f"{statistics.median(wall['worker']):.0f} | {page_cpu:.1f} / {worker_cpu:.1f} | "
              f"{worker_cpu / max(page_cpu, 1e-9):.2f} |")


if __name__ == "__main__":
    run_recorded("codes-read", "Every head's codes: read by the page or by a worker", __doc__, main)
