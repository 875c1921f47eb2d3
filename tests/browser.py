"""Headless Debian chromium driven by Playwright (which never downloads a browser here); the ``browser``
fixture itself is in conftest.py."""
import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


def browser_or_skip(playwright):
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"chromium not found at {CHROMIUM}: CI must install it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)


def open_head_view_section(browser, url, title):
    """The app at 1400 x 1000 after its opening example, with the Head view tab and one of its sections open."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", state="attached", timeout=30000)
    page.get_by_role("tab", name="Head view").click()
    page.get_by_text(title).click()
    return page
