"""Take the README's screenshot (docs/screenshot.png) from the real app in headless Chromium, or every
tab at several widths for a look before a release.

    python scripts/screenshot.py [--out docs/screenshot.png] [--text "..."] [--tab 'Head view'] [--size 1600x1000]
    python scripts/screenshot.py --every-tab shots/ [--sizes 1024x768,1920x1080]

Without ``--text`` the page keeps its opening example (the first of the page's examples, one [MASK]).
Tests never write tracked files; this explicit command is the only thing that refreshes it.
"""
from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from bertviz_lab import load
from bertviz_lab.app import build_demo, launch_kwargs, queue_kwargs
from bertviz_lab.app.ports import free_port
from bertviz_lab.app.tabs import TABS, WORK_TABS

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
DRAWN = ("panel => { const plots = [...document.getElementById(panel).querySelectorAll('[id$=\"-plot\"]')]"
         ".filter(p => p.offsetParent !== null);"
         " return plots.length === 0 || plots[0].querySelector('svg') !== null; }")


def open_tab(page, label: str) -> None:
    """Open a tab and wait until its server-drawn figures have arrived (its first shown plot is drawn;
    buttons' plots stay empty, and plots a button reveals, like the Syntax tab's, are hidden until then)."""
    tab = page.get_by_role("tab", name=label, exact=True)
    tab.click()
    if TABS[label] == "headview":  # drawn by the page's script
        page.wait_for_selector("#headview-plot .bvl-hv-token", timeout=60000)
    else:
        page.wait_for_function(DRAWN, arg=tab.get_attribute("aria-controls"), timeout=120000)
    if TABS[label] in WORK_TABS:  # the lower group: shown from its tab row down
        page.locator("#work-tabs").scroll_into_view_if_needed()
        page.evaluate("document.querySelector('#work-tabs').scrollIntoView({block: 'start'})")
    else:
        page.evaluate("window.scrollTo(0, 0)")


def opened(browser, url: str, width: int, height: int, text: str | None):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", timeout=60000)  # the opening example
    if text:
        page.fill("#text-a textarea", text)
        page.click("#run")
        page.wait_for_function("Number(document.querySelector('#single-plot .bvl-heatmap').dataset.draws) >= 2",
                               timeout=60000)
    return page


def every_tab(browser, url: str, folder: Path, sizes: list[tuple[int, int]], text: str | None) -> None:
    """One screenshot per tab and size, named WIDTH-TAB.png."""
    folder.mkdir(parents=True, exist_ok=True)
    for width, height in sizes:
        page = opened(browser, url, width, height, text)
        for label, tab_id in TABS.items():
            open_tab(page, label)
            page.wait_for_timeout(1000)  # a screenshot only: let the last animation frame land
            page.screenshot(path=str(folder / f"{width}-{tab_id}.png"))
            print(folder / f"{width}-{tab_id}.png")
        page.close()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "screenshot.png")
    parser.add_argument("--text", default=None, help="a sentence to Run first (default: the opening example)")
    parser.add_argument("--tab", default=None, help="a tab to open before the screenshot, e.g. 'Head view'")
    parser.add_argument("--size", default="1600x1000", help="the window, WIDTHxHEIGHT (the first screen is taken)")
    parser.add_argument("--full-page", action="store_true", help="the whole page, not only the first screen")
    parser.add_argument("--click", default=None, metavar="ELEM_ID",
                        help="a button to press after opening the tab (e.g. explain-btn); waits for its plot")
    parser.add_argument("--scroll-to", default=None, metavar="ELEM_ID", help="scroll this element into view")
    parser.add_argument("--every-tab", type=Path, default=None, metavar="FOLDER",
                        help="instead: every tab at every --sizes, into FOLDER")
    parser.add_argument("--sizes", default="1024x768,1920x1080", help="for --every-tab: WxH,WxH,...")
    args = parser.parse_args()
    demo = build_demo(load("default", device="cpu"))
    demo.queue(**queue_kwargs())
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                            **launch_kwargs(demo=demo))
    chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            if args.every_tab is not None:
                sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
                every_tab(browser, url, args.every_tab, sizes, args.text)
                return
            width, height = (int(v) for v in args.size.split("x"))
            page = opened(browser, url, width, height, args.text)
            if args.tab:
                open_tab(page, args.tab)
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
            print(args.out)
    finally:
        demo.close()


if __name__ == "__main__":
    main()
