"""What a person waits for, in real Chromium (issue 11): the app on the embedded model next to
BertViz 1.4.1's head view on the same attention, in the same browser.

Ours, medians over --repeat actions at 32, 128 and 512 tokens:
- Run -> heatmap drawn: from the click on Run to the single-head heatmap re-drawn (two animation
  frames after Plotly returns, i.e. pixels on screen; the per-size line also gives the Run clocked one frame
  later, as this script did before 2026-12-04: see DRAWN); Runs alternate between two sentences of the same
  length (texts_of), so each Run shows new tokens as a person's does;
- head switch and layer switch -> heatmap drawn: from the Enter key in the slider's box to the new
  heatmap drawn (no server round trip: the page switches by itself);
- head-view layer switch: the same with the Head view tab open (lines of the chosen heads).
Beside them, the machine's speed at the time (machine_check): the forward pass alone, in this process, at
128 tokens, before and after the browser's Runs. This VM's speed drifts by tens of percent within an hour, and
a figure read in a slow phase says little about the code: the check tells which phase a run was in.
The peer, BertViz's head view (html_action="return", all 12 heads shown as it defaults):
- first render: from navigation start to its attention lines drawn;
- layer switch: from the layer <select>'s change event to the new lines drawn.
BertViz loads require.js, d3 5.7.0 and jQuery from a CDN; this machine has no CDN, so the script
takes the same files from the npm registry (`npm pack`, jQuery 2.1.4 = the oldest 2.x there;
BertViz asks for 2.0.0) and serves them to the page at the CDN's URLs.

    python benchmarks/bench_browser.py [--repeat 20] [--sizes 32 128 512]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs
from bertviz_lab.app.ports import free_port

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
CDN = {  # the URL BertViz asks for -> (npm package, file in its tarball)
    "require.min.js": ("requirejs@2.3.6", "package/require.js"),
    "d3.min.js": ("d3@5.7.0", "package/dist/d3.min.js"),
    "jquery.min.js": ("jquery@2.1.4", "package/dist/jquery.min.js"),
}
WORDS = ("the quick brown fox jumps over the lazy dog while a small bird sings in the old oak tree near the "
         "river and children play football in the park").split()

# In the page: resolves once an element's draw counter (an attribute: data-draws, or the neuron view's
# data-renders) has passed `before` and two animation frames have begun since: the frame that paints the new
# drawing, then the next one, which begins once that paint is done (the new pixels on screen). A
# MutationObserver notices the counter as the task that drew ends. Until 2026-12-04 the benchmarks polled the
# counter once per frame instead, so they noticed a draw only at the next frame and stopped one frame later
# than they needed to; that later stop is returned too, so figures taken both ways can be set side by side in
# one run: [pixels, one frame later] (performance.now() values).
def drawn_by(counter: str) -> str:
    return """(el, before) => new Promise(resolve => {
  const count = () => Number(el.getAttribute('COUNTER') || 0);
  const frames = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    const pixels = performance.now();
    requestAnimationFrame(() => resolve([pixels, performance.now()]));
  }));
  if (count() > before) { frames(); return; }
  const watch = new MutationObserver(() => { if (count() > before) { watch.disconnect(); frames(); } });
  watch.observe(el, {attributes: true, attributeFilter: ['COUNTER']});
})""".replace("COUNTER", counter)


DRAWN = drawn_by("data-draws")
# From t0 (or the Enter key, KEY_CLOCK) to the element's new drawing on screen.
WAIT_DRAWN = f"""async ([selector, before, t0]) => {{
  const [pixels] = await ({DRAWN})(document.querySelector(selector), before);
  return pixels - (t0 === null ? window.__bvlKey : t0);
}}"""
# A click on Run to the single-head heatmap's new pixels: [ms, ms as clocked before 2026-12-04].
CLICK_RUN = f"""async () => {{
  const el = document.querySelector('#single-plot .bvl-heatmap');
  const before = Number(el.getAttribute('data-draws') || 0);
  const t0 = performance.now();
  const drawn = ({DRAWN})(el, before);
  document.querySelector('#run').click();
  const [pixels, later] = await drawn;
  return [pixels - t0, later - t0];
}}"""
# The page holds every head's codes: the Run is over (its download of them too), and the next may start
# (true at once for a checkout older than the page's state, which run_pair.py may measure).
EVERY_HEAD = "!(window.bvl && window.bvl.state) || window.bvl.state.codes !== null"
KEY_CLOCK = "document.addEventListener('keydown', e => { if (e.key === 'Enter') window.__bvlKey = performance.now(); }, true)"
BERTVIZ_SWITCH = """async (layer) => {
  const select = document.querySelector('#layer');
  const t0 = performance.now();
  select.value = String(layer);
  select.dispatchEvent(new Event('change', {bubbles: true}));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  if (!document.querySelectorAll('#vis svg line').length) throw new Error('no lines');
  return performance.now() - t0;
}"""


def server_lab():
    """The embedded model, loaded as python app.py loads it in its process (bertviz_lab/launcher.py:
    ``serving_lab``), or as the launcher of a checkout from before serving_lab did (freed memory kept)."""
    try:
        from bertviz_lab.launcher import serving_lab
    except ImportError:
        from bertviz_lab.bert.runtime.allocator import keep_freed_memory

        keep_freed_memory()
        return load("default", device="cpu")
    return serving_lab("default", "cpu")


@contextlib.contextmanager
def opened_app(lab, viewport: tuple[int, int] = (1400, 1000)):
    """The app on ``lab`` as ``python app.py`` serves it, and a Chromium page on it once the opening example's
    heatmap is drawn; closed on leaving."""
    from playwright.sync_api import sync_playwright

    from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs
    from bertviz_lab.app.ports import free_port

    demo = build_demo(lab)
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            page.goto(url, timeout=120_000)
            page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", state="attached", timeout=120_000)
            yield page
            browser.close()
    finally:
        demo.close()


def text_of(lab, n_tokens: int, start: int = 0) -> str:
    """A text of exactly ``n_tokens`` tokens, [CLS] and [SEP] included (one-piece words), from WORDS[start] on."""
    words: list[str] = []
    while len(lab.tokenizer.encode(" ".join(words)).ids) < n_tokens:
        words.append(WORDS[(start + len(words)) % len(WORDS)])
    return " ".join(words)


def texts_of(lab, n_tokens: int) -> tuple[str, str]:
    """Two texts of ``n_tokens`` tokens with a different word at every position. Runs alternate between them,
    as a person Runs a new sentence: the heatmap's axes get new labels each time (the same text again would
    let Plotly keep its axes and margins, and measure less than a person waits for)."""
    return text_of(lab, n_tokens), text_of(lab, n_tokens, start=1)


def cdn_files(cache: Path) -> dict[str, bytes]:
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, (package, member) in CDN.items():
        tgz = next(cache.glob(package.replace("@", "-") + ".tgz"), None)
        if tgz is None:
            subprocess.run(["npm", "pack", package, "--silent"], cwd=cache, check=True, capture_output=True)
            tgz = next(cache.glob(package.replace("@", "-") + ".tgz"))
        with tarfile.open(tgz) as archive:
            out[name] = archive.extractfile(member).read()
    return out


def machine_check(lab, n_tokens: int = 128, repeat: int = 30) -> float:
    """The forward pass alone (``Lab.analyze``, no server, no browser) at ``n_tokens``: median ms of ``repeat``
    after one warm-up. It measures the machine, not a change: printed beside the browser's figures, it tells
    whether they were taken in one of this VM's slow phases, in which the same code's pass takes longer too.
    Compare a script's checks with its own: bench_browser times the server's lab (its model thread),
    run_pair.py a lab of its own; on 2026-12-04 both gave 23-25 ms in a quiet phase. A check spans ~1 s, so a
    burst of the VM's neighbours can still lift one of the two."""
    text = text_of(lab, n_tokens)
    lab.analyze(text, truncate=True)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        lab.analyze(text, truncate=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def machine_line(before_ms: float, after_ms: float, n_tokens: int = 128) -> str:
    return (f"machine check (machine_check): forward pass alone at {n_tokens} tokens {before_ms:.1f} ms before the "
            f"browser's Runs, {after_ms:.1f} ms after")


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ms"


def ours(page, url: str, texts: tuple[str, str], repeat: int, lab) -> dict[str, list[float]]:
    page.goto(url)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", timeout=60000)  # the opening example
    page.evaluate(KEY_CLOCK)
    times: dict[str, list[float]] = {"run": [], "run, one frame later": [], "head": [], "layer": [], "headview layer": []}
    for i in range(repeat + 1):  # the first: warm-up
        run_ms, later_ms = run(page, texts[i % 2])  # a new sentence each Run
        if i:
            times["run"].append(run_ms)
            times["run, one frame later"].append(later_ms)
    for i in range(repeat):
        for name, slider, value in (("head", "head", i % lab.n_heads + 1), ("layer", "layer", i % lab.n_layers + 1)):
            times[name].append(switch(page, "#single-plot .bvl-heatmap", slider, value))
    page.get_by_role("tab", name="Head view").click()
    page.wait_for_selector("#headview-plot .bvl-headview[data-draws]", timeout=20000)
    for i in range(repeat):
        times["headview layer"].append(switch(page, "#headview-plot .bvl-headview", "layer", i % lab.n_layers + 1))
    page.get_by_role("tab", name="Single head").click()
    return times


def run(page, text: str) -> tuple[float, float]:
    """Type ``text``, click Run: ms to the heatmap's new pixels, and as clocked before 2026-12-04 (DRAWN).
    Returns once the page holds every head's codes, so a next Run does not start under this one's download."""
    page.fill("#text-a textarea", text)
    pixels_ms, later_ms = page.evaluate(CLICK_RUN)
    page.wait_for_function(EVERY_HEAD, timeout=60000)
    return pixels_ms, later_ms


def switch(page, selector: str, slider: str, value: int) -> float:
    box = page.locator(f"#{slider} input[type=number]")
    if box.input_value() == str(value):  # a change is needed for a redraw
        value = value % 2 + 1
    before = int(page.get_attribute(selector, "data-draws") or 0)
    box.fill(str(value))
    box.press("Enter")
    return page.evaluate(WAIT_DRAWN, [selector, before, None])


def bertviz(browser, lab, text: str, repeat: int, files: dict[str, bytes], folder: Path) -> dict[str, list[float]]:
    import torch
    from bertviz import head_view

    a = lab.analyze(text)
    attention = tuple(torch.from_numpy(a.attention[i][None]) for i in range(a.n_layers))  # (1, heads, q, k) each
    html = head_view(attention, a.tokens, html_action="return").data
    page_file = folder / "bertviz.html"
    page_file.write_text(f"<html><body>{html}</body></html>")
    times: dict[str, list[float]] = {"bertviz first render": [], "bertviz layer": []}
    page = browser.new_page(viewport={"width": 1600, "height": 1000})

    def serve(route):
        name = route.request.url.rsplit("/", 1)[-1]
        name = name if name.endswith(".js") else name + ".js"
        body = files.get(name)
        if body is None:
            return route.abort()
        return route.fulfill(body=body, content_type="application/javascript")

    page.route("https://cdnjs.cloudflare.com/**", serve)
    for _ in range(max(3, repeat // 4)):  # a full page load each: fewer of them
        page.goto(page_file.as_uri())
        page.wait_for_function("document.querySelectorAll('#vis svg line').length > 0", timeout=120000, polling="raf")
        times["bertviz first render"].append(page.evaluate(
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"))
    for i in range(repeat):
        times["bertviz layer"].append(page.evaluate(BERTVIZ_SWITCH, (i + 1) % a.n_layers))
    page.close()
    return times


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--bertviz-max", type=int, default=128, help="largest size given to BertViz (its page "
                        "embeds every weight as JSON text: ~200 MB at 512 tokens)")
    args = parser.parse_args()
    lab = server_lab()
    demo = build_demo(lab)
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    folder = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    files = cdn_files(Path(os.environ.get("BVL_NPM_CACHE", Path.home() / ".cache" / "bertviz-lab-npm")))
    chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    rows = []
    machine_before = machine_check(lab)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            for n in args.sizes:
                texts = texts_of(lab, n)
                text = texts[0]
                tokens = len(lab.encode(text).ids)
                times = ours(page, url, texts, args.repeat, lab)
                if n <= args.bertviz_max:
                    times.update(bertviz(browser, lab, text, args.repeat, files, folder))
                rows.append((tokens, {k: statistics.median(v) for k, v in times.items()}))
                print(f"{tokens} tokens: " + ", ".join(f"{k} {median_ms(v)}" for k, v in times.items()), flush=True)
            browser.close()
        machine_after = machine_check(lab)
    finally:
        demo.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(machine_line(machine_before, machine_after))
    print("\n| tokens | Run -> heatmap | head switch | layer switch | head-view layer switch | BertViz first render "
          "| BertViz layer switch | BertViz layer / our layer |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tokens, m in rows:
        peer = m.get("bertviz layer")
        ratio = f"{peer / m['layer']:.1f}x" if peer else "-"
        cells = " | ".join(f"{m[k]:.0f} ms" if k in m else "not run" for k in
                           ("run", "head", "layer", "headview layer", "bertviz first render", "bertviz layer"))
        print(f"| {tokens} | {cells} | {ratio} |")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("browser", "In the browser: Run and switching, next to BertViz", __doc__, _entry)
