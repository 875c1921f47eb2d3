"""The neuron view (query and key vectors of one head, BertViz's third view) in Chromium: what the
page shows for a query token is that head's attention row, and layer, head and query switch in the
page; the notebook call and the app's frame give the same page."""
import re

import numpy as np
import pytest

import bertviz_lab
from bertviz_lab.app.forms import RunInput, ViewControls

TEXT = "the big cat sat on the red mat"


def open_page(browser, html_text, tmp_path):
    path = tmp_path / "neuron.html"
    path.write_text(html_text, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests = []
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri())
    page.wait_for_selector(".bvl-neuron[data-renders='1']")
    assert requests == []  # nothing fetched
    return page


def shown(page) -> tuple[dict, list[float]]:
    root = page.eval_on_selector(".bvl-neuron", "e => ({layer: e.dataset.layer, head: e.dataset.head, "
                                                "query: e.dataset.query, renders: e.dataset.renders})")
    probs = page.eval_on_selector_all("td.soft .p", "cells => cells.map(c => Number(c.textContent))")
    return root, probs


def test_the_softmax_column_is_the_heads_attention_row_and_switches_in_the_page(browser, tiny_lab, tmp_path):
    analysis = tiny_lab.analyze(TEXT)
    out = bertviz_lab.show(analysis, layer=2, head=3, html_action="return", view="neuron", lab=tiny_lab)
    assert "<meta charset='utf-8'>" in out.data and "plotly" not in out.data.lower()
    page = open_page(browser, out.data, tmp_path)
    state, probs = shown(page)
    assert (state["layer"], state["head"], state["query"]) == ("2", "3", "1")  # the first word is the query
    np.testing.assert_allclose(probs, analysis.attention[1, 2, 1], atol=2e-3)
    page.click("tr[data-token='4'] td.tok")  # "sat"
    page.wait_for_selector(".bvl-neuron[data-query='4']")
    np.testing.assert_allclose(shown(page)[1], analysis.attention[1, 2, 4], atol=2e-3)
    page.select_option("select.head-select", "0")
    page.wait_for_selector(".bvl-neuron[data-head='1']")
    np.testing.assert_allclose(shown(page)[1], analysis.attention[1, 0, 4], atol=2e-3)
    page.focus(".bvl-neuron")
    page.keyboard.press("ArrowDown")
    page.wait_for_selector(".bvl-neuron[data-query='5']")
    np.testing.assert_allclose(shown(page)[1], analysis.attention[1, 0, 5], atol=2e-3)
    assert page.eval_on_selector("tr[data-token='5'] td.tok", "e => e.classList.contains('query')")
    page.close()


def test_show_needs_the_lab_for_the_neuron_view(tiny_lab):
    with pytest.raises(ValueError, match="lab=lab"):
        bertviz_lab.show(tiny_lab.analyze(TEXT), view="neuron")


def test_the_app_shows_the_neuron_view_in_a_frame_of_its_own(tiny_lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab)
    handlers = demo.bvl_controllers
    session = Session(model=tiny_lab.checkpoint_id, device="cpu")
    before = handlers.inspect.neuron_view(session, 1, 1)
    assert "press Run first" in next(iter(before.values()))
    handlers.run.analyze(RunInput(TEXT), session, ViewControls())
    frame = next(iter(handlers.inspect.neuron_view(session, 2, 1).values()))
    assert frame.startswith("<iframe") and 'sandbox="allow-scripts allow-downloads"' in frame  # no same-origin
    assert re.search(r"&quot;layer&quot;: 1, &quot;head&quot;: 0", frame)


def test_a_new_run_or_a_refused_one_never_leaves_views_that_do_not_match(tiny_lab):
    """Views drawn on request (neuron view, "Why this word?") are emptied by the next Run; a refused Run
    says that the views still show the previous input."""
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Limits, Session
    from bertviz_lab.app.tabs import EXPLAIN_HINT

    demo = build_demo(tiny_lab, limits=Limits(max_tokens=12))
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = Session(model=tiny_lab.checkpoint_id, device="cpu")
    handlers.run.analyze(RunInput(TEXT), session)
    assert handlers.inspect.neuron_view(session, 1, 1)[ui.neuron_html].startswith("<iframe")
    again = handlers.run.analyze(RunInput("the dog ran"), session)
    assert again[ui.neuron_html] == "" and again[ui.explain_message] == EXPLAIN_HINT and len(again[ui.explain_table]) == 0
    from bertviz_lab.app.events import RUN_OUTPUTS

    run = demo.bvl_gate.wrap(handlers.run.analyze, RUN_OUTPUTS)  # as the page's Run goes: through the budget
    refused = run(RunInput("the cat " * 20), session)
    assert "still show the previous input (5 tokens)" in refused[ui.message] and ui.payload not in refused


def test_the_neuron_view_exports_svg_and_png(browser, tiny_lab, tmp_path):
    analysis = tiny_lab.analyze(TEXT)
    page = open_page(browser, bertviz_lab.show(analysis, layer=2, head=3, html_action="return", view="neuron",
                                               lab=tiny_lab).data, tmp_path)
    with page.expect_download() as done:
        page.click("button.export[data-format='svg']")
    svg = done.value.path().read_text(encoding="utf-8")
    assert done.value.suggested_filename == "neuron-L2-H3-q1.svg" and svg.startswith("<svg")
    for token in analysis.tokens:
        assert f">{token}</text>" in svg
    shown_probs = [float(v) for v in re.findall(r'>(\d\.\d{3})</text>', svg)]
    np.testing.assert_allclose(shown_probs, analysis.attention[1, 2, 1], atol=2e-3)  # the softmax column as drawn
    with page.expect_download() as done:
        page.click("button.export[data-format='png']")
    assert done.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.close()


def test_mpnets_softmax_column_adds_the_relative_bias_and_is_its_attention(browser, tmp_path):
    """MPNet adds a relative-position bias to q·k/√d: the page's softmax includes it (without it the column
    would be another distribution, checked below), so it is the head's attention row."""
    import torch
    import transformers as tf
    from test_position_families import mpnet_tokenizer

    from bertviz_lab.lens import queries_and_keys, score_bias

    folder = tmp_path / "mpnet"
    folder.mkdir()
    tok = mpnet_tokenizer(folder)
    torch.manual_seed(0)
    model = tf.MPNetForMaskedLM(tf.MPNetConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                               num_attention_heads=4, intermediate_size=64, max_position_embeddings=80))
    with torch.no_grad():
        model.mpnet.encoder.relative_attention_bias.weight.normal_(0.0, 2.0)
    model.save_pretrained(folder)
    lab = bertviz_lab.load(str(folder), device="cpu")
    analysis = lab.analyze(TEXT)
    scales, bias = score_bias(lab, analysis)
    assert bias is not None and scales == pytest.approx([8 ** -0.5] * 2)  # head_dim 32 / 4 = 8
    out = bertviz_lab.show(analysis, layer=2, head=3, html_action="return", view="neuron", lab=lab)
    page = open_page(browser, out.data, tmp_path)
    assert "position bias" in page.inner_text("tr.head")
    np.testing.assert_allclose(shown(page)[1], analysis.attention[1, 2, 1], atol=2e-3)
    q, k = queries_and_keys(lab, analysis)  # (layers, heads, tokens, head_dim) each
    logits = q[1, 2, 1] @ k[1, 2].T * scales[1]
    content_only = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert np.abs(content_only - analysis.attention[1, 2, 1]).max() > 0.05  # the bias matters here
    page.close()
