"""The head-scoring report opens offline in headless chromium, shows its figures, and runs nothing
that came from the treebank."""

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
    page.goto(files["report"].as_uri())
    page.wait_for_selector("#stats .main-svg", timeout=20000)
    assert page.locator("#rel-0 .hm").count() >= 1 or page.locator("#rel-0 .heatmaplayer image").count() >= 1
    assert "dep->head" in page.locator("#rel-0").inner_text()
    assert page.locator("#best .errorbar").count() >= 1  # intervals drawn as error bars
    assert page.locator("#uuas .main-svg").count() >= 1
    assert "Best head per relation" in page.content()
    assert HOSTILE in page.locator("table.best").inner_text()  # shown as text, never run
    assert requests == [] and dialogs == []
    page.close()
