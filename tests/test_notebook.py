"""Notebooks: the views as Plotly figures, the one-call viewer, and the BertViz drop-in on the
attentions of small random transformers models (BERT, GPT-2, T5) built here, drawn in Chromium."""
import numpy as np
import pytest

import bertviz_lab


@pytest.fixture(scope="module")
def hf_attentions():
    """Attentions of three architectures, as users pass them to BertViz (outputs.attentions)."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    out = {}
    bert = tf.BertModel(tf.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=64, attn_implementation="eager")).eval()
    ids = torch.tensor([[1, 5, 6, 7, 2, 8, 9, 2]])
    types = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1]])
    with torch.no_grad():
        out["bert"] = bert(input_ids=ids, token_type_ids=types, output_attentions=True).attentions
    gpt2 = tf.GPT2Model(tf.GPT2Config(vocab_size=50, n_embd=32, n_layer=3, n_head=4, n_positions=32,
                                      attn_implementation="eager")).eval()
    with torch.no_grad():
        out["gpt2"] = gpt2(input_ids=torch.tensor([[3, 4, 5, 6, 7]]), output_attentions=True).attentions
    t5 = tf.T5Model(tf.T5Config(vocab_size=50, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                attn_implementation="eager")).eval()
    with torch.no_grad():
        o = t5(input_ids=torch.tensor([[3, 4, 5, 6, 1]]), decoder_input_ids=torch.tensor([[0, 7, 8]]),
               output_attentions=True)
    out["t5"] = (o.encoder_attentions, o.decoder_attentions, o.cross_attentions)
    return out


def draw(browser, page_html, tmp_path, name):
    path = tmp_path / f"{name}.html"
    page_html.save(path)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".bvl-headview[data-lines]", timeout=20000)
    assert not errors, errors
    return page


def title(page):
    """The head view's layer line: "Layer 2 · heads:" (with the section: "Cross: Layer 1 · heads:")."""
    return page.locator(".bvl-hv-layer").first.text_content().split(" · ")[0]


def weights(page, layer, head):
    return np.array(page.evaluate(f"document.querySelector('.bvl-headview').__bvlViewer.matrix({layer}, {head})"))


def test_drop_in_on_bert_gpt2_and_t5_attentions(browser, hf_attentions, tmp_path):
    # BERT, a sentence pair; BertViz's 0-based layer and heads
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
    out = bertviz_lab.head_view(hf_attentions["bert"], tokens, sentence_b_start=5, layer=1, heads=[0, 2],
                                html_action="return")
    assert out.data.startswith('<meta charset="utf-8">') and "plotly.js v" not in out.data  # light: no plotly.js
    page = draw(browser, out, tmp_path, "bert")
    assert title(page) == "Layer 1"  # named as asked: layer=1 is BertViz's second layer, labelled 1 as BertViz does
    assert page.get_attribute(".bvl-headview", "data-heads") == "1,3"  # (data-heads is 1-based for the page's tests)
    assert page.locator(".bvl-hv-head").all_text_contents() == ["0", "1", "2", "3"]  # head toggles 0-based too
    a = hf_attentions["bert"][1][0].numpy()  # (heads, q, k) of layer 2
    shown = weights(page, 1, 0)
    np.testing.assert_allclose(shown, a[0], atol=a[0].max() / 127 / 2 + 1e-7)  # 7-bit codes, rounded
    assert int(page.get_attribute(".bvl-headview", "data-lines")) == int((np.stack([shown, weights(page, 1, 2)])
                                                                          >= 0.01).sum())
    page.select_option(".bvl-nb-filter", "A->B")
    page.wait_for_function("document.querySelector('.bvl-hv-note').textContent.includes('sentence A queries')")
    assert len(page.locator(".bvl-hv-left").all()) == 5 and len(page.locator(".bvl-hv-right").all()) == 3
    page.close()

    # GPT-2: causal, so each line goes to an earlier or the same token; the layer slider works
    out = bertviz_lab.head_view(hf_attentions["gpt2"], ["ĠThe", "Ġcat", "Ġsat", "Ġon", "Ġit"], html_action="return")
    page = draw(browser, out, tmp_path, "gpt2")
    page.locator(".bvl-nb-layer").fill("3")
    page.wait_for_function("document.querySelector('.bvl-headview').getAttribute('data-layer') === '3'")
    assert title(page) == "Layer 2"  # the third layer, 0-based as the drop-in was asked
    assert page.locator(".bvl-nb-layer-value").text_content() == "2"
    assert np.allclose(np.triu(weights(page, 2, 0), 1), 0)  # nothing above the diagonal
    assert page.locator(".bvl-hv-left").first.text_content() == "The"  # prettified
    page.close()

    # T5: encoder, decoder and cross attention, chosen like BertViz's "Attention:" menu
    enc, dec, cross = hf_attentions["t5"]
    out = bertviz_lab.head_view(encoder_attention=enc, decoder_attention=dec, cross_attention=cross,
                                encoder_tokens=["▁a", "▁b", "▁c", "▁d", "</s>"], decoder_tokens=["<pad>", "▁x", "▁y"],
                                html_action="return")
    page = draw(browser, out, tmp_path, "t5")
    assert title(page) == "Encoder: Layer 0"
    page.select_option(".bvl-nb-section", label="Cross")
    page.wait_for_function("document.querySelector('.bvl-hv-layer').textContent.startsWith('Cross: Layer 0')")
    assert weights(page, 0, 0).shape == (3, 5)  # decoder queries x encoder keys
    page.close()


def test_model_view_draws_every_layer_and_head_on_one_ground(browser, hf_attentions, tmp_path):
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
    out = bertviz_lab.model_view(hf_attentions["bert"], tokens, html_action="return")
    page = draw(browser, out, tmp_path, "model")
    page.wait_for_selector(".bvl-nb-thumbs[data-drawn]")
    assert page.locator(".bvl-nb-thumb").count() == 2 * 4  # layers x heads
    assert page.locator(".bvl-nb.bvl-dark").count() == 1  # BertViz's default: dark, the whole output
    page.locator(".bvl-nb-thumb[data-layer='1'][data-head='3']").click()  # opens layer 2, head 4 above
    page.wait_for_function("document.querySelector('.bvl-headview').getAttribute('data-layer') === '2'")
    assert page.get_attribute(".bvl-headview", "data-heads") == "4"
    page.close()
    out = bertviz_lab.model_view(hf_attentions["bert"], tokens, display_mode="light", include_layers=[1],
                                 include_heads=[0, 2], html_action="return")
    page = draw(browser, out, tmp_path, "model-light")
    page.wait_for_selector(".bvl-nb-thumbs[data-drawn]")
    assert page.locator(".bvl-nb.bvl-dark").count() == 0
    assert page.locator(".bvl-nb-thumb").count() == 2 and page.locator(".bvl-nb-thumb-layer").all_text_contents() == ["L1"]
    assert page.locator(".bvl-nb-thumb").first.get_attribute("title") == "layer 1, head 0: click to open"  # as asked
    page.close()


def test_dropin_is_light_at_64_tokens_and_12_by_12_heads(minilm_lab):
    """BertViz-sized: <= 300 KB for 12 layers x 12 heads at 64 tokens (real attention, MiniLM's six layers twice)."""
    words = ("the quick brown fox jumps over the lazy dog while a small bird sings in the old oak tree near the "
             "river and children play football in the park " * 3).split()
    text = " ".join(words)
    while len(minilm_lab.encode(text).ids) > 64:
        text = text.rsplit(" ", 1)[0]
    a = minilm_lab.analyze(text)
    twelve = np.concatenate([a.attention, a.attention[::-1]])  # (12, 12, 64, 64)
    for view in (bertviz_lab.head_view, bertviz_lab.model_view):
        page = view([layer[None] for layer in twelve], a.tokens, html_action="return").data
        assert len(page.encode("utf-8")) <= 300 * 1024, (view.__name__, len(page.encode("utf-8")))


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_dropin_views_name_what_is_wrong(hf_attentions, view):
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
    view = getattr(bertviz_lab, view)
    with pytest.raises(ValueError, match="tokens"):
        view(hf_attentions["bert"], tokens[:-1], html_action="return")
    with pytest.raises(ValueError, match="batch"):
        view([np.zeros((2, 4, 3, 3))], ["a", "b", "c"], html_action="return")
    with pytest.raises(ValueError, match="at least one attention"):
        view(html_action="return")
    # out-of-range indices are refused by name (BertViz's 0-based: the 4 heads are 0 to 3), never drawn as nothing
    asked = {"heads": [50]} if view.__name__ == "head_view" else {"include_heads": [4]}
    with pytest.raises(ValueError, match=r"(include_)?heads \[(50|4)\] out of range: this attention has 4 heads, numbered 0 to 3"):
        view(hf_attentions["bert"], tokens, html_action="return", **asked)
    with pytest.raises(ValueError, match="include_layers \\[7\\] out of range"):
        view(hf_attentions["bert"], tokens, include_layers=[7], html_action="return")


def test_analysis_figures_and_show(browser, tiny_lab, tmp_path):
    import plotly.graph_objects as go

    a = tiny_lab.analyze("the cat sat on the [MASK]")
    for kind in ("single-head", "overview", "head-view", "aggregates", "summary", "predictions"):
        assert isinstance(bertviz_lab.figure(a, kind, layer=2, head=1), go.Figure)
    fig = bertviz_lab.figure(a, "single-head", layer=2, head=3)
    assert fig.layout.title.text == "Layer 2, head 3"
    with pytest.raises(ValueError, match="1-based"):
        bertviz_lab.figure(a, "single-head", layer=0)
    with pytest.raises(ValueError, match="unknown figure"):
        bertviz_lab.figure(a, "nope")
    page = draw(browser, bertviz_lab.show(a, layer=2, head=3, html_action="return"), tmp_path, "show")
    page.wait_for_selector(".bvl-heatmap[data-draws] .gtitle", timeout=20000)  # show() keeps the heatmap
    assert page.locator(".bvl-heatmap .gtitle").first.text_content() == "Layer 2, head 3"
    page.close()


def test_every_figure_kind_is_built_with_its_title(tiny_lab):
    """The fast tier's check of every view (the browser tests draw them too, slowly)."""
    a = tiny_lab.analyze("the cat sat on the [MASK]")
    titles = {kind: bertviz_lab.figure(a, kind, layer=2, head=1).layout.title.text
              for kind in ("single-head", "overview", "head-view", "aggregates", "summary", "predictions")}
    assert titles["single-head"] == "Layer 2, head 1"
    assert titles["head-view"] == "Head view, layer 2 (weights >= 0.05)"
    assert titles["aggregates"].startswith("Raw vs aggregates (rollout and flow: Abnar & Zuidema 2020")
    assert titles["overview"].startswith("Model overview: every layer and head")
    assert titles["summary"].startswith("Per-head statistics for this input")
    assert titles["predictions"] == "Masked-word predictions"
    for kind in ("overview", "summary"):  # the figures of all heads name the weights they show
        assert titles[kind].endswith(f"weights: {a.model}</sup>")
    panels = [n.text for n in bertviz_lab.figure(a, "aggregates", layer=1, head=1).layout.annotations]
    assert "<b>mean of layer 1</b>" in panels and "<b>rollout up to layer 1</b>" in panels


def test_display_options_go_in_one_object(tiny_lab):
    from bertviz_lab.notebook import AnalysisDisplay

    a = tiny_lab.analyze("the cat sat", pair="it slept")
    display = AnalysisDisplay(hide_special=True, word_level=True, pair_filter="A->B")
    fig = bertviz_lab.figure(a, "single-head", layer=2, head=1, display=display)
    assert list(fig.data[0].y) == ["1 the", "2 cat", "3 sat"]  # specials hidden, rows of sentence A only
    assert list(fig.data[0].x) == ["5 it", "6 slept"]  # columns of sentence B only
    with pytest.raises(TypeError, match="'hide_special'"):  # the loose keywords went with 0.1.0's release
        bertviz_lab.figure(a, "single-head", layer=2, head=1, hide_special=True)
    with pytest.raises(TypeError, match="'colour'"):
        bertviz_lab.figure(a, "single-head", colour="red")


def test_head_view_spans_and_exports(browser, hf_attentions, tmp_path):
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
    page = draw(browser, bertviz_lab.head_view(hf_attentions["bert"], tokens, layer=0, heads=[1], html_action="return"),
                tmp_path, "spans")
    w = weights(page, 0, 1)  # (query, key) as the page holds them
    # a span of queries ("the cat"): attention from it, averaged over its rows
    page.click(".bvl-hv-left[data-index='1']", modifiers=["Shift"])
    page.click(".bvl-hv-left[data-index='2']", modifiers=["Shift"])
    page.wait_for_function("document.querySelector('.bvl-headview').getAttribute('data-span') === 'query:1,2'")
    assert int(page.get_attribute(".bvl-headview", "data-lines")) == int((w[[1, 2]].mean(0) >= 0.01).sum())
    # a span of keys ("it slept"): attention to it, summed over its columns
    page.click(".bvl-hv-right[data-index='5']", modifiers=["Shift"])
    page.click(".bvl-hv-right[data-index='6']", modifiers=["Shift"])
    page.wait_for_function("document.querySelector('.bvl-headview').getAttribute('data-span') === 'key:5,6'")
    assert int(page.get_attribute(".bvl-headview", "data-lines")) == int((w[:, [5, 6]].sum(1) >= 0.01).sum())
    with page.expect_download() as done:
        page.click(".bvl-hv-set[data-set='svg']")
    svg = done.value.path().read_text(encoding="utf-8")
    assert svg.startswith("<svg") and svg.count("<line") == int((w[:, [5, 6]].sum(1) >= 0.01).sum())
    assert svg.count(">slept</text>") == 2  # both sides' labels
    with page.expect_download() as done:
        page.click(".bvl-hv-set[data-set='png']")
    assert done.value.suggested_filename == "head-view-L0.png"  # named as asked (layer=0)
    assert done.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.close()
