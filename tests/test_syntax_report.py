"""The probe report opens offline in headless chromium and shows its heatmaps."""
from browser import browser  # noqa: F401  (fixture)

from bertviz_lab.syntax import SAMPLE_TREEBANK, probe_treebank, read_conllu, write_outputs


def test_report_renders_offline(browser, sharp_lab, tmp_path):  # noqa: F811
    result = probe_treebank(sharp_lab, read_conllu(SAMPLE_TREEBANK)[:15], batch_size=8)
    files = write_outputs(result, tmp_path / "out")
    page = browser.new_page()
    requests = []

    def block(route):
        requests.append(route.request.url)
        route.abort()

    page.route("http*://**/*", block)  # no network at all
    page.goto(files["report"].as_uri())
    page.wait_for_selector("#rel-0 .main-svg", timeout=20000)
    assert page.locator("#rel-0 .hm").count() >= 1 or page.locator("#rel-0 .heatmaplayer image").count() >= 1
    assert "dep->head" in page.locator("#rel-0").inner_text()
    assert page.locator("#stats .main-svg").count() >= 1
    assert "Best head per relation" in page.content()
    assert requests == []
    page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
    page.close()
