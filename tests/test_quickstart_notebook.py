"""docs/quickstart.ipynb runs top to bottom on a headless kernel (nbclient), offline, and every figure
it shows draws in its nbconvert HTML export with no network: the four Plotly figures, the interactive
viewer and the BertViz drop-in, one drawn figure per figure cell. plotly.js travels once per kernel,
so the export must also draw when cells ran out of order (an output that needs plotly.js above the
one carrying it) or when the cell carrying it ran again (its old output, plotly.js with it, replaced).
The notebook is executed in memory; the committed file never carries outputs."""
import json
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "quickstart.ipynb"
FIGURE_CALLS = ("bertviz_lab.figure(", "bertviz_lab.show(", "head_view(")

# per code cell of the exported page (nbconvert's lab template): what it drew. A Plotly figure has drawn
# when its trace layers hold traces (bars, heatmap images); the head view when it has drawn its lines.
DRAWN = """() => Array.from(document.querySelectorAll('.jp-CodeCell')).map(cell => ({
  plots: cell.querySelectorAll('.js-plotly-plot').length,
  plotted: Array.from(cell.querySelectorAll('.js-plotly-plot')).filter(
    p => p.querySelectorAll('.mlayer > *').length > 0).length,
  headviews: cell.querySelectorAll('.bvl-headview').length,
  lines: Array.from(cell.querySelectorAll('.bvl-headview')).filter(
    h => Number(h.getAttribute('data-lines') || 0) > 0).length}))"""


def test_quickstart_notebook_is_committed_without_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


def execute(tmp_path, monkeypatch, order=None):
    """The notebook run on a kernel of this very interpreter (the venv the tests run in), its code
    cells in ``order`` (indices among the code cells, repeats allowed; default: top to bottom)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    spec_dir = tmp_path / "kernels" / "bvl-test"
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bertviz-lab tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))  # where jupyter_client looks for kernels/bvl-test
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    client = nbclient.NotebookClient(nb, kernel_name="bvl-test", timeout=300, allow_errors=False,
                                     resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for k in range(len(code)) if order is None else order:
            client.execute_cell(nb.cells[code[k]], code[k])
    return nb


def figure_cells(nb) -> list[int]:
    """Code cells whose value is a figure: `fig`, bertviz_lab.figure(...), show(...), head_view(...)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    last = [c.source.rstrip().splitlines()[-1] for c in code]
    return [i for i, line in enumerate(last) if line == "fig" or line.startswith(FIGURE_CALLS)]


def html_of(cell) -> str:
    return "".join(o["data"]["text/html"] for o in cell.get("outputs", []) if "text/html" in o.get("data", {}))


def export_and_draw(browser, nb, tmp_path) -> tuple[list[dict], str, list[str]]:
    """The nbconvert HTML export opened in headless Chromium with the network cut: what each code
    cell drew (once every figure cell drew, or after 60 s), the page, and the requests it tried."""
    nbconvert = pytest.importorskip("nbconvert")
    page_html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    exported = tmp_path / "quickstart.html"
    exported.write_text(page_html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    tried = []

    def offline(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        tried.append(route.request.url)
        return route.abort()

    page.route("**/*", offline)
    page.goto(exported.as_uri(), timeout=120_000)  # plotly.js inside: slow to parse on a loaded machine
    wanted = figure_cells(nb)
    done = f"""() => {{ const cells = ({DRAWN})(); return {json.dumps(wanted)}.every(
        i => cells[i].plotted + cells[i].lines > 0 && cells[i].plotted === cells[i].plots
             && cells[i].lines === cells[i].headviews); }}"""
    try:
        page.wait_for_function(done, timeout=60000)
    except Exception:  # the assertions below say which cell did not draw
        pass
    drawn = page.evaluate(DRAWN)
    page.close()
    return drawn, page_html, tried


def check_every_figure_draws(nb, drawn, page_html, tried) -> None:
    code = [c for c in nb.cells if c.cell_type == "code"]
    cells = figure_cells(nb)
    assert len(cells) == 6  # single head, overview, show, comparison, best heads, the BertViz drop-in
    for i in cells:  # each figure cell's output: one self-contained figure (the Plotly div and its script, or a viewer)
        html = html_of(code[i])
        assert html.count('class="plotly-graph-div') + html.count("window.BvlViewer({") == 1, code[i].source
    figures = sum(1 for i in cells if drawn[i]["plotted"] + drawn[i]["lines"] > 0)
    assert figures == len(cells), [(code[i].source.splitlines()[-1], drawn[i]) for i in cells]
    assert page_html.count("plotly.js v") == 1  # plotly.js once, inline
    for i in cells:  # everything each cell shows drew: its Plotly plots and its head views
        assert drawn[i]["plotted"] == drawn[i]["plots"] and drawn[i]["lines"] == drawn[i]["headviews"], drawn[i]
    show = next(i for i in cells if "bertviz_lab.show(" in code[i].source)
    assert drawn[show] == {"plots": 1, "plotted": 1, "headviews": 1, "lines": 1}  # the heatmap and the head view
    # nothing of ours asks the network; nbconvert's own template does (require.js, MathJax) and is refused
    assert {url.split("/")[2] for url in tried} <= {"cdnjs.cloudflare.com"}, tried


@pytest.mark.timeout(600)
def test_quickstart_notebook_runs_and_shows_figures(tmp_path, monkeypatch, browser):
    nb = execute(tmp_path, monkeypatch)
    code = [c for c in nb.cells if c.cell_type == "code"]
    kinds = [{k for o in c.get("outputs", []) for k in o.get("data", {})} for c in code]
    for i in figure_cells(nb):
        if "bertviz_lab.figure(" in code[i].source or code[i].source.rstrip().endswith("fig"):
            assert "application/vnd.plotly.v1+json" in kinds[i], (code[i].source, kinds[i])  # JupyterLab, VS Code
        assert "text/html" in kinds[i], (code[i].source, kinds[i])  # what classic Notebook, Colab and nbconvert show
    assert "[MASK]" in "".join(o.get("text", "") for o in code[0].outputs)  # the tokens were printed
    drawn, page_html, tried = export_and_draw(browser, nb, tmp_path)
    check_every_figure_draws(nb, drawn, page_html, tried)
    for title in ("Layer 4, head 7", "Best head per relation"):
        assert title in page_html, title


@pytest.mark.timeout(600)
def test_every_figure_draws_whatever_order_the_cells_ran(tmp_path, monkeypatch, browser):
    """The overview cell runs before the single-head cell above it (so the output carrying plotly.js
    sits below one that needs it), then runs again at the end (replacing that output): the export
    still draws every figure, with plotly.js in it once."""
    nb = json.loads(NOTEBOOK.read_text())
    n = sum(c["cell_type"] == "code" for c in nb["cells"])
    nb = execute(tmp_path, monkeypatch, order=[0, 2, 1, *range(3, n), 2])
    drawn, page_html, tried = export_and_draw(browser, nb, tmp_path)
    check_every_figure_draws(nb, drawn, page_html, tried)
