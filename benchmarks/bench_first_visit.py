"""A first visit, in real Chromium (issue 60; target: the first heatmap within 1.5 s on a quiet machine): from the
navigation's start to the opening example's heatmap drawn (its draw counter set, then two animation frames:
pixels on screen), each visit in a new browser context (no cache, no cookies: a first visit), at 1024x768 and
1920x1080, on the app as ``python app.py`` serves it (the embedded default, warmed by one visit first). The sizes
take turns, --repeat visits each; per size: the median with its 95% interval (order statistics: the ranks a
binomial(n, 1/2) puts around the median), the fastest and slowest visit, and how many visits met the target. On this
machine the browser and the server share 2 cores, and one median of 5 moved by +-250 ms from run to run: hence more
visits, and the interval.

Side by side in the same run, taking turns with it visit by visit: the same page as it was served before
2026-12-06's third session ("before"): Gradio serving its own files and plotly.js, and no opening example sent
ahead (the page's request for it is answered 404, as a server without the route answers), so the opening heatmap
waits for the load event's reply.

The peer, BertViz, has no page of its own to visit (it draws inside a notebook); its first render of the head view
is timed in the `browser` section.

    python benchmarks/bench_first_visit.py [--repeat 15] [--write]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics

from bench_browser import ARGS, server_lab
from sections import run_recorded

from bertviz_lab.app import PLOTLY_JS, PLOTLY_URL, build_demo, launch_kwargs, queue_kwargs
from bertviz_lab.app.ports import free_port

# Set before the page's own scripts: the time (ms since navigation start) the first heatmap's pixels are on screen
# (the canvas map drawn before plotly.js is in, or Plotly's), and the time Plotly's interactive map is.
WATCH = """(() => {
  const at = (name, selector) => {
    const watch = new MutationObserver(() => {
      if (!document.querySelector(selector)) { return; }
      watch.disconnect();
      requestAnimationFrame(() => requestAnimationFrame(() => { window[name] = performance.now(); }));
    });
    watch.observe(document, {subtree: true, childList: true, attributes: true,
                             attributeFilter: ['data-draws', 'data-quick']});
  };
  at('__firstHeatmap', '#single-plot .bvl-heatmap[data-quick], #single-plot .bvl-heatmap[data-draws]');
  at('__interactive', '#single-plot .bvl-heatmap[data-draws]');
})();"""
SIZES = ((1024, 768), (1920, 1080))
TARGET_MS = 1500


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """The distribution-free interval of a median: sorted values at ranks j and n+1-j, j the largest rank with
    P(Binomial(n, 1/2) < j) <= (1 - level) / 2 (for n = 15: the 4th and 12th of 15)."""
    ordered, n = sorted(values), len(values)
    below, j = 0.0, 0
    while j < n and below + math.comb(n, j) / 2 ** n <= (1 - level) / 2:
        below += math.comb(n, j) / 2 ** n
        j += 1
    if j == 0:  # too few visits for this level: the whole range
        return ordered[0], ordered[-1]
    return ordered[j - 1], ordered[n - j]


def served_before(demo) -> dict:
    """launch_kwargs as they were before the opening was sent ahead and the static files served from memory."""
    import gradio as gr

    kwargs = launch_kwargs(demo=demo)
    kwargs["app_kwargs"] = {"routes": kwargs["app_kwargs"]["routes"][:1]}  # the codes route only: no bvl-opening
    kwargs["head"] = kwargs["head"].replace(json.dumps(PLOTLY_URL), json.dumps(f"gradio_api/file={PLOTLY_JS}"))
    gr.set_static_paths([str(PLOTLY_JS)])
    return kwargs


def launched(demo, kwargs: dict) -> str:
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **kwargs)
    return url


def visit(browser, url: str, width: int, height: int) -> float:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.add_init_script(WATCH)
    page.goto(url, timeout=120_000)
    page.wait_for_function("window.__firstHeatmap !== undefined && window.__interactive !== undefined",
                           timeout=120_000)
    ms = page.evaluate("[window.__firstHeatmap, window.__interactive]")
    context.close()
    return ms


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    demo, before = build_demo(server_lab()), build_demo(server_lab())
    urls = {"now": launched(demo, launch_kwargs(demo=demo)), "before": launched(before, served_before(before))}
    times: dict[tuple[str, tuple[int, int]], list] = {(which, size): [] for size in SIZES for which in urls}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
            for url in urls.values():  # each server's first visit warms its caches, as a running app's are
                visit(browser, url, *SIZES[0])
            for _ in range(args.repeat):
                for which, size in times:  # taking turns: a slow minute of the machine slows every column alike
                    times[which, size].append(visit(browser, urls[which], *size))
            browser.close()
    finally:
        demo.close()
        before.close()
    print(f"first visits, each in a new browser context; {args.repeat} per row, the rows taking turns\n")
    print("| page | viewport | navigation -> first heatmap drawn: median [95% interval] | fastest | slowest | "
          f"visits <= {TARGET_MS} ms | -> Plotly's interactive map (median) |")
    print("|---|---|---|---|---|---|---|")
    for (which, (width, height)), visits in times.items():
        first = [t[0] for t in visits]
        low, high = median_interval(first)
        met = sum(t <= TARGET_MS for t in first)
        print(f"| {which} | {width}x{height} | {statistics.median(first):.0f} ms [{low:.0f}, {high:.0f}] | "
              f"{min(first):.0f} ms | {max(first):.0f} ms | {met} of {len(first)} | "
              f"{statistics.median(t[1] for t in visits):.0f} ms |")
    for width, height in SIZES:
        now = statistics.median(t[0] for t in times["now", (width, height)])
        then = statistics.median(t[0] for t in times["before", (width, height)])
        print(f"\n{width}x{height}: before / now = {then / now:.2f}x", end="")
    print()

if __name__ == "__main__":
    run_recorded("first-visit", "A first visit to the page, in Chromium (issue 60)", __doc__, main)
