"""What a person sees: the app in headless chromium."""
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

LOADED_MACHINE_MS = 120_000  # how long a page may take to open when other work loads both cores
CONDITION_MS = 60_000  # the most a wait for what the page shows may take on a loaded machine (a bound, not a figure)


def open_app(browser, url, width=1400, height=1600, opening=False):
    """The page after its opening example; on layer 1, head 1 (a link's ?layer=1&head=1) unless ``opening``: then
    on the head the page chooses itself (the clearest pattern, attention/opening_head.py)."""
    page = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
    page.goto(url if opening else url.rstrip("/") + "/?layer=1&head=1", timeout=LOADED_MACHINE_MS)
    page.wait_for_selector("#text-a textarea", timeout=LOADED_MACHINE_MS)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", state="attached",
                           timeout=LOADED_MACHINE_MS)  # opening example
    return page


def run(page, text, pair=None):
    page.fill("#text-a textarea", text)
    if pair is not None:
        page.fill("#text-b textarea", pair)
    page.click("#run")


def run_and_wait(page, text, pair=None):
    """Run, and wait until the heatmap is drawn again: the next step reads this Run's result, not the last one's
    (a Run shows progress on its status line only, so the old views stay usable meanwhile)."""
    before = int(page.get_attribute("#single-plot .bvl-heatmap", "data-draws") or 0)
    run(page, text, pair)
    page.wait_for_function(f"Number(document.querySelector('#single-plot .bvl-heatmap').dataset.draws) > {before}",
                           timeout=60000)


def y_labels(page, plot="#single-plot"):
    """Row labels as shown, in index order (the DOM lists them bottom-up)."""
    labels = page.locator(f"{plot} .yaxislayer-above .ytick text").all_text_contents()
    return sorted(labels, key=lambda label: int(label.split(" ", 1)[0]))


def wait_for_labels(page, expected, plot="#single-plot", timeout=CONDITION_MS / 1000):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if y_labels(page, plot) == expected:
            return
        time.sleep(0.1)
    said = page.locator("#message").inner_text()
    raise AssertionError(f"labels {y_labels(page, plot)} != {expected}; the status line says {said!r}")


def title(page, plot="#single-plot"):
    return page.locator(f"{plot} .gtitle").first.text_content()


def set_slider(page, elem_id, value):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


CHASE = "The cat chased the other cat around the garden."


def test_heatmap_has_a_row_per_token_and_switches_layer_and_head(browser, default_app, default_lab):
    page = open_app(browser, default_app)
    run(page, CHASE)
    tokens = default_lab.analyze(CHASE).tokens
    assert tokens.count("cat") == 2 and tokens.count("the") == 3
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])  # one row per token, repeated words not merged
    # Gradio's run history is off: it re-serialised every past call into localStorage on each event
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('gradio:run-history:'))") == []
    assert len(page.locator("#single-plot .xaxislayer-above .xtick text").all_text_contents()) == len(tokens)
    assert title(page) == "Layer 1, head 1"
    set_slider(page, "layer", 4)
    set_slider(page, "head", 7)
    page.wait_for_function("document.querySelector('#single-plot .gtitle').textContent === 'Layer 4, head 7'",
                           timeout=CONDITION_MS)
    shown = page.evaluate("document.querySelector('#single-plot .js-plotly-plot').calcdata[0][0].z.slice(0, 3)"
                          ".map(r => Array.from(r))")
    expected = default_lab.analyze(CHASE).attention[3, 6, :3]  # (query, key) of layer 4, head 7
    np.testing.assert_allclose(np.array(shown), expected, atol=1e-4)  # 16-bit codes on the wire
    page.close()


def test_overview_click_opens_that_head(browser, default_app):
    page = open_app(browser, default_app)  # the opening example's overview
    page.get_by_role("tab", name="Model overview").click()
    drag = page.locator("#overview-plot .nsewdrag").first
    drag.wait_for(timeout=60000)  # the server draws the overview when its tab opens: slow on a loaded machine
    drag.scroll_into_view_if_needed()
    box = drag.bounding_box()
    # layer 2 (of 6), head 11 (of 12)
    page.mouse.click(box["x"] + box["width"] * (10.5 / 12), box["y"] + box["height"] * (1.5 / 6))
    page.wait_for_function("document.querySelector('#single-plot .gtitle') && "
                           "document.querySelector('#single-plot .gtitle').textContent === 'Layer 2, head 11'",
                           timeout=CONDITION_MS)
    page.close()


def test_figure_toolbar_and_export_tab_download_svg_png_and_csv(browser, default_app, default_lab):
    page = open_app(browser, default_app)
    run(page, CHASE)
    tokens = default_lab.analyze(CHASE).tokens
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])
    # the figure's own renders have all finished (figure_tools.js counts them) before we use its toolbar
    page.wait_for_function("(() => { const gd = document.querySelector('#single-plot .js-plotly-plot');"
                           " return gd && gd.dataset.bvlPending === '0'; })()", timeout=CONDITION_MS)
    page.locator("#single-plot").hover()
    with page.expect_download() as svg:
        page.locator("#single-plot .modebar-btn[data-title='Download plot as SVG']").click()
    assert svg.value.suggested_filename.endswith(".svg")
    assert Path(svg.value.path()).read_text(encoding="utf-8").lstrip().startswith("<svg")
    page.locator("#single-plot").hover()
    with page.expect_download() as png:
        page.locator("#single-plot .modebar-btn[data-title='Download plot as a PNG']").click()
    assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # CSV export: layers x heads x tokens^2 rows
    page.get_by_role("tab", name="Export").click()
    page.locator("#export-csv").wait_for(timeout=CONDITION_MS)
    assert page.locator("#export-file").is_hidden()  # no empty Download box before any export (issue 60)
    page.locator("#recipe-choice input").click()  # the Result list holds the Run's result before any copy
    page.locator("#recipe-choice [data-testid=dropdown-option]", has_text="the analysed input").first.wait_for(
        timeout=CONDITION_MS)
    page.keyboard.press("Escape")
    page.click("#export-csv")
    link = page.locator("#export-file a").first
    link.wait_for(timeout=CONDITION_MS)
    with page.expect_download() as download:
        link.click()
    frame = pd.read_csv(download.value.path())
    assert len(frame) == default_lab.n_layers * default_lab.n_heads * len(tokens) ** 2
    page.close()


def test_mask_from_token_picker_shows_predictions(browser, tiny_app, tiny_lab):
    page = open_app(browser, tiny_app)
    run(page, "the cat sat on the mat")
    n = len(tiny_lab.analyze("the cat sat on the mat").tokens)  # the picker is this Run's (the opening example has a cat too)
    page.wait_for_function(f"document.querySelector('#message').innerText.startsWith('{n} tokens')", timeout=CONDITION_MS)
    page.locator("#token-picker label", has_text="2 cat").click()
    page.click("#mask-btn")
    page.get_by_role("tab", name="Masked words").click()
    expected = tiny_lab.analyze("the cat sat on the mat", masks=[2], top_k=5)
    top = expected.mlm[0].predictions[0].token
    page.wait_for_function(
        f"document.querySelector('#pred-table') && document.querySelector('#pred-table').innerText.includes('{top}')"
        " && document.querySelector('#pred-table').innerText.includes('cat')", timeout=CONDITION_MS)
    # the bars are a separate component: wait for exactly the figure that is read
    bars_js = ("(() => { const p = document.querySelector('#pred-plot .js-plotly-plot');"
               " return p && p.data && p.data.length ? Array.from(p.data[0].y) : null; })()")
    page.wait_for_function(f"{bars_js} !== null && {bars_js}.length === {len(expected.mlm[0].predictions)}",
                           timeout=CONDITION_MS)
    assert page.evaluate(bars_js) == [q.token for q in expected.mlm[0].predictions]
    page.wait_for_function("document.querySelector('#pred-plot').innerText.includes(\"position 2 (was 'cat')\")",
                           timeout=CONDITION_MS)
    assert "position 2 (was 'cat')" in page.locator("#pred-plot").inner_text()
    page.close()


def test_the_token_picker_sits_under_the_input_and_scrolls_within_a_few_lines(browser, tiny_app):
    """Under the input, on the first screen (issue 60): a class masks a word without scrolling the page. A long
    input's checkboxes scroll within a few lines; scrolled to, the last can be picked."""
    page = open_app(browser, tiny_app, width=1024, height=768)
    run(page, " ".join(["cat", "sat", "on", "the", "mat"] * 12))
    page.wait_for_function("document.querySelector('#token-picker').textContent.includes('60 mat')",
                           timeout=CONDITION_MS)
    picker = page.locator("#token-picker").bounding_box()
    assert picker["y"] < 768 and picker["height"] < 260, picker  # starts on the first screen, a few lines tall
    last = page.locator("#token-picker label", has_text="60 mat")
    assert last.bounding_box()["y"] > picker["y"] + picker["height"]  # below the box's sight until scrolled
    last.scroll_into_view_if_needed()
    last.click()
    assert page.locator("#token-picker input[type=checkbox]:checked").count() == 1
    page.close()


@pytest.mark.parametrize("worker", [True, False], ids=["in-a-worker", "no-worker"])
def test_every_heads_codes_are_read_off_the_main_thread_or_by_the_page_without_a_worker(browser, tiny_app, tiny_lab,
                                                                                       worker):
    """Every head's codes are fetched by a worker (none of the page's own resource entries is their file), or,
    where no worker can start, by the page; either way the page then holds them all, exact to 16 bits."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    if not worker:
        page.add_init_script("window.Worker = undefined")
    page.goto(tiny_app, timeout=LOADED_MACHINE_MS)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", state="attached", timeout=LOADED_MACHINE_MS)
    run(page, "the cat sat on the mat")
    expected = tiny_lab.analyze("the cat sat on the mat")
    n = len(expected.tokens)
    page.wait_for_function(f"() => window.bvl.state.codes !== null && window.bvl.state.p.labels.length === {n}",
                           timeout=CONDITION_MS)
    read_here = page.evaluate("() => performance.getEntriesByType('resource')"
                              ".some(e => e.name === new URL(window.bvl.state.p.codes_url, document.baseURI).href)")
    assert read_here is not worker
    last = (tiny_lab.n_layers - 1, tiny_lab.n_heads - 1)  # the end of the buffer: every byte arrived in order
    held = page.evaluate("([l, h]) => { const S = window.bvl.state, p = S.p, n = p.labels.length;"
                         " const base = (l * p.heads + h) * n * n, k = p.scales[l][h] / 65535;"
                         " return Array.from({length: n}, (_, q) => Array.from({length: n},"
                         " (_, c) => S.codes[base + q * n + c] * k)); }", list(last))
    np.testing.assert_allclose(np.array(held), expected.attention[last], atol=1e-4)
    page.close()


def test_empty_input_message_and_two_tabs_see_their_own_result(browser, default_app, default_lab):
    one, two = open_app(browser, default_app), open_app(browser, default_app)
    run(one, "   ")
    one.wait_for_function("document.querySelector('#message').innerText.includes('empty')", timeout=CONDITION_MS)
    texts = ["Colourless green ideas sleep furiously.", "A completely different sentence about the stock market today."]
    run(one, texts[0])
    run(two, texts[1])
    for page, text in ((one, texts[0]), (two, texts[1])):
        tokens = default_lab.analyze(text).tokens
        wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])
    one.close()
    two.close()


def test_intervention_shows_the_difference_heatmap(browser, sharp_app):
    page = open_app(browser, sharp_app)
    run_and_wait(page, "the big cat [MASK] on the red mat")
    page.get_by_role("tab", name="Interventions").click()
    page.click("#intervention-btn")  # default intervention: left context only
    page.wait_for_function("document.querySelector('#intervention-plot') && "
                           "document.querySelector('#intervention-plot').innerText.includes('intervened - baseline')",
                           timeout=60000)
    z = page.evaluate("document.querySelector('#intervention-plot .js-plotly-plot').calcdata[2][0].z")
    # difference of a left-only intervention: the first query ([CLS]) keeps only itself, so its row gains
    # at [CLS] and loses everywhere else
    assert z[0][0] > 1e-3 and max(z[0][1:]) <= 1e-6 and min(z[0][1:]) < -1e-4
    assert abs(sum(z[0])) < 1e-3  # both rows sum to 1
    assert "Mean JS divergence" in page.locator("#intervention-message").inner_text()
    page.close()


def test_syntax_tab_draws_best_heads_with_intervals_and_names_the_weights(browser, sharp_app, sharp_lab):
    page = open_app(browser, sharp_app)
    page.get_by_role("tab", name="Syntax").click()
    page.locator("#syntax-btn").wait_for(timeout=CONDITION_MS)
    # the file box shows only while "my CoNLL-U file" is chosen (issue 60: no control for the option not chosen)
    assert page.locator("#syntax-upload").is_hidden()
    page.get_by_label("my CoNLL-U file").check()
    page.locator("#syntax-upload").wait_for(state="visible", timeout=CONDITION_MS)
    page.get_by_label("sample treebank (66 English sentences)").check()
    page.locator("#syntax-upload").wait_for(state="hidden", timeout=CONDITION_MS)
    page.click("#syntax-btn")
    page.wait_for_function("document.querySelector('#syntax-message').innerText.includes('Scored 66 sentences')",
                           timeout=120000)
    page.wait_for_selector("#syntax-bars .errorbar", state="attached", timeout=60000)  # drawn into the figure
    assert sharp_lab.checkpoint_info().sha256[:12] in page.locator("#syntax-weights").inner_text()
    page.close()


def test_the_typed_sentence_is_parsed_and_marked_as_a_parsers_arcs(browser, sharp_app):
    page = open_app(browser, sharp_app)
    page.fill("#text-a textarea", "The keys to the cabinet are on the table.")
    page.get_by_role("tab", name="Syntax").click()
    page.click("#syntax-parse-btn")
    page.wait_for_function("document.querySelector('#syntax-parse-message').innerText.includes('not gold')",
                           timeout=120000)
    message = page.locator("#syntax-parse-message").inner_text()
    assert "UD English EWT test" in message and "cop: table → are" in message  # converted: the noun heads
    page.wait_for_function("[...document.querySelectorAll('#syntax-parse-arcs .legendtext')]"
                           ".some(t => t.textContent === \"parser's arc (not gold)\")", timeout=CONDITION_MS)
    page.wait_for_selector("#syntax-parse-agreement .heatmaplayer", state="attached", timeout=CONDITION_MS)
    page.close()


def test_shareable_link_restores_input_and_view(browser, default_app, default_lab):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(default_app.rstrip("/") + "/?text=The%20cat%20sat%20on%20the%20mat.&layer=2&head=3")
    page.wait_for_function("document.querySelector('#single-plot .gtitle') && "
                           "document.querySelector('#single-plot .gtitle').textContent === 'Layer 2, head 3'",
                           timeout=CONDITION_MS)
    assert page.input_value("#text-a textarea") == "The cat sat on the mat."
    expected = [f"{i} {t}" for i, t in enumerate(default_lab.analyze("The cat sat on the mat.").tokens)]
    wait_for_labels(page, expected)
    page.close()


def test_page_opens_and_controls_work_before_any_run_without_errors(browser, tiny_app):
    """No error toast on page load (the shareable-link handler runs then) nor when a slider, the
    attention source or a syntax relation is moved before anything was analysed."""
    page = open_app(browser, tiny_app)
    set_slider(page, "layer", 2)
    page.locator("#source label", has_text="(norm)").first.click()
    # the source's round trip is complete when the heatmap's caption names it (or an error toast shows)
    page.wait_for_function("document.querySelector('#single-plot .bvl-caption').textContent.includes('norm:') || "
                           "document.querySelector('.toast-body') !== null", timeout=CONDITION_MS)
    assert page.locator(".toast-body").count() == 0, page.locator(".toast-body").all_inner_texts()
    page.close()


def test_every_view_tab_is_in_sight_on_a_laptop_screen(browser, tiny_app):
    """At 1024 px the six view tabs wrap onto a second row instead of hiding behind a "..." menu."""
    from bertviz_lab.app.tabs import TABS

    page = open_app(browser, tiny_app, width=1024, height=800)
    views = ["Single head", "Head view", "Model overview", "Aggregates", "Head summary", "Masked words"]
    assert set(views) <= set(TABS)
    for name in views:
        assert page.get_by_role("tab", name=name).is_visible(), name
    page.get_by_role("tab", name="Masked words").click()
    page.wait_for_selector("#pred-table", state="attached", timeout=CONDITION_MS)
    page.close()


def heatmap_title(page):
    return page.evaluate("(() => { const t = document.querySelector('#single-plot .gtitle'); return t && t.textContent; })()")


def hover_cell(page, row, col, n):
    """Hover the middle of cell (row, col) of the n x n single-head heatmap; the hover text shown."""
    box = page.locator("#single-plot .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * (col + 0.5) / n, box["y"] + box["height"] * (row + 0.5) / n)
    page.wait_for_selector("#single-plot .hoverlayer .hovertext", timeout=CONDITION_MS)
    return page.locator("#single-plot .hoverlayer .hovertext").first.text_content()


def test_layer_and_head_switch_in_the_browser_without_a_request(browser, default_app, default_lab):
    page = open_app(browser, default_app, width=1280, height=800)
    text = "The cat chased the other cat around the garden."
    run(page, text)
    tokens = default_lab.analyze(text).tokens
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])
    # first screen: after Run the heatmap is inside the viewport with no scrolling
    box = page.locator("#single-plot .main-svg").first.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 800 and box["x"] + box["width"] <= 1280, box
    page.mouse.move(1, 1)
    before = hover_cell(page, 2, 3, len(tokens))
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    set_slider(page, "head", 7)
    page.wait_for_function("document.querySelector('#single-plot .gtitle').textContent === 'Layer 1, head 7'",
                           timeout=CONDITION_MS)
    page.mouse.move(1, 1)
    after = hover_cell(page, 2, 3, len(tokens))
    weight = float(default_lab.analyze(text).attention[0, 6, 2, 3])
    assert after != before and f"weight {weight:.4f}" in after, (before, after)
    set_slider(page, "layer", 5)
    page.wait_for_function("document.querySelector('#single-plot .gtitle').textContent === 'Layer 5, head 7'",
                           timeout=CONDITION_MS)
    page.get_by_role("radio", name="A->B").click()  # the pair filter is client-side too (no sentence B: all shown)
    page.wait_for_function("document.querySelector('#single-plot .bvl-caption').textContent.includes('no sentence B')",
                           timeout=CONDITION_MS)
    assert [url for url in requests if not url.startswith("data:")] == []
    page.close()


def test_the_opening_heatmap_is_drawn_before_the_load_event_replies(browser, default_app, default_lab):
    """A first visit draws the opening example from bvl-opening (app/opening.py), fetched while Gradio builds the
    page: held here, the load event's request cannot be what drew it. Released, the visit's own analysis replaces
    it on the same head."""
    from bertviz_lab.app.tabs import EXAMPLES
    from bertviz_lab.attention.opening_head import opening_head

    opened = default_lab.analyze(EXAMPLES[0][0])
    chosen = opening_head(opened.attention, opened.tokens)
    expected = f"Layer {chosen.layer + 1}, head {chosen.head + 1}"
    held = []
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    page.route("**/gradio_api/queue/join*", lambda route: held.append(route))  # the load event waits here
    page.goto(default_app, timeout=LOADED_MACHINE_MS)
    # the canvas map, or Plotly's if plotly.js came in meanwhile (2 s after the page's load event at the latest)
    page.wait_for_function(f"""(() => {{
        const map = document.querySelector('#single-plot .bvl-heatmap');
        return !!map && (map.dataset.quick || map.dataset.drawn) === {expected!r};
    }})()""", timeout=LOADED_MACHINE_MS)
    deadline = time.time() + CONDITION_MS / 1000  # the map may be drawn before the load event even asks
    while not held and time.time() < deadline:
        page.wait_for_timeout(50)  # lets Playwright take the page's request meanwhile
    assert held  # the page's load event asked, and waits
    assert page.get_attribute("#single-plot .bvl-heatmap", "data-draws") is None or \
        page.get_attribute("#single-plot .bvl-heatmap", "data-drawn") == expected
    for route in held:
        route.continue_()
    page.unroute("**/gradio_api/queue/join*")
    page.wait_for_function("document.querySelector('#message').innerText.includes('tokens')", timeout=CONDITION_MS)
    page.wait_for_selector("#single-plot .bvl-heatmap[data-draws]", state="attached", timeout=CONDITION_MS)
    assert page.get_attribute("#single-plot .bvl-heatmap", "data-drawn") == expected
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(opened.tokens)])
    page.close()


def test_first_screen_at_1600_and_clicking_an_example_runs_it(browser, default_app, default_lab):
    from bertviz_lab.app.tabs import EXAMPLES
    from bertviz_lab.attention.opening_head import opening_head

    page = open_app(browser, default_app, width=1600, height=1000, opening=True)
    # the page opens with the first example analysed, on the head with the clearest pattern, and says why
    opened = default_lab.analyze(EXAMPLES[0][0])
    first = opened.tokens
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(first)])
    chosen = opening_head(opened.attention, first)
    assert title(page) == f"Layer {chosen.layer + 1}, head {chosen.head + 1}" != "Layer 1, head 1"
    page.wait_for_function(f"document.querySelector('#message').innerText.includes({chosen.reason!r})",
                           timeout=CONDITION_MS)
    text, pair = next(example for example in EXAMPLES if example[1])  # the first sentence pair
    page.get_by_text(pair).first.click()
    page.wait_for_function(f"document.querySelector('#text-b textarea').value === {pair!r}",
                           timeout=CONDITION_MS)  # the example's inputs filled; its Run follows
    analysed = default_lab.analyze(text, pair=pair)
    tokens = analysed.tokens
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])
    assert page.input_value("#text-b textarea") == pair
    if default_lab.model.has_nsp_head:  # the pair's next-sentence probability is in the message
        said = f"P(B follows A) = {analysed.nsp:.2f}"
        page.wait_for_function(f"document.querySelector('#message').innerText.includes({said!r})", timeout=CONDITION_MS)
    box = page.locator("#single-plot .main-svg").first.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 1000, box
    # sentence pair: the A->B filter keeps sentence A rows and sentence B columns
    page.get_by_role("radio", name="A->B").click()
    n_a = tokens.index("[SEP]") + 1
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens[:n_a])])
    page.close()


def test_head_view_toggles_hover_filter_and_slider(browser, default_app, default_lab):
    page = open_app(browser, default_app)
    text, pair = "The man went to the store.", "He bought a gallon of milk."
    run(page, text, pair)
    tokens = default_lab.analyze(text, pair=pair).tokens
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])
    page.get_by_role("tab", name="Head view").click()
    view = "#headview-plot .bvl-headview"
    page.wait_for_function(f"document.querySelector('{view}') && document.querySelector('{view}').dataset.heads === '1'",
                           timeout=CONDITION_MS)
    attr = lambda name: page.get_attribute(view, f"data-{name}")  # noqa: E731
    expected = int((default_lab.analyze(text, pair=pair).attention[0, 0] >= 0.01).sum())
    assert int(attr("lines")) == expected  # one line per weight >= 0.01 of head 1
    page.locator(f"{view} .bvl-hv-head[data-head='2']").click()
    assert attr("heads") == "1,3"
    page.locator(f"{view} .bvl-hv-set[data-set='all']").click()
    assert attr("heads") == ",".join(str(h) for h in range(1, 13))
    all_lines = int(attr("lines"))
    page.locator(f"{view} .bvl-hv-left[data-index='2']").hover()  # only the lines leaving token 2
    assert attr("focus") == "query:2"
    attention = default_lab.analyze(text, pair=pair).attention[0]
    assert int(attr("lines")) == int((attention[:, 2, :] >= 0.01).sum()) < all_lines
    page.mouse.move(1, 1)
    set_slider(page, "head", 5)  # the head view follows the Head slider
    page.wait_for_function(f"document.querySelector('{view}').dataset.heads === '5'", timeout=CONDITION_MS)
    page.get_by_role("radio", name="B->A").click()
    n_a = tokens.index("[SEP]") + 1
    page.wait_for_function(f"document.querySelectorAll('{view} .bvl-hv-left').length === {len(tokens) - n_a}",
                           timeout=CONDITION_MS)
    b_to_a = attention[4][n_a:, :n_a]
    assert int(attr("lines")) == int((b_to_a >= 0.01).sum())
    page.close()


def test_interventions_use_the_last_analysed_input_and_follow_the_sliders(browser, default_app, default_lab):
    page = open_app(browser, default_app)
    analysed = "paris is the [mask] of france."
    run(page, analysed)
    tokens = default_lab.analyze(analysed).tokens
    assert "[MASK]" in tokens  # lower-case [mask] is the mask token
    wait_for_labels(page, [f"{i} {t}" for i, t in enumerate(tokens)])
    page.fill("#text-a textarea", "Something else entirely, never analysed.")
    page.get_by_role("tab", name="Interventions").click()
    page.click("#intervention-btn")
    page.wait_for_function("document.querySelector('#intervention-plot .gtitle') && "
                           "document.querySelector('#intervention-plot .gtitle').textContent.startsWith('Layer 1, head 1')",
                           timeout=CONDITION_MS)
    labels = page.locator("#intervention-plot .yaxislayer-above .ytick text").all_text_contents()
    assert set(labels) == {f"{i} {t}" for i, t in enumerate(tokens)}
    set_slider(page, "layer", 3)
    page.wait_for_function("document.querySelector('#intervention-plot .gtitle').textContent.startsWith('Layer 3, head 1')",
                           timeout=CONDITION_MS)
    page.close()


RIVER = ("The river bank was steep, so the children sat on the grass and watched the boats go by all day long. "
         "Their parents read books under the old trees while the dogs ran along the water and barked at the ducks "
         "that swam past the little wooden bridge near the mill.")  # 56 tokens


@pytest.mark.parametrize("repeats, requests", [(1, 1), (4, 2)], ids=["inside-the-reply", "in-a-file"])
def test_the_open_head_is_drawn_from_its_own_codes_before_every_heads_arrive(browser, default_app, default_lab,
                                                                             repeats, requests, monkeypatch):
    """Issue 45: the page draws the open head from its own codes first: inside the reply up to INLINE_HEAD_MAX
    (56 tokens: the Run's one request is every head's codes), else from a small file (4 x 56 tokens, the limit
    lowered to 64 KB as for a long-context model's input: two requests). Holding back every head's codes leaves
    the heatmap drawn (right values) and the other heads waiting; releasing them, a head switch works."""
    from bertviz_lab.app import view_controller as controller_module

    if requests == 2:
        monkeypatch.setattr(controller_module, "INLINE_HEAD_MAX", 64 * 1024)  # the app's server runs in this process
    page = open_app(browser, default_app)
    page.wait_for_function("() => window.bvl.state.codes !== null")  # the opening example is wholly loaded
    seen, held = [], []

    def every_heads_held(route):  # every head's codes are the Run's last request
        seen.append(route.request.url)
        if len(seen) == requests:
            held.append(route)
        else:
            route.continue_()

    page.route("**/bvl-codes/*", every_heads_held)
    text = " ".join([RIVER] * repeats)
    run(page, text)
    tokens = default_lab.analyze(text).tokens
    page.wait_for_function(f"() => {{ const g = document.querySelector('#single-plot .js-plotly-plot');"
                           f" return g && g.data && g.data[0].y.length === {len(tokens)}; }}",
                           timeout=60000)  # the open head alone
    assert page.evaluate("() => window.bvl.state.first !== null && window.bvl.state.codes === null")
    shown = page.evaluate("document.querySelector('#single-plot .js-plotly-plot').calcdata[0][0].z.slice(0, 2)"
                          ".map(r => Array.from(r))")
    np.testing.assert_allclose(np.array(shown), default_lab.analyze(text).attention[0, 0, :2], atol=1e-4)
    deadline = time.monotonic() + LOADED_MACHINE_MS / 1e3  # every head's are asked for once the open head is painted
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(25)  # the route's handler runs while Playwright waits
    set_slider(page, "head", 5)  # its codes are not here yet: the map keeps the open head until they are
    page.wait_for_function("() => window.bvl.state.head === 4")
    assert title(page) == "Layer 1, head 1" and len(held) == 1 and len(seen) == requests
    held[0].continue_()
    page.wait_for_function("document.querySelector('#single-plot .gtitle').textContent === 'Layer 1, head 5'",
                           timeout=CONDITION_MS)
    assert page.evaluate("() => window.bvl.state.codes !== null && window.bvl.state.first === null")
    page.close()


RUNNING = "() => getComputedStyle(document.querySelector('#message'), '::before').content"


def test_a_run_under_way_says_running_on_the_status_line_without_gradios_timer(browser, tiny_app):
    """Issue 45: while a Run is pending the status line says a still "Running…" (page CSS on Gradio's pending
    status), not Gradio's timer that the page redrew every frame; the token count is back, alone, once the
    views are drawn. The Run's join request is held, so the pending state lasts as long as the test needs."""
    page = open_app(browser, tiny_app)
    held = []
    page.route("**/queue/join*", lambda route: held.append(route))
    before = int(page.get_attribute("#single-plot .bvl-heatmap", "data-draws") or 0)
    with page.expect_request("**/queue/join*"):
        run(page, "the cat sat on the mat")
    page.wait_for_function(f"() => {RUNNING}() === '\"Running…\"'", timeout=CONDITION_MS)
    assert not page.locator("#message .progress-text").is_visible()  # Gradio's own timer stays hidden
    deadline = time.time() + 30
    while not held and time.time() < deadline:  # the route handler runs while Playwright waits
        page.wait_for_timeout(50)
    held[0].continue_()
    page.wait_for_function(f"Number(document.querySelector('#single-plot .bvl-heatmap').dataset.draws) > {before}",
                           timeout=60000)
    page.wait_for_function(f"() => {RUNNING}() === 'none'", timeout=CONDITION_MS)
    assert page.locator("#message").inner_text().strip().endswith("tokens.")
    page.close()


INSIDE = """() => {
  const gd = document.querySelector('#single-plot .js-plotly-plot'), box = gd.getBoundingClientRect();
  const parts = [...gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text')];
  return {count: parts.length, outside: parts.map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([, r]) => r.left < box.left - 0.5 || r.bottom > box.bottom + 0.5 || r.top < box.top - 0.5)
    .map(([text]) => text)};
}"""


def test_the_heatmaps_margins_hold_its_longest_labels_and_axis_titles(browser, default_app, default_lab):
    """Issue 45: the page sets the heatmap's margins from a measurement of its labels (no Plotly automargin,
    which drew the figure twice): every tick label and both axis titles lie inside the figure, for 18-character
    labels (the longest shown: word level joins the pieces of long words) and for short ones after them."""
    page = open_app(browser, default_app)
    page.check("#word input[type=checkbox]")
    text = "Internationalization counterrevolutionaries electroencephalographically."
    run_and_wait(page, text)
    page.wait_for_function("() => [...document.querySelectorAll('#single-plot .ytick text')]"
                           ".some(t => t.textContent.endsWith('…'))", timeout=CONDITION_MS)
    shown = page.evaluate(INSIDE)
    assert shown["count"] > 8 and shown["outside"] == []
    page.uncheck("#word input[type=checkbox]")
    run(page, "a b c")
    wait_for_labels(page, ["0 [CLS]", "1 a", "2 b", "3 c", "4 [SEP]"])
    shown = page.evaluate(INSIDE)
    assert shown["count"] == 2 * 5 + 2 and shown["outside"] == []
    page.close()
