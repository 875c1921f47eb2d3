"""The app's API through gradio_client, against the app launched in this process."""
import numpy as np
import pytest

gradio_client = pytest.importorskip("gradio_client")


def test_attention_endpoint_equals_analyze(default_app, default_lab):
    client = gradio_client.Client(default_app, verbose=False)
    text = "The bank raised the interest rate."
    result = client.predict(text, "", 5, api_name="/attention")
    expected = default_lab.analyze(text)
    assert result["tokens"] == expected.tokens
    np.testing.assert_allclose(np.array(result["attention"], dtype=np.float32), expected.attention, atol=1e-6)


def test_masked_sentence_predicts_exactly_the_masked_positions(tiny_app, tiny_lab):
    client = gradio_client.Client(tiny_app, verbose=False)
    out = client.predict("the [MASK] sat on the [MASK]", "", 3, api_name="/analyze")
    table = out[11]
    positions = sorted({row[0] for row in table["data"]})
    assert positions == [2, 6]
    expected = tiny_lab.analyze("the [MASK] sat on the [MASK]", top_k=3)
    got = [(row[0], row[3]) for row in table["data"]]
    assert got == [(p.position, q.token) for p in expected.mlm for q in p.predictions]


def test_bad_input_gives_a_message_and_the_app_keeps_serving(tiny_app):
    client = gradio_client.Client(tiny_app, verbose=False)
    assert "empty" in client.predict("   ", "", 5, api_name="/analyze")[0]
    assert "too many masked" in client.predict("[MASK] [MASK] [MASK] cat", "", 5, api_name="/analyze")[0]
    long = client.predict("the " * 100, "", 5, api_name="/analyze")[0]
    assert "102 tokens" in long and "truncated to 64" in long
    assert client.predict("the cat sat", "", 5, api_name="/analyze")[0] == "5 tokens."


def test_unknown_model_is_a_message(tiny_app):
    client = gradio_client.Client(tiny_app, verbose=False)
    session_message = client.predict("no-such/model", "cpu", api_name="/load_model")
    assert "not enabled on this server" in session_message[0]


def test_model_that_cannot_be_loaded_is_a_message(tiny_lab, tmp_path):
    from conftest import launch

    from bertviz_lab.app import build_demo

    demo = build_demo(tiny_lab, allow_any_model=True)
    url = launch(demo)
    try:
        client = gradio_client.Client(url, verbose=False)
        message = client.predict(str(tmp_path / "missing"), "cpu", api_name="/load_model")[0]
        assert "Could not load the model" in message and "no such folder" in message
        assert client.predict("the cat", "", 5, api_name="/analyze")[0] == "4 tokens."
    finally:
        demo.close()


@pytest.fixture(scope="module")
def sharp_app(sharp_lab):
    from conftest import serve

    yield from serve(sharp_lab)


def test_directional_probe_and_sweep_through_the_api(sharp_app, sharp_lab):
    from bertviz_lab.interventions import compare, make_intervention

    client = gradio_client.Client(sharp_app, verbose=False)
    text = "the big cat [MASK] on the red mat"
    out = client.predict(text, "", 5, "left-only", [], "1-1", 0, 0, api_name="/probe")
    message, table = out[0], out[3]
    expected = compare(sharp_lab, text, make_intervention("left-only"))
    assert f"{float(expected.js.mean()):.4f}" in message
    assert table["data"][0][0] == 4
    assert table["data"][0][4] == pytest.approx(round(expected.changes[0].probed_probability, 4))
    msg, sweep = client.predict(text, "", [], api_name="/directional_sweep")
    assert sweep["headers"][3:] == ["p both", "p left only", "p right only"]
    assert sweep["data"][0][4] == pytest.approx(round(expected.changes[0].probed_probability, 4))


def test_positional_probe_and_position_inspector_through_the_api(sharp_app, sharp_lab):
    import json

    from bertviz_lab.interventions import compare, make_intervention

    client = gradio_client.Client(sharp_app, verbose=False)
    text = "the big cat [MASK] on the red mat"
    out = client.predict(text, "", 5, "shift-positions", [], "1-1", 7, 0, api_name="/probe")
    expected = compare(sharp_lab, text, make_intervention("shift-positions", shift=7))
    assert "shift-positions by 7" in out[0] and f"{float(expected.js.mean()):.4f}" in out[0]
    js = json.loads(out[2]["plot"])
    assert js["data"][0]["type"] == "heatmap"
    msg, fig = client.predict(12, api_name="/position_embeddings")
    assert "first 12 positions" in msg
    traces = json.loads(fig["plot"])["data"]
    assert len(traces) == 2 and traces[0]["z"]["shape"] == "12, 12"
    bad = client.predict(text, "", 5, "shift-positions", [], "1-1", 500, 0, api_name="/probe")
    assert bad[0].startswith("⚠️") and "shift" in bad[0]


def test_syntax_probe_and_sentence_arcs_through_the_api(sharp_app, sharp_lab, tmp_path):
    from bertviz_lab.syntax import SAMPLE_TREEBANK, probe_treebank, read_conllu

    client = gradio_client.Client(sharp_app, verbose=False)
    out = client.predict("sample", None, api_name="/syntax_probe")
    message, table = out[0], out[1]
    sentences = read_conllu(SAMPLE_TREEBANK)
    assert f"Scored {len(sentences)} sentences" in message
    expected = probe_treebank(sharp_lab, sentences).best_heads
    assert [row[0] for row in table["data"]] == list(expected.relation)
    assert [row[1] for row in table["data"]] == list(expected.best_head)
    text, fig = client.predict(0, 2, 3, "", api_name="/syntax_arcs")
    assert "Layer 2, head 3 recovers" in text and "**nsubj**: cat → sat" in text
    # an uploaded file that is not CoNLL-U gives a message, not a crash
    bad = tmp_path / "bad.conllu"
    bad.write_text("this is not a treebank\n")
    msg = client.predict("upload", gradio_client.handle_file(str(bad)), api_name="/syntax_probe")[0]
    assert msg.startswith("⚠️") and "bad.conllu:1:" in msg
