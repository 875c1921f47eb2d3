"""Take the README's notebook picture (docs/notebook.png) from a real headless run: execute
docs/quickstart.ipynb with nbclient, then draw the HTML output of its BertViz drop-in cell (what
Jupyter shows under that cell) in headless Chromium and photograph it.

    python scripts/notebook_screenshot.py [--out docs/notebook.png]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


def executed_notebook(folder: Path):
    import nbclient
    import nbformat

    spec = folder / "kernels" / "bvl"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                                                           "{connection_file}"], "display_name": "bvl",
                                                  "language": "python"}))
    os.environ["JUPYTER_PATH"] = str(folder)
    nb = nbformat.read(ROOT / "docs" / "quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(nb, kernel_name="bvl", timeout=600, resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "notebook.png")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bvl-notebook-"))
    try:
        nb = executed_notebook(folder)
        cell = next(c for c in nb.cells if c.cell_type == "code" and "head_view(outputs.attentions" in c.source)
        # the drop-in's output is light (the head view alone, no plotly.js): it draws by itself
        html = "".join(o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))
        page_file = folder / "cell.html"
        code = cell.source.replace("&", "&amp;").replace("<", "&lt;")
        page_file.write_text("<!doctype html><html><head><meta charset='utf-8'></head><body style='margin:16px;"
                             "font-family:DejaVu Sans,Arial'><pre style='background:#f5f5f5;padding:8px;"
                             f"font-size:12px'>{code}</pre>{html}</body></html>")
        chromium = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 1000})
            page.goto(page_file.as_uri())
            # the head view has drawn its lines (viewer.js counts them in data-lines once they are on the canvas)
            page.wait_for_function("Number((document.querySelector('.bvl-headview') || {getAttribute: () => 0})"
                                   ".getAttribute('data-lines')) > 0", timeout=60000)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=False)
            browser.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(args.out)


if __name__ == "__main__":
    main()
