"""docs/quickstart.ipynb runs top to bottom on a headless kernel (nbclient), offline, and shows
what it says: Plotly figures for the views, HTML for the interactive viewer and the drop-in.
The notebook is executed in memory; the committed file never carries outputs."""
import json
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "quickstart.ipynb"


def test_quickstart_notebook_is_committed_without_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.timeout(600)
def test_quickstart_notebook_runs_and_shows_figures(tmp_path, monkeypatch, browser):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    # a kernel of this very interpreter (the venv the tests run in), whatever kernels the machine has
    spec_dir = tmp_path / "kernels" / "bvl-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bertviz-lab tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))  # where jupyter_client looks for kernels/bvl-test
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="bvl-test", timeout=300, allow_errors=False,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = {i: c.get("outputs", []) for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    kinds = {i: {k for o in outs for k in o.get("data", {})} for i, outs in outputs.items()}
    sources = {i: nb.cells[i].source for i in outputs}
    figure_cells = [i for i, s in sources.items() if s.rstrip().endswith((
        "fig", 'bertviz_lab.figure(a, "overview")', 'bertviz_lab.figure(c, "comparison", layer=2, head=1)',
        'bertviz_lab.figure(run.summary, "best-heads")'))]
    assert len(figure_cells) == 4
    for i in figure_cells:
        assert "application/vnd.plotly.v1+json" in kinds[i], (sources[i], kinds[i])
        assert "text/html" in kinds[i], (sources[i], kinds[i])  # what classic Notebook, Colab and nbconvert show
    viewer_cells = [i for i, s in sources.items() if "bertviz_lab.show(" in s or s.rstrip().endswith("])")]
    assert len(viewer_cells) == 2
    for i in viewer_cells:
        html = "".join(o["data"]["text/html"] for o in outputs[i] if "text/html" in o.get("data", {}))
        assert "BvlViewer" in html and "cdn" not in html.lower().split("bvlviewer")[0][-2000:]
    first = "".join(o.get("text", "") for o in outputs[1])
    assert "[MASK]" in first  # the tokens were printed
    # exported with nbconvert to one offline HTML page (no kernel, no network), every figure draws
    nbconvert = pytest.importorskip("nbconvert")
    page_html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert page_html.count("window.PlotlyConfig") <= 1 or page_html.count("plotly.js v") == 1  # plotly.js once
    exported = tmp_path / "quickstart.html"
    exported.write_text(page_html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_())
    page.goto(exported.as_uri())
    drawn = len(figure_cells) + 2 * len(viewer_cells)  # each viewer: its heatmap and the overview below it
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {drawn}", timeout=60000)
    page.wait_for_function(f"document.querySelectorAll('.bvl-headview canvas').length >= {len(viewer_cells)}",
                           timeout=60000)
    for title in ("Layer 4, head 7", "Best head per relation"):
        assert page.locator(".gtitle", has_text=title).count() >= 1, title
    page.close()

