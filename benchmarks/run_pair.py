"""Run -> pixels of two checkouts, paired (issue 45): on a VM whose speed drifts by tens of percent from
minute to minute, two runs of run_breakdown.py one after the other can differ by more than a change does.
Here each checkout serves the app on the embedded model in its own process (``PYTHONPATH`` = the checkout,
``keep_freed_memory`` as ``python app.py``), one Chromium opens both, and the Runs alternate between them
(ABBA order), each Run on one of two sentences of the same length in turn (bench_browser.texts_of), so each
"after" Run has a "before" Run next to it in time. Printed: each side's median click -> heatmap pixels (the
same test as bench_browser.py) and the median of the paired differences with its quartiles. Both servers
stay up throughout, so both medians include the idle one's background work (Gradio's queue polls). The
machine's speed before and after (bench_browser.machine_check: the forward pass alone at 128 tokens) tells
which of the VM's phases the run was in.

    python benchmarks/run_pair.py BEFORE_CHECKOUT AFTER_CHECKOUT [--sizes 128 512] [--rounds 24]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_browser import ARGS, machine_check, machine_line, run, texts_of
from sections import run_recorded

SERVE = """
import sys, time
sys.path.append(sys.argv[2])  # this script's folder, after the checkout: its bertviz_lab comes first
from bench_browser import server_lab
from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs
demo = build_demo(server_lab())  # as python app.py loads it (or as the checkout's own launcher did)
demo.queue(**queue_kwargs())
kwargs = launch_kwargs(demo=demo)
kwargs.pop("server_port", None)
_, url, _ = demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), prevent_thread_lock=True, quiet=True, **kwargs)
import bertviz_lab
print("FROM", bertviz_lab.__file__, flush=True)
print("URL", url, flush=True)
while True:
    time.sleep(3600)
"""


def start(checkout: Path, port: int) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    # in the checkout's folder: ``python -c`` puts the working folder first on sys.path, before PYTHONPATH
    here = str(Path(__file__).resolve().parent)  # SERVE takes server_lab from bench_browser.py
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port), here], env=env, cwd=checkout, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if line.startswith("URL"):
            return proc, line.split()[1]
        if line.startswith("FROM"):
            print(f"{checkout}: bertviz_lab from {line.split()[1]}")
    raise RuntimeError(f"the server of {checkout} did not start")


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def main() -> None:
    from playwright.sync_api import sync_playwright

    from bertviz_lab import load

    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--rounds", type=int, default=24, help="Runs per side and size")
    args = parser.parse_args()
    lab = load("default", device="cpu")
    machine_before = machine_check(lab)
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    servers = {name: start(path, 7870 + i) for i, (name, path) in enumerate(sides.items())}
    chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            pages = {}
            for name, (_, url) in servers.items():
                pages[name] = page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.goto(url)
                page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", timeout=120000)
            for n in args.sizes:
                texts = texts_of(lab, n)
                for page in pages.values():  # warm-up: both sentences once
                    for text in texts:
                        run(page, text)
                times: dict[str, list[float]] = {name: [] for name in sides}
                for i in range(args.rounds):
                    for name in (("before", "after") if i % 2 else ("after", "before")):
                        times[name].append(run(pages[name], texts[i % 2])[0])
                        time.sleep(0.1)
                change = [a - b for a, b in zip(times["after"], times["before"])]
                rows.append((len(lab.encode(texts[0]).ids), statistics.median(times["before"]),
                             statistics.median(times["after"]), *quartiles(change)))
            browser.close()
    finally:
        for proc, _ in servers.values():
            proc.kill()
    machine_after = machine_check(lab)  # the servers gone: the same conditions as before
    print(f"before: {sides['before']} ({commit_of(sides['before'])}), after: {sides['after']} "
          f"({commit_of(sides['after'])}), {args.rounds} Runs each per size")
    print(machine_line(machine_before, machine_after) + "\n")
    print("| tokens | before: median Run -> pixels | after | after - before, paired: median (quartiles) |")
    print("|---:|---:|---:|---:|")
    for tokens, before, after, low, mid, high in rows:
        print(f"| {tokens} | {before:.0f} ms | {after:.0f} ms | {mid:+.0f} ms ({low:+.0f} .. {high:+.0f}) |")


def commit_of(folder: Path) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder, capture_output=True,
                           text=True)
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("run-pair", "Run -> pixels of two checkouts, paired", __doc__, _entry)
