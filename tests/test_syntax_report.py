"""The head-scoring report opens offline in headless chromium, shows its figures, and runs nothing
that came from the treebank."""

import pytest

from bertviz_lab.reports.syntax_report import write_outputs
from bertviz_lab.syntax.scoring import score_treebank
from bertviz_lab.syntax.summary import Settings, summarise
from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

HOSTILE = "</script><script>alert(1)</script>"


def test_report_renders_offline_and_escapes_treebank_text(browser, sharp_lab, tmp_path):
    sentences = read_conllu(SAMPLE_TREEBANK)[:15]
    sentences[0].relations[0] = HOSTILE  # a DEPREL an attacker wrote
    summary = summarise(score_treebank(sharp_lab, sentences, batch_size=8), settings=Settings(resamples=100, min_arcs=1))
    files = write_outputs(summary, tmp_path / "out")
    page = browser.new_page()
    requests, dialogs = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    def block(route):
        requests.append(route.request.url)
        route.abort()

    page.route("http*://**/*", block)  # no network at all
    page.goto(files["report"].as_uri(), timeout=120_000)  # a page with plotly.js inside: slow to parse on a loaded machine
    page.wait_for_selector("#stats .main-svg", timeout=120_000)
    assert page.locator("#rel-0 .hm").count() >= 1 or page.locator("#rel-0 .heatmaplayer image").count() >= 1
    assert "dep->head" in page.locator("#rel-0").inner_text()
    assert page.locator("#best .errorbar").count() >= 1  # intervals drawn as error bars
    assert page.locator("#uuas .main-svg").count() >= 1
    assert "Best head per relation" in page.content()
    assert HOSTILE in page.locator("table.best").first.inner_text()  # shown as text, never run
    assert requests == [] and dialogs == []
    page.close()


def test_report_fits_1024_px_and_best_heads_csv_is_one_row_per_relation_and_measure(browser, sharp_lab, tmp_path):
    """The wide best-heads row (50 numbers per relation) is a tidy file and a report table of few
    columns: nothing is lost (the file reads back into the wide table), nothing is cut at 1024 px."""
    import pandas as pd

    from bertviz_lab.syntax.run import LONG_COLUMNS, MEASURES, best_heads_wide, run_syntax

    sentences = read_conllu(SAMPLE_TREEBANK)[:30]
    run = run_syntax(sharp_lab, sentences, Settings(resamples=50, min_arcs=5, null_seeds=2), ensembles=True)
    wide = run.summary.best_heads
    assert wide.shape[1] >= 50 and "ensemble_accuracy" in wide  # what the file was: one 50-column row per relation
    files = write_outputs(run.summary, tmp_path / "out")
    best = pd.read_csv(files["best_heads"])
    assert list(best.columns) == ["model", "model_sha256", "source"] + LONG_COLUMNS  # 13 columns
    assert len(best) == len(wide) * len(MEASURES)  # one row per relation and measure
    det = best[(best.relation == "det") & (best.measure == "best_head")].iloc[0]
    row = wide.set_index("relation").loc["det"]
    assert (det.predictor, det.direction) == (row.best_head, row.direction)
    assert (det.value, det.ci_low, det.ci_high) == pytest.approx((row.accuracy, row.ci_low, row.ci_high), abs=1e-6)
    offset = best[(best.relation == "det") & (best.measure == "baseline")].predictor.item()
    assert offset == f"offset {int(row.baseline_offset):+d}"
    back = best_heads_wide(best)[list(wide.columns)]
    pd.testing.assert_frame_equal(back, wide.reset_index(drop=True), check_dtype=False, atol=1e-6)

    page = browser.new_page(viewport={"width": 1024, "height": 900})
    page.route("http*://**/*", lambda route: route.abort())
    page.goto(files["report"].as_uri(), timeout=120_000)  # a page with plotly.js inside: slow to parse on a loaded machine
    page.wait_for_selector("#stats .main-svg", timeout=120_000)
    widest = page.evaluate("Math.max(...Array.from(document.querySelectorAll('table')).map(t => t.rows[0].cells.length))")
    assert widest <= 8
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024
    first = page.locator("table.best").first
    assert first.locator("th").all_inner_texts()[:3] == ["relation", "arcs", "best head, in sample"]
    cell = first.locator("tr", has_text="det").first.locator("td").nth(2).inner_text()
    assert cell.split() == [row.best_head, row.direction, f"{row.accuracy:.3f}",
                            f"[{row.ci_low:.3f},", f"{row.ci_high:.3f}]"]
    # a head name or a direction is never cut at its hyphen: each such word stays on one line
    heights = page.evaluate("Array.from(document.querySelectorAll('table.best .word')).map(w => w.getClientRects().length)")
    assert heights and set(heights) == {1}
    page.close()
