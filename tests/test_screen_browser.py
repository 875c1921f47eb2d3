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
    words = rects(page, "#syntax-arcs", ".textpoint text")
    arrows = rects(page, "#syntax-arcs", "g.points path.point")  # the arrowheads: the figure's only markers
    assert len(words) == len(sentence.words) and len(labels) == sum(h > 0 for h in sentence.heads)
    assert len(arrows) == len(labels) + len(sentence.words)  # one per gold arc, one per word's predicted head
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
                           " return r.top >= 0 && r.bottom <= window.innerHeight; })()", timeout=60000)
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
    assert "bvl-stale" not in page.get_attribute("#views", "class")
    run(page, "one two three four five six seven eight nine ten eleven twelve thirteen")
    page.wait_for_function("document.querySelector('#message').innerText.includes('still show the previous input')",
                           timeout=30000)
    # the refused Run leaves the views greyed: they describe "a dog ran", not the text in the box
    page.wait_for_function("document.querySelector('#views').classList.contains('bvl-stale')", timeout=60000)
    # every visible part greyed (the status overlay is hidden), no part left at full strength: waited for, as the
    # greying is a CSS transition that a loaded machine may still be running
    page.wait_for_function("(() => { const shown = [...document.querySelectorAll('#views > *')]"
                           ".filter(e => e.getBoundingClientRect().height > 0).map(e => getComputedStyle(e).opacity);"
                           " return shown.includes('0.35') && shown.every(o => o === '0.35' || o === '0'); })()",
                           timeout=30000)
    run(page, "the cat ran")  # a Run that succeeds brings them back
    page.wait_for_function("!document.querySelector('#views').classList.contains('bvl-stale')", timeout=30000)
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
                           " return d[0].zmax !== d[1].zmax && d[0].showscale; })()", timeout=60000)
    page.close()


def test_predictions_show_probabilities_and_how_far_to_trust_them(browser, default_app):
    page = open_app(browser, default_app, width=1600, height=1000)
    run(page, MASK_TEXT, "It is a big city.")
    page.wait_for_function("document.querySelector('#message').innerText.includes('Next-sentence prediction')",
                           timeout=60000)  # this Run's result (the opening example has a [MASK] and bars too)
    page.get_by_role("tab", name="Masked words").click()
    page.wait_for_selector("#pred-plot .bartext", timeout=60000)
    bars = page.locator("#pred-plot .bartext").all_text_contents()
    assert len(bars) == 5 and all(0 < float(b) <= 1 for b in bars)  # each prediction's probability
    note = page.locator("#tab-predictions").inner_text()
    assert "P(sentence B follows sentence A) =" in note
    assert "puts the hidden word first" in note and "among its five best guesses" in note  # measured on held-out text
    assert "tells a following sentence from a random one" in note  # NSP, with the same honesty
    assert "python app.py --model bert-base-uncased" in note
    page.close()


def shown_text(page, elem):
    """The text of ``elem`` if a person sees it, else None (an empty result title is hidden)."""
    locator = page.locator(f"#{elem}")
    return locator.inner_text() if locator.is_visible() else None


def test_each_result_has_its_own_titled_place_that_goes_with_its_input(browser, tiny_app):
    page = open_app(browser, tiny_app, width=1280, height=900)
    run(page, "the cat [MASK] on the mat")
    page.wait_for_function("document.querySelector('#message').innerText.includes('8 tokens')", timeout=30000)
    assert shown_text(page, "direction-message") is None  # an unused place shows nothing, not an empty frame
    page.click("#intervention-btn")
    page.wait_for_function("document.querySelector('#intervention-message').innerText.includes('Intervention: left-only')",
                           timeout=60000)
    title = shown_text(page, "intervention-message")
    assert "on “the cat [MASK] on the mat”" in title and "source: attention" in title and "weights:" in title
    page.click("#direction-btn")
    page.wait_for_function("document.querySelector('#direction-message').innerText.includes('Directional sweep')",
                           timeout=60000)
    direction = shown_text(page, "direction-message")
    assert "on “the cat [MASK] on the mat”" in direction and "symmetric sinks" in direction
    assert "Intervention: left-only" in shown_text(page, "intervention-message")  # not overwritten by the sweep
    page.get_by_text("Position inspector: what this model").click()
    page.click("#positions-btn")
    page.wait_for_function("document.querySelector('#positions-message').innerText.includes('Cosine similarity')",
                           timeout=60000)
    assert "Position inspector" in shown_text(page, "positions-message")
    page.get_by_text("Over a set of sentences, with 95% intervals").click()
    page.get_by_role("radio", name="sample treebank").click()
    page.click("#direction-set-btn")
    page.wait_for_function("document.querySelector('#direction-set-message').innerText.includes('P(gold word)')",
                           timeout=120000)
    assert "sample treebank, up to 100 sentences, symmetric sinks" in shown_text(page, "direction-set-message")
    run(page, "a dog ran")  # a new input: the results on the old one go, the model's own stay
    page.wait_for_function("document.querySelector('#intervention-message').innerText.startsWith('Results appear here')",
                           timeout=30000)
    page.wait_for_selector("#direction-message", state="hidden", timeout=60000)
    assert page.locator("#direction-table").is_hidden() and page.locator("#intervention-plot").is_hidden()
    assert "Position inspector" in shown_text(page, "positions-message")
    assert "P(gold word)" in shown_text(page, "direction-set-message")  # the set did not change
    page.get_by_role("radio", name="held-out lines (shipped)").click()  # now it did
    page.wait_for_selector("#direction-set-message", state="hidden", timeout=60000)
    assert page.locator("#direction-set-table").is_hidden()
    page.close()


def test_the_colours_are_named_in_plain_words_and_the_citations_fold_away(browser, tiny_app):
    page = open_app(browser, tiny_app, width=1280, height=900)
    source = page.locator("#source")
    assert source.locator("[data-testid='block-info']").first.inner_text() == "What the colours show"
    assert "Leave it on attention weights" in source.inner_text()
    about = page.locator("#source-about")
    assert about.inner_text().startswith("attention weights: How much each token (a row) looks at every other token")
    assert "Vaswani et al. 2017" not in about.inner_text()  # the citation waits behind "Paper and code"
    about.get_by_text("Paper and code").click()
    page.wait_for_function("document.querySelector('#source-about').innerText.includes('Vaswani et al. 2017')",
                           timeout=60000)
    page.get_by_role("radio", name="attention rollout (from the input up)").click()
    page.wait_for_function("document.querySelector('#source-about').innerText.includes('close to the identity')",
                           timeout=30000)
    assert "residual" in about.inner_text()
    page.close()


@pytest.mark.parametrize("width, height", [(1024, 768), (1920, 1080)])
def test_the_first_screen_points_below_and_opens_on_a_masked_word(browser, default_app, default_lab, width, height):
    from bertviz_lab.app.tabs import EXAMPLES

    assert EXAMPLES[0][0].count("[MASK]") == 1
    page = open_app(browser, default_app, width=width, height=height)
    hint = page.locator("#lower-tabs-hint")
    box = hint.bounding_box()
    assert box["y"] + box["height"] <= height, box  # on the first screen
    assert "Interventions · Syntax · Export" in hint.inner_text()
    hint.get_by_role("link").click()
    page.wait_for_function("document.querySelector('#work-tabs').getBoundingClientRect().top < window.innerHeight",
                           timeout=60000)
    page.get_by_role("tab", name="Masked words").click()
    page.wait_for_selector("#pred-plot .bartext", timeout=60000)  # the opening example has a [MASK]: bars at once
    expected = default_lab.analyze(EXAMPLES[0][0]).mlm[0].predictions[0].token
    assert expected in page.locator("#pred-table").inner_text()
    page.close()


BROKEN_WORDS = r"""(root) => {
  const bad = [];
  const edge = document.querySelector(root).getBoundingClientRect().right;  // past it, a word is out of sight
  for (const cell of document.querySelectorAll(root + ' th, ' + root + ' td')) {
    const box = cell.getBoundingClientRect();
    if (!cell.offsetParent || box.height < 1) { continue; }  // not drawn (the virtual table's spare rows)
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter(r => r.width > 0);
        const lines = new Set(rects.map(r => Math.round(r.top)));
        if (lines.size > 1 || rects.some(r => r.right > Math.min(box.right, edge) + 1)) { bad.push(m[0]); }
      }
    }
  }
  return bad;
}"""


@pytest.mark.parametrize("width", [1024, 1920])
def test_tables_wrap_at_word_boundaries_and_nothing_is_cut(browser, tiny_app, width):
    """The "Why this word?" table, the corpus search and the interventions' tables: every word of every header
    and cell on one line and inside its cell and its table (a word split over two lines, or running past the
    cell's or the table's edge, is cut)."""
    page = open_app(browser, tiny_app, width=width, height=1000)
    run(page, "the cat [MASK] on the mat")
    page.wait_for_function("document.querySelector('#message').innerText.includes('8 tokens')", timeout=30000)
    page.get_by_role("tab", name="Masked words").click()
    page.click("#explain-btn")
    page.wait_for_function("document.querySelector('#explain-message').innerText.includes('Erasure hides')",
                           timeout=120000)
    page.wait_for_function("document.querySelector('#explain-table').innerText.includes('rollout')", timeout=60000)
    headers = page.locator("#explain-table th").all_inner_texts()
    assert "AOPC (nats)" in [h.strip() for h in headers]  # the unit is in the header
    assert page.evaluate(BROKEN_WORDS, "#explain-table") == []
    page.get_by_role("tab", name="Head view").click()
    page.get_by_text("Find similar tokens in a treebank").click()
    page.locator("#search-token input").click()
    page.get_by_role("option", name="2 cat").click()
    page.click("#search-btn")
    page.wait_for_function("document.querySelector('#search-message').innerText.includes('Nearest to cat')",
                           timeout=180000)
    page.wait_for_function("document.querySelector('#search-table').innerText.includes(']')",  # [a neighbour]
                           timeout=120000)
    page.locator("#search-table").scroll_into_view_if_needed()
    assert page.evaluate(BROKEN_WORDS, "#search-table") == []
    page.click("#intervention-btn")  # the full-width tables of the Interventions tab
    page.wait_for_function("document.querySelector('#intervention-changes').innerText.includes('[MASK]')",
                           timeout=60000)
    assert page.evaluate(BROKEN_WORDS, "#intervention-changes") == []
    page.click("#direction-btn")
    page.wait_for_function("document.querySelector('#direction-table').innerText.includes('[MASK]')", timeout=60000)
    assert page.evaluate(BROKEN_WORDS, "#direction-table") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.close()


def test_one_scale_choice_rescales_every_attention_map_on_the_page(browser, tiny_app, tiny_lab):
    page = open_app(browser, tiny_app, width=1400, height=1000)
    run(page, "the cat sat on the mat")
    page.wait_for_function("document.querySelector('#message').innerText.includes('8 tokens')", timeout=30000)
    single = "document.querySelector('#single-plot .js-plotly-plot').data[0]"
    page.wait_for_function(f"{single}.zmax === 1", timeout=30000)  # attention weights open on the fixed 0-1 scale
    page.get_by_role("tab", name="Model overview").click()
    page.wait_for_selector("#overview-plot .main-svg", timeout=60000)
    overview = "document.querySelector('#overview-plot .js-plotly-plot').layout.title.text"
    assert "every head on one scale, 0–1" in page.evaluate(overview)
    page.get_by_role("radio", name="per head").click()
    own = float(tiny_lab.analyze("the cat sat on the mat").attention[0, 0].max())  # layer 1, head 1
    page.wait_for_function(f"{overview}.includes('each head scaled to its max')", timeout=30000)  # redrawn by the server
    page.get_by_role("tab", name="Single head").click()
    page.wait_for_function(f"Math.abs({single}.zmax - {own}) < 1e-3", timeout=30000)
    title = page.evaluate(f"{single}.colorbar.title.text")
    assert "scaled to this head's max" in title.replace("<br>", " "), title  # the bar says so
    page.close()
