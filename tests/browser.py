"""Headless Debian chromium driven by Playwright (which never downloads a browser here)."""
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


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = browser_or_skip(p)
        yield b
        b.close()
