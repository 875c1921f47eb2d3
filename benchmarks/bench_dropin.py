"""The BertViz drop-in next to BertViz 1.4.1 (issue 29), in one run: page size of ``head_view`` and
``model_view`` (html_action="return") for 12 layers x 12 heads at 64 tokens (target <= 300 KB), and
in Chromium, for the same attention: first render (navigation start to lines drawn) and layer
switch (the layer control's change to lines drawn plus two animation frames), medians of --repeat.

The attention is real MiniLM-L6 attention (6 layers x 12 heads of the published weights) with its
six layers repeated in reverse to make twelve, the size of BERT-base. BertViz takes require.js,
d3 and jQuery from a CDN; as in bench_browser.py they come from the npm registry, served at the
CDN's URLs.

    python benchmarks/bench_dropin.py [--repeat 20] [--write]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np
from bench_browser import ARGS, BERTVIZ_SWITCH, DRAWN, WORDS, cdn_files
from sections import run_recorded

from bertviz_lab import head_view, load, model_view

# Our layer switch to its lines on screen (bench_browser.DRAWN; until 2026-12-04 this script polled the draw
# counter once per frame, which stopped a frame late). BertViz draws inside the change event, so its clock
# (BERTVIZ_SWITCH) waits the same two frames after the event returns.
OUR_SWITCH = f"""async (layer) => {{
  const root = document.querySelector('.bvl-headview'), before = Number(root.getAttribute('data-draws') || 0);
  const slider = document.querySelector('.bvl-nb-layer');
  const drawn = ({DRAWN})(root, before);
  const t0 = performance.now();
  slider.value = String(layer + 1);
  slider.dispatchEvent(new Event('input', {{bubbles: true}}));
  const [pixels] = await drawn;
  return pixels - t0;
}}"""
FIRST_PAINT = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"


def twelve_layers(tokens: int):
    lab = load("minilm-original", device="cpu")
    text = " ".join(WORDS * 4)
    while len(lab.encode(text).ids) > tokens:
        text = text.rsplit(" ", 1)[0]
    a = lab.analyze(text)
    return np.concatenate([a.attention, a.attention[::-1]]), a.tokens  # (12, 12, t, t)


def timed(browser, path: Path, ready: str, switch: str, layers: int, repeat: int, route=None) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    if route is not None:
        page.route("https://cdnjs.cloudflare.com/**", route)
    first = []
    for _ in range(max(3, repeat // 4)):
        page.goto(path.as_uri())
        page.wait_for_function(ready, timeout=120000, polling="raf")
        first.append(page.evaluate(FIRST_PAINT))
    switches = [page.evaluate(switch, (i + 1) % layers) for i in range(repeat)]
    page.close()
    return {"first": statistics.median(first), "switch": statistics.median(switches)}


def main() -> None:
    import torch
    from bertviz import head_view as bertviz_head_view
    from bertviz import model_view as bertviz_model_view
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    weights, tokens = twelve_layers(args.tokens)
    attention = tuple(torch.from_numpy(layer[None].copy()) for layer in weights)  # BertViz's (1, heads, q, k) each
    pages = {"ours head_view": head_view(attention, tokens, html_action="return").data,
             "ours model_view": model_view(attention, tokens, html_action="return").data,
             "BertViz head_view": bertviz_head_view(attention, tokens, html_action="return").data,
             "BertViz model_view": bertviz_model_view(attention, tokens, html_action="return").data}
    print(f"{len(tokens)} tokens, {weights.shape[0]} layers x {weights.shape[1]} heads (MiniLM-L6's attention, "
          "its layers repeated)")
    for name, html in pages.items():
        print(f"{name}: {len(html.encode('utf-8')) / 1024:.0f} KB")
    for view in ("head_view", "model_view"):
        ours, theirs = (len(pages[f"{who} {view}"].encode("utf-8")) for who in ("ours", "BertViz"))
        print(f"{view}: ours / BertViz = {ours / theirs:.2f} (target: ours <= 300 KB)")
    files = cdn_files(Path(os.environ.get("BVL_NPM_CACHE", Path.home() / ".cache" / "bertviz-lab-npm")))

    def serve(route):
        name = route.request.url.rsplit("/", 1)[-1]
        body = files.get(name if name.endswith(".js") else name + ".js")
        return route.abort() if body is None else route.fulfill(body=body, content_type="application/javascript")

    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        paths = {}
        for name, html in pages.items():
            paths[name] = Path(folder) / (name.replace(" ", "-") + ".html")
            paths[name].write_text(f"<!doctype html><html><body>{html}</body></html>", encoding="utf-8")
        ours = timed(browser, paths["ours head_view"], "document.querySelector('.bvl-headview[data-lines]') !== null",
                     OUR_SWITCH, weights.shape[0], args.repeat)
        theirs = timed(browser, paths["BertViz head_view"], "document.querySelectorAll('#vis svg line').length > 0",
                       BERTVIZ_SWITCH, weights.shape[0], args.repeat, serve)
        browser.close()
    print(f"head_view first render: ours {ours['first']:.0f} ms, BertViz {theirs['first']:.0f} ms "
          f"(BertViz / ours {theirs['first'] / ours['first']:.1f}x)")
    print(f"head_view layer switch -> lines drawn: ours {ours['switch']:.1f} ms, BertViz {theirs['switch']:.1f} ms "
          f"(BertViz / ours {theirs['switch'] / ours['switch']:.1f}x)")


if __name__ == "__main__":
    run_recorded("dropin", "The BertViz drop-in: page size and speed next to BertViz 1.4.1", __doc__, main)
