"""Scales that say what they show, read in headless Chromium as a person reads them (issue 43): the single
head's colour bar title and its top tick, the line under the map, the page-wide "fixed 0–1 / per head"
switch, and the neuron view opening on the token clicked in the head view with every column header in view."""
import numpy as np
import pytest
from test_app_browser import open_app

from bertviz_lab.figures.payload import ROWS_ABOUT

ATTENTION = "attention weight (0–1, rows sum to 1)"
BAR = """() => {
  const plot = document.querySelector('#single-plot .bvl-heatmap');
  const lines = [...plot.querySelectorAll('.cbtitle tspan.line')].map(t => t.textContent);
  const title = lines.length ? lines.join(' ') : (plot.querySelector('.cbtitle text') || {}).textContent;
  return {title: title, ticks: [...plot.querySelectorAll('.colorbar .cbaxis text')].map(t => t.textContent),
          zmax: plot.data[0].zmax, scale: plot.dataset.scale};
}"""


def colour_bar(page) -> dict:
    """The single head's colour bar as drawn: its title (one line), its tick labels bottom up, the trace's zmax."""
    return page.evaluate(BAR)


def wait_for_bar(page, condition: str):
    """Wait until the drawn colour bar satisfies ``condition``, a JS expression over ``bar`` (see BAR)."""
    page.wait_for_function(f"(() => {{ const bar = ({BAR})(); return bar.ticks.length > 0 && ({condition}); }})()",
                           timeout=30000)
    return colour_bar(page)


def test_the_single_heads_colour_bar_and_caption_say_what_they_show_and_the_scale_switches(browser, sharp_app,
                                                                                          sharp_lab):
    page = open_app(browser, sharp_app, width=1024, height=900)
    bar = wait_for_bar(page, f"bar.title === {ATTENTION!r}")
    assert bar["scale"] == "fixed" and bar["zmax"] == 1 and bar["ticks"][-1] == "1"  # weights read on 0–1
    about = page.locator("#single-plot .bvl-caption .bvl-about").inner_text()
    assert about == ROWS_ABOUT["attention"] and "attention sink" in about
    head_max = float(sharp_lab.analyze(page.input_value("#text-a textarea")).attention[0, 0].max())
    assert head_max < 0.95  # else the switch below could not show
    page.evaluate("window.bvl.scale('per-head')")
    bar = wait_for_bar(page, "bar.scale === 'per-head' && bar.title.includes(\"scaled to this head's max\") && "
                             "bar.ticks[bar.ticks.length - 1] !== '1'")
    assert bar["title"] == ATTENTION + " — scaled to this head's max"
    assert bar["zmax"] == pytest.approx(head_max, rel=1e-3)  # the head's own largest weight
    top_tick = float(bar["ticks"][-1])
    assert head_max / 2 < top_tick <= head_max  # the bar's top tick sits just under the head's max
    page.evaluate("window.bvl.scale('fixed')")
    bar = wait_for_bar(page, "bar.scale === 'fixed' && bar.ticks[bar.ticks.length - 1] === '1'")
    assert bar["title"] == ATTENTION
    page.close()


def test_the_neuron_view_opens_on_the_token_clicked_in_the_head_view(browser, sharp_app, sharp_lab):
    page = open_app(browser, sharp_app, width=1024, height=1000)
    tokens = sharp_lab.analyze(page.input_value("#text-a textarea")).tokens
    page.get_by_role("tab", name="Head view").click()
    page.locator("#headview-plot .bvl-hv-left[data-index='4']").click()
    page.wait_for_function("document.querySelector('#headview-token textarea, #headview-token input').value === '4'",
                           timeout=60000)
    page.get_by_text("Neuron view: query and key vectors").click()
    page.click("#neuron-btn")
    frame = page.wait_for_selector("#neuron-view iframe", timeout=60000).content_frame()
    frame.wait_for_selector(".bvl-neuron[data-query='4']", timeout=60000)
    assert frame.inner_text(".query-label") == tokens[4]
    assert frame.locator("tr[data-token='4'] td.tok.query").count() == 1
    # the frame shows the whole page, every row without scrolling (neuron.js tells the page its height)
    frame.wait_for_function("document.documentElement.scrollHeight <= window.innerHeight", timeout=60000)
    headers = frame.locator("tr.head td").evaluate_all(
        "cells => cells.map(c => [c.textContent, c.getBoundingClientRect().right, document.documentElement.clientWidth])")
    assert [text for text, _, _ in headers][1:] == ["key k", "q × k (elementwise)", "q · k", "softmax(q·k/√d)"]
    assert all(right <= width for _, right, width in headers), headers
    page.close()


def test_every_neuron_view_header_shows_whole_in_the_frame_a_1024_px_page_gives(browser, tmp_path):
    """BERT-base's 64-dimensional heads in the 560-pixel frame the app's views column has at 1024 px: the
    vectors narrow to fit and the last header, softmax(q·k/√d), is not cut."""
    from bertviz_lab.figures.neuron import neuron_page, neuron_payload

    rng = np.random.default_rng(0)
    tokens = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", ".", "[SEP]"]
    queries, keys = rng.normal(size=(2, 2, 2, len(tokens), 64)).astype(np.float32)  # (layers, heads, tokens, 64)
    path = tmp_path / "neuron.html"
    path.write_text(neuron_page(neuron_payload(tokens, [0] * len(tokens), queries, keys, "BERT-base sized")),
                    encoding="utf-8")
    page = browser.new_page(viewport={"width": 560, "height": 700})
    page.goto(path.as_uri())
    page.wait_for_selector(".bvl-neuron[data-renders='1']")
    page_width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert page_width[0] <= page_width[1]  # nothing runs off the right edge
    last = page.locator("tr.head td").last
    assert last.inner_text() == "softmax(q·k/√d)"
    fits = last.evaluate("c => [c.scrollWidth, c.clientWidth, c.getBoundingClientRect().right]")
    assert fits[0] <= fits[1] and fits[2] <= page_width[1], fits
    assert 1 <= float(page.get_attribute(".bvl-neuron", "data-cell")) < 8  # one to eight pixels per dimension
    page.close()
