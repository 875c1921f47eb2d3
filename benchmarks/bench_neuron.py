"""The neuron view in real Chromium (issue 29): page size and switch time at 64 tokens on the
embedded default (6 layers x 12 heads), in one run. Times are measured in the page, from the key
press (↓: the next query token) or the head <select>'s change to the rows re-drawn plus two
animation frames (pixels on screen); medians of --repeat. Target: <= 50 ms.

BertViz 1.4.1's own neuron view needs its forked transformers (``bertviz.transformers_neuron_view``)
and a checkpoint in that fork's format; it is not run here, so there is no side-by-side figure.

    python benchmarks/bench_neuron.py [--repeat 20] [--write]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_browser import WORDS, drawn_by
from sections import run_recorded

from bertviz_lab import load, show

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
# From the key press or the change to the rows on screen (bench_browser.drawn_by: until 2026-12-04 this script
# polled the render counter once per frame, which stopped a frame late).
TIMED = f"""async ([action]) => {{
  const root = document.querySelector('.bvl-neuron');
  const before = Number(root.dataset.renders);
  const drawn = ({drawn_by("data-renders")})(root, before);
  const t0 = performance.now();
  if (action === 'key') {{
    root.dispatchEvent(new KeyboardEvent('keydown', {{key: 'ArrowDown', bubbles: true}}));
  }} else {{
    const select = root.querySelector('select.head-select');
    select.value = String((Number(select.value) + 1) % select.options.length);
    select.dispatchEvent(new Event('change'));
  }}
  const [pixels] = await drawn;
  return pixels - t0;
}}"""


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    lab = load("default", device="cpu")
    text = " ".join(WORDS * 3)
    while len(lab.encode(text).ids) > args.tokens:
        text = text.rsplit(" ", 1)[0]
    analysis = lab.analyze(text)
    page_html = show(analysis, view="neuron", lab=lab, html_action="return").data
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        path = Path(folder) / "neuron.html"
        path.write_text(page_html, encoding="utf-8")
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(path.as_uri())
        page.wait_for_selector(".bvl-neuron[data-renders='1']")
        times = {"key": [], "head": []}
        for i in range(args.repeat + 2):
            for action in times:
                value = page.evaluate(TIMED, [action])
                if i >= 2:  # the first two are warm-up
                    times[action].append(value)
        browser.close()
    print(f"{len(analysis.tokens)} tokens, {lab.n_layers} layers x {lab.n_heads} heads, model {analysis.model}")
    print(f"page: {len(page_html.encode('utf-8')) / 1024:.0f} KB (self-contained, no plotly.js)")
    print(f"query token switch (ArrowDown) -> pixels: median {statistics.median(times['key']):.1f} ms "
          f"(max {max(times['key']):.1f}; target <= 50 ms)")
    print(f"head switch (<select>) -> pixels: median {statistics.median(times['head']):.1f} ms "
          f"(max {max(times['head']):.1f}; target <= 50 ms)")


if __name__ == "__main__":
    run_recorded("neuron", "The neuron view: page size and switch time in Chromium", __doc__, main)
