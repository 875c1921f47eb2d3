"""The app's API through gradio_client, against the app launched in this process."""
import numpy as np
import pytest

gradio_client = pytest.importorskip("gradio_client")


def test_attention_endpoint_equals_analyze(default_app, minilm_lab):
    client = gradio_client.Client(default_app, verbose=False)
    text = "The bank raised the interest rate."
    result = client.predict(text, "", 5, api_name="/attention")
    expected = minilm_lab.analyze(text)
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

    from bertviz_lab.ui import build_demo

    demo = build_demo(tiny_lab, allow_any_model=True)
    url = launch(demo)
    try:
        client = gradio_client.Client(url, verbose=False)
        message = client.predict(str(tmp_path / "missing"), "cpu", api_name="/load_model")[0]
        assert "Could not load the model" in message and "no such folder" in message
        assert client.predict("the cat", "", 5, api_name="/analyze")[0] == "4 tokens."
    finally:
        demo.close()
