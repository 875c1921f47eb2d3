"""A first visit, in real Chromium (issue 60; target: the first heatmap within 1.5 s on a quiet machine): from the
navigation's start to the opening example's heatmap drawn (its draw counter set, then two animation frames:
pixels on screen), each visit in a new browser context (no cache, no cookies: a first visit), at 1024x768 and
1920x1080, on the app as ``python app.py`` serves it (the embedded default, warmed by one visit first). Median of
--repeat visits per size.

The peer, BertViz, has no page of its own to visit (it draws inside a notebook); its first render of the head view
is timed in the `browser` section.

    python benchmarks/bench_first_visit.py [--repeat 5] [--write]
"""
from __future__ import annotations

import argparse
import statistics

from bench_browser import ARGS, server_lab
from sections import run_recorded

from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs
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
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    demo = build_demo(server_lab())
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
            visit(browser, url, *SIZES[0])  # the server's first visit warms its caches, as a running app's are
            for width, height in SIZES:
                times = [visit(browser, url, width, height) for _ in range(args.repeat)]
                first = [t[0] for t in times]
                rows.append((f"{width}x{height}", statistics.median(first), min(first), max(first),
                             statistics.median(t[1] for t in times)))
            browser.close()
    finally:
        demo.close()
    print(f"first visits, each in a new browser context; median of {args.repeat} per size\n")
    print("| viewport | navigation -> first heatmap drawn (median) | fastest | slowest | target | "
          "-> Plotly's interactive map (median) |")
    print("|---|---|---|---|---|---|")
    for size, median, fastest, slowest, interactive in rows:
        print(f"| {size} | {median:.0f} ms | {fastest:.0f} ms | {slowest:.0f} ms | <= 1500 ms | {interactive:.0f} ms |")


if __name__ == "__main__":
    run_recorded("first-visit", "A first visit to the page, in Chromium (issue 60)", __doc__, main)
