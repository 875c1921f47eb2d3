"""A screen a teacher can use without explaining it (issue 30): what a person sees in headless
Chromium, item by item — arcs that read one way, titles that fit, nothing empty before use, only
the chosen intervention's controls, no stale results, shared colour scales, honest predictions."""
import pytest
from test_app_browser import open_app, run

MASK_TEXT = "The capital of France is [MASK]."


def rects(page, root, selector):
    """Bounding boxes [left, top, right, bottom] of ``selector`` inside ``root``, as drawn."""
    return page.evaluate(
        "([root, sel]) => [...document.querySelector(root).querySelectorAll(sel)].map(e => {"
        " const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })", [root, selector])


def overlap(a, b, slack=1.0):
    return a[0] + slack < b[2] and b[0] + slack < a[2] and a[1] + slack < b[3] and b[1] + slack < a[3]


def plot_data(page, plot):
    return page.evaluate(f"document.querySelector('{plot} .js-plotly-plot').data.map(t => [t.zmax, t.showscale])")


def choose_intervention(page, label):
    page.click("#intervention-kind input")
    page.get_by_role("option", name=label).click()


@pytest.fixture(scope="module")
def small_limit_app(tiny_lab):
    """A server that takes at most 12 tokens per request (as a public Space takes 256)."""
    from conftest import launch

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.state import Limits

    limits = Limits(max_tokens=12)
    demo = build_demo(tiny_lab, limits=limits)
    yield launch(demo, limits)
    demo.close()


def test_arcs_read_head_to_dependent_with_a_legend_of_what_is_drawn(browser, sharp_app):
    from bertviz_lab.resources import SAMPLE_TREEBANK
    from bertviz_lab.treebank import read_conllu

    page = open_app(browser, sharp_app, width=1600, height=1000)
    page.get_by_role("tab", name="Syntax").click()
    page.click("#syntax-btn")
    page.wait_for_selector("#syntax-arcs-btn", state="visible", timeout=120000)  # shown once a treebank is scored
    page.click("#syntax-arcs-btn")
    page.wait_for_selector("#syntax-arcs .legendtext", timeout=60000)
    text = page.locator("#syntax-arcs-text").inner_text()
    sentence = read_conllu(SAMPLE_TREEBANK)[0]
    assert "Arcs read head → dependent, as UD draws them" in text
    for d, (h, rel) in enumerate(zip(sentence.heads, sentence.relations)):
        if h > 0:  # the list names each gold arc head first: "det: cat → The"
            assert f"{rel}: {sentence.words[h - 1]} → {sentence.words[d]}" in text, (rel, text)
    assert "head → dependent" in page.locator("#syntax-arcs .gtitle").text_content()
    legend = page.locator("#syntax-arcs .legendtext").all_text_contents()
    assert legend == ["gold arc (treebank)", "predicted = a gold arc", "predicted = a gold arc reversed",
                      "predicted, not a gold arc"]
    labels = rects(page, "#syntax-arcs", "g.annotation text.annotation-text")
    labels = [r for r in labels if r[2] - r[0] > 1]  # the arrowheads' annotations have no text
    words = rects(page, "#syntax-arcs", ".textpoint text")
    arrows = rects(page, "#syntax-arcs", "g.annotation-arrow-g path")
    assert len(words) == len(sentence.words) and len(labels) == sum(h > 0 for h in sentence.heads)
    heads = rects(page, "#syntax-arcs", "g.annotation-arrow-g")
    assert len(heads) == len(labels) + len(sentence.words)  # one per gold arc, one per word's predicted head
    for i, a in enumerate(labels):
        assert not any(overlap(a, b) for b in labels[i + 1:]), "two arc labels overlap"
        assert not any(overlap(a, w) for w in words), "an arc label covers a word"
    for arrow in arrows:
        assert not any(overlap(arrow, w) for w in words), "an arrowhead covers a word"
    page.close()


@pytest.mark.parametrize("width", [1024, 1920])
def test_titles_fit_and_nothing_is_empty_before_use(browser, default_app, width):
    page = open_app(browser, default_app, width=width, height=1000)
    # before any intervention or scoring: no empty frames, a one-line hint in their place
    assert page.locator("#intervention-message").inner_text().startswith("Results appear here")
    for elem in ("intervention-plot", "intervention-changes", "js-plot", "offsets-plot", "direction-table", "ablation-plot",
                 "set-table"):
        assert page.locator(f"#{elem}").is_hidden(), elem
    page.get_by_role("tab", name="Syntax").click()
    page.wait_for_selector("#syntax-message", state="visible")
    assert "Score every head on the treebank" in page.locator("#syntax-message").inner_text()
    for elem in ("syntax-table", "syntax-bars", "syntax-relation", "syntax-plot", "syntax-diff", "syntax-uuas",
                 "syntax-sentence", "syntax-arcs"):
        assert page.locator(f"#{elem}").is_hidden(), elem
    run(page, MASK_TEXT)
    page.wait_for_function("Number(document.querySelector('#single-plot .bvl-heatmap').dataset.draws) >= 2",
                           timeout=60000)
    for tab, plot in (("Model overview", "#overview-plot"), ("Aggregates", "#aggregates-plot"),
                      ("Head summary", "#summary-plot"), ("Masked words", "#pred-plot")):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_selector(f"{plot} .gtitle", timeout=60000)
        [svg] = rects(page, plot, ".main-svg:first-of-type")
        [title] = rects(page, plot, ".gtitle")
        assert svg[0] <= title[0] and title[2] <= svg[2], (tab, width, title, svg)  # not cut at either end
    page.close()


def test_only_the_chosen_interventions_controls_show_and_warnings_say_where_to_pick(browser, tiny_app):
    page = open_app(browser, tiny_app, width=1280, height=800)
    shown = ("intervention-heads", "intervention-shift", "intervention-seed", "intervention-sinks", "intervention-unit",
             "intervention-ablation", "direction-btn", "ablation-btn", "positions-table-btn")

    def visible():
        return {elem for elem in shown if page.locator(f"#{elem}").is_visible()}

    assert visible() == {"intervention-sinks", "direction-btn"}  # the default: left context only
    choose_intervention(page, "Shift all position ids by k")
    page.wait_for_function("document.querySelector('#intervention-explain').innerText.includes('Adds k')")
    page.wait_for_selector("#intervention-shift", state="visible")
    assert visible() == {"intervention-shift", "positions-table-btn"}
    choose_intervention(page, "Ablate heads (zero, mean or resampled output)")
    page.wait_for_selector("#intervention-heads", state="visible")
    assert visible() == {"intervention-heads", "intervention-ablation", "ablation-btn"}
    assert "Replaces the named heads' outputs" in page.locator("#intervention-explain").inner_text()
    choose_intervention(page, "Mask the picked tokens ([MASK])")
    page.wait_for_function("document.querySelector('#intervention-explain').innerText.includes('Its targets are the tokens')")
    assert visible() == set()
    page.click("#intervention-btn")  # nothing picked: the warning says where to pick, and the page scrolls there
    page.wait_for_function("document.querySelector('#intervention-message').innerText.includes('under Mask tokens')",
                           timeout=30000)
    page.wait_for_function("(() => { const r = document.querySelector('#token-picker').getBoundingClientRect();"
                           " return r.top >= 0 && r.bottom <= window.innerHeight; })()", timeout=10000)
    page.close()


def test_a_new_run_clears_results_and_a_refused_one_marks_the_views_stale(browser, small_limit_app):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(small_limit_app)  # its opening example (13 tokens) is over this server's limit
    page.wait_for_function("document.querySelector('#message') && "
                           "document.querySelector('#message').innerText.includes('⚠️')", timeout=30000)
    run(page, "the cat sat")
    page.wait_for_function("document.querySelector('#message').innerText.includes('5 tokens')", timeout=30000)
    page.click("#intervention-btn")
    page.wait_for_selector("#intervention-plot .main-svg", timeout=60000)
    assert page.locator("#intervention-plot").is_visible()
    run(page, "a dog ran")  # the intervention showed the previous input: gone with the new Run
    page.wait_for_selector("#intervention-plot", state="hidden", timeout=30000)
    assert page.locator("#intervention-message").inner_text().startswith("Results appear here")
    run(page, "one two three four five six seven eight nine ten eleven twelve thirteen")
    page.wait_for_function("document.querySelector('#message').innerText.includes('still show the previous input')",
                           timeout=30000)
    page.close()


def test_compared_panels_share_a_scale_with_a_per_panel_switch(browser, default_app):
    page = open_app(browser, default_app, width=1600, height=1000)
    page.get_by_role("tab", name="Aggregates").click()
    page.wait_for_selector("#aggregates-plot .main-svg", timeout=60000)
    traces = plot_data(page, "#aggregates-plot")
    assert len(traces) == 5
    assert traces[0][0] == traces[1][0] == traces[2][0] and traces[3][0] == traces[4][0]  # raw; rollout and flow
    assert [shown for _, shown in traces] == [False, False, True, False, True]  # one colour bar per scale
    height = page.evaluate("document.querySelector('#aggregates-plot .main-svg').getBoundingClientRect().height")
    assert height < 1000  # three columns, two rows: every panel on one screen
    page.click("#intervention-btn")
    page.wait_for_selector("#intervention-plot .main-svg", timeout=60000)
    baseline, intervened, _ = plot_data(page, "#intervention-plot")
    assert baseline[0] == intervened[0] and not baseline[1] and intervened[1]
    page.locator("#intervention-plot .updatemenu-button", has_text="per-panel scales").click()
    page.wait_for_function("(() => { const d = document.querySelector('#intervention-plot .js-plotly-plot').data;"
                           " return d[0].zmax !== d[1].zmax && d[0].showscale; })()", timeout=10000)
    page.close()


def test_predictions_show_probabilities_and_how_far_to_trust_them(browser, default_app):
    page = open_app(browser, default_app, width=1600, height=1000)
    run(page, MASK_TEXT, "It is a big city.")
    page.get_by_role("tab", name="Masked words").click()
    page.wait_for_selector("#pred-plot .bartext", timeout=60000)
    bars = page.locator("#pred-plot .bartext").all_text_contents()
    assert len(bars) == 5 and all(0 < float(b) <= 1 for b in bars)  # each prediction's probability
    note = page.locator("#tab-predictions").inner_text()
    assert "P(sentence B follows sentence A) =" in note
    assert "puts the hidden word first" in note and "in its top 5" in note  # measured on held-out text
    assert "tells a following sentence from a random one" in note  # NSP, with the same honesty
    assert "python app.py --model bert-base-uncased" in note
    page.close()
