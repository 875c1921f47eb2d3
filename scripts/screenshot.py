"""Take the README's screenshot (docs/screenshot.png) from the real app in headless Chromium.

    python scripts/screenshot.py [--out docs/screenshot.png] [--text "..."]

Tests never write tracked files; this explicit command is the only thing that refreshes it.
"""
from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from bertviz_lab import load
from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "screenshot.png")
    parser.add_argument("--text", default="The cat chased the other cat around the garden.")
    parser.add_argument("--tab", default=None, help="a tab to open before the screenshot, e.g. 'Head view'")
    parser.add_argument("--size", default="1600x1000", help="the window, WIDTHxHEIGHT (the first screen is taken)")
    parser.add_argument("--full-page", action="store_true", help="the whole page, not only the first screen")
    parser.add_argument("--click", default=None, metavar="ELEM_ID",
                        help="a button to press after opening the tab (e.g. explain-btn); waits for its plot")
    parser.add_argument("--scroll-to", default=None, metavar="ELEM_ID", help="scroll this element into view")
    args = parser.parse_args()
    demo = build_demo(load("default", device="cpu"))
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **launch_kwargs(demo=demo))
    chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            width, height = (int(v) for v in args.size.split("x"))
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", timeout=60000)  # the opening example
            page.fill("#text-a textarea", args.text)
            page.click("#run")
            page.wait_for_function("Number(document.querySelector('#single-plot .bvl-heatmap').dataset.draws) >= 2",
                                   timeout=60000)
            if args.tab:
                tab = page.get_by_role("tab", name=args.tab)
                tab.click()
                panel = tab.get_attribute("aria-controls")
                # the tab's server-drawn figures have arrived (its first shown plot is drawn; buttons' plots
                # stay empty, and plots a button reveals, like the Syntax tab's, are hidden until then)
                page.wait_for_function(
                    "panel => { const plots = [...document.getElementById(panel).querySelectorAll('[id$=\"-plot\"]')]"
                    ".filter(p => p.offsetParent !== null);"
                    " return plots.length === 0 || plots[0].querySelector('.main-svg') !== null; }",
                    arg=panel, timeout=120000)
            if args.click:
                page.click(f"#{args.click}")
                plot = args.click.replace("-btn", "-plot")
                page.wait_for_selector(f"#{plot} .main-svg", timeout=120000)
            if args.scroll_to:
                page.locator(f"#{args.scroll_to}").scroll_into_view_if_needed()
            page.wait_for_timeout(1000)  # a screenshot only: let the last animation frame land
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=args.full_page)
            browser.close()
    finally:
        demo.close()
    print(args.out)


if __name__ == "__main__":
    main()
