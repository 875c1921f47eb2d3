"""Query–key space (AttentionViz's normalisation) and head similarity: invariances by hand, real
vectors from the model, and the CLI."""
import json

import numpy as np
import pytest
from browser import open_head_view_section

from bertviz_lab.attention.qk_space import head_similarity, joint_embedding, normalise
from bertviz_lab.lens import head_vectors, queries_and_keys


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_normalising_keeps_every_attention_row_and_equalises_mean_norms():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(6, 4)) * 3.0, rng.normal(size=(6, 4)) + 5.0  # keys far off and of another size
    nq, nk = normalise(q, k)
    np.testing.assert_allclose(softmax(nq @ nk.T), softmax(q @ k.T), atol=1e-12)
    assert np.linalg.norm(nq, axis=1).mean() == pytest.approx(np.linalg.norm(nk, axis=1).mean())
    assert not np.allclose(softmax(q @ (k * 2).T), softmax(q @ k.T))  # scaling keys alone would change it


def test_key_translation_by_hand():
    """q = (1, 0), (3, 0); k = (0, 1), (0, 3): mean(q) - mean(k) = (2, -2), so the keys move to
    (2, -1), (2, 1); both mean norms are then 2 and sqrt(5), c = sqrt(sqrt(5) / 2)."""
    q = np.array([[1.0, 0.0], [3.0, 0.0]])
    k = np.array([[0.0, 1.0], [0.0, 3.0]])
    nq, nk = normalise(q, k)
    c = np.sqrt(np.sqrt(5) / 2)
    np.testing.assert_allclose(nq, q * c)
    np.testing.assert_allclose(nk, np.array([[2.0, -1.0], [2.0, 1.0]]) / c)


def test_pca_puts_queries_first_then_keys_in_two_columns():
    rng = np.random.default_rng(1)
    coords = joint_embedding(rng.normal(size=(5, 8)), rng.normal(size=(5, 8)))
    assert coords.shape == (10, 2) and np.isfinite(coords).all()
    with pytest.raises(ValueError, match="pca"):
        joint_embedding(rng.normal(size=(5, 8)), rng.normal(size=(5, 8)), method="tsne")


def test_head_vectors_are_the_models_queries_and_keys(tiny_lab):
    text = "the big cat sat on the red mat"
    analysis = tiny_lab.analyze(text)
    queries, keys = queries_and_keys(tiny_lab, analysis)
    q, k, points = head_vectors(tiny_lab, [text, "the dog ran"], layer=1, head=2)
    n = len(analysis.tokens)
    np.testing.assert_allclose(q[:n], queries[1, 2], atol=1e-5)
    np.testing.assert_allclose(k[:n], keys[1, 2], atol=1e-5)
    assert {key: points[0][key] for key in ("sentence", "position", "token", "segment")} == \
        {"sentence": 0, "position": 0, "token": "[CLS]", "segment": 0} and points[n]["sentence"] == 1
    assert len(points) == len(q) == len(k) == n + 5
    from bertviz_lab.bert import layer_hook

    _, cache = tiny_lab.run(tiny_lab.batch_tensors([analysis.encoded()]), capture=[layer_hook(1, "v")])
    values = cache[layer_hook(1, "v")][0, 2].float()  # (tokens, head_dim): the head's value vectors
    np.testing.assert_allclose([p["value_norm"] for p in points[:n]], values.norm(dim=-1).numpy(), rtol=1e-5)


def test_treebank_points_carry_their_words_labels(tiny_lab):
    from bertviz_lab.lens import head_vectors_of_sentences
    from bertviz_lab.treebank import Sentence

    sentence = Sentence(["Dogs", "bark"], [2, 0], ["nsubj", "root"], ["NOUN", "VERB"])
    _, _, points = head_vectors_of_sentences(tiny_lab, [sentence], 0, 0)
    labels = [(p["token"], p["upos"], p["deprel"]) for p in points]
    assert labels[0] == ("[CLS]", "special", "special") and labels[-1] == ("[SEP]", "special", "special")
    words = tiny_lab.encode_words(sentence.words)
    assert [x[1:] for x in labels[1:-1]] == [(sentence.upos[w], sentence.relations[w]) for w in words.word_ids[1:-1]]


def test_head_similarity_is_zero_for_identical_heads_and_symmetric():
    a = np.zeros((1, 3, 2, 2))
    a[0, 0] = a[0, 1] = [[1, 0], [0, 1]]
    a[0, 2] = [[0.5, 0.5], [0.5, 0.5]]
    divergence = head_similarity([a])
    # JS((1, 0), (0.5, 0.5)) with m = (0.75, 0.25): 0.5 log(4/3) + 0.25 log(2/3) + 0.25 log 2 = 0.2158 per row
    expected = 0.5 * np.log(4 / 3) + 0.25 * np.log(2 / 3) + 0.25 * np.log(2)
    assert divergence[0, 1] == pytest.approx(0.0, abs=1e-9) and divergence[0, 2] == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(divergence, divergence.T)


def test_cli_gives_points_and_the_similarity_matrix(tiny_folder, tmp_path, capsys):
    from bertviz_lab.cli import main

    lines = tmp_path / "lines.txt"
    lines.write_text("the cat sat\nthe dog ran on the mat\n")
    assert main(["qk-space", "--text-file", str(lines), "--model", str(tiny_folder), "--layer", "2", "--head", "1",
                 "--similarity", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    kinds = [p["kind"] for p in out["points"]]
    assert kinds.count("query") == kinds.count("key") == 5 + 8 and out["sentences"] == 2
    assert np.array(out["head_similarity"]).shape == (8, 8)  # 2 layers x 4 heads


def test_the_app_draws_the_qk_space_and_head_similarity(tiny_lab):
    import json

    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.qk_controller import QK_HINT
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = Session(model=tiny_lab.checkpoint_id, device="cpu")
    assert "press Run first" in handlers.qk.qk_space(session, 1, 1)[ui.qk_message]
    handlers.run.analyze(RunInput("the big cat sat on the mat"), session)
    out = handlers.qk.qk_space(session, 2, 1, "input", "value_norm")
    fig = json.loads(out[ui.qk_plot]["plot"] if isinstance(out[ui.qk_plot], dict) else out[ui.qk_plot].plot)
    queries, keys = fig["data"]
    n = len(tiny_lab.encode("the big cat sat on the mat").ids)
    assert len(queries["x"]) == len(keys["x"]) == n and "value-vector norm" in fig["layout"]["title"]["text"]
    by_pos = handlers.qk.qk_space(session, 2, 1, "sample", "upos")
    legend = {t["name"] for t in json.loads(by_pos[ui.qk_plot].plot)["data"]}
    assert {"queries: NOUN", "keys: VERB", "queries: special"} <= legend  # one entry per part of speech
    assert "part of speech comes from a treebank" in handlers.qk.qk_space(session, 2, 1, "input", "upos")[ui.qk_message]
    sim = json.loads(handlers.qk.qk_similarity(session, "sample")[ui.qk_sim_plot].plot)["data"][0]
    heads = tiny_lab.n_layers * tiny_lab.n_heads
    assert len(sim["z"]) == heads and sim["customdata"][0][heads - 1] == [tiny_lab.n_layers - 1, tiny_lab.n_heads - 1]
    assert handlers.run.analyze(RunInput("a dog"), session)[ui.qk_message] == QK_HINT  # a new input clears them


def test_clicking_the_head_similarity_opens_that_head(browser, tiny_app, tiny_lab):
    page = open_head_view_section(browser, tiny_app, "Query–key space of the chosen head")
    page.click("#qk-btn")
    page.wait_for_selector("#qk-plot .main-svg", timeout=60000)
    assert "queries and" in page.locator("#qk-message").inner_text()
    page.click("#qk-sim-btn")
    page.wait_for_selector("#qk-similarity .nsewdrag", timeout=60000)
    page.wait_for_function("document.querySelector('#qk-similarity .js-plotly-plot').dataset.bvlPending === '0'")
    n = tiny_lab.n_layers * tiny_lab.n_heads
    page.locator("#qk-similarity .nsewdrag").first.scroll_into_view_if_needed()
    box = page.locator("#qk-similarity .nsewdrag").first.bounding_box()
    column = n - 1  # the last head: layer L, head H
    page.mouse.click(box["x"] + (column + 0.5) / n * box["width"], box["y"] + 0.5 / n * box["height"])
    expected = f"Layer {tiny_lab.n_layers}, head {tiny_lab.n_heads}"
    page.wait_for_function(f"document.querySelector('#single-plot .gtitle') && "
                           f"document.querySelector('#single-plot .gtitle').textContent === '{expected}'",
                           timeout=30000)
    page.close()


def test_notebook_qk_space_and_head_similarity(tiny_lab):
    import bertviz_lab
    from bertviz_lab.resources import SAMPLE_TREEBANK
    from bertviz_lab.treebank import read_conllu

    analysis = tiny_lab.analyze("the big cat sat on the mat")
    fig = bertviz_lab.qk_space(tiny_lab, analysis, layer=2, head=1, color_by="segment")
    assert [t.name for t in fig.data] == ["queries: A", "keys: A"] and len(fig.data[0].x) == len(analysis.tokens)
    tagged = bertviz_lab.qk_space(tiny_lab, read_conllu(SAMPLE_TREEBANK)[:5], color_by="upos")
    assert any(t.name == "keys: NOUN" for t in tagged.data)
    similarity = bertviz_lab.head_similarity(tiny_lab, ["the cat sat", "a dog ran"])
    heads = tiny_lab.n_layers * tiny_lab.n_heads
    assert np.asarray(similarity.data[0].z).shape == (heads, heads)
    with pytest.raises(ValueError, match="1-based"):
        bertviz_lab.qk_space(tiny_lab, analysis, layer=0)


def test_most_alike_heads_skips_each_head_against_itself():
    """Hand-made: 2 layers x 2 heads; heads 1-2 and 2-1 (flat 1 and 2) are closest, and the zero
    diagonal (every head against itself) is never the answer."""
    from bertviz_lab.attention.qk_space import most_alike_heads

    d = np.array([[0.0, 0.5, 0.6, 0.7], [0.5, 0.0, 0.1, 0.8], [0.6, 0.1, 0.0, 0.9], [0.7, 0.8, 0.9, 0.0]])
    assert most_alike_heads(d, n_heads=2) == ((0, 1), (1, 0), 0.1)


UPOS = ["ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT", "SCONJ",
        "SYM", "VERB", "X"]  # the 17 parts of speech of Universal Dependencies


def test_seventeen_parts_of_speech_get_seventeen_colours_and_points_say_what_they_are():
    from bertviz_lab.figures.qk import qk_figure

    points = [{"token": f"w{i}", "upos": upos, "sentence": i % 3, "position": i, "segment": 0, "value_norm": 1.0}
              for i, upos in enumerate(UPOS)]
    coords = np.random.default_rng(0).normal(size=(2 * len(points), 2))
    fig = qk_figure(coords, points, 0, 0, color_by="upos")
    queries = [t for t in fig["data"] if t["name"].startswith("queries: ")]
    colour = {t["name"][len("queries: "):]: t["marker"]["color"] for t in queries}
    assert sorted(colour) == sorted(UPOS) and len(set(colour.values())) == 17  # AUX, PROPN and VERB apart
    keys = {t["name"][len("keys: "):]: t["marker"]["color"] for t in fig["data"] if t["name"].startswith("keys: ")}
    assert keys == colour  # a part of speech has one colour, query or key
    verb = next(t for t in queries if t["name"] == "queries: VERB")
    assert verb["text"] == ["w15, VERB (position 15, sentence 1)"]  # token, part of speech, position, sentence


def test_the_twenty_most_frequent_tokens_are_written_on_one_point_each_per_side():
    from bertviz_lab.attention.qk_space import labelled_points
    from bertviz_lab.figures.qk import qk_figure

    # 22 tokens: "the" three times, "a" twice, the others once; 2 + 18 singletons make the top 20
    tokens = ["the", "a", "the", "a", "the"] + [f"t{i}" for i in range(20)]
    n = len(tokens)
    coords = np.zeros((2 * n, 2))
    coords[:n, 0] = np.arange(n)  # queries on a line
    coords[[0, 2, 4], 0] = [0.0, 1.0, 5.0]  # the "the" queries: their mean 2.0 is nearest the one at 1.0 (row 2)
    coords[n:, 1] = np.arange(n)  # keys on another
    coords[[n, n + 2, n + 4], 1] = [9.0, 10.0, 11.0]  # the "the" keys: the middle one (row n + 2)
    labels = labelled_points(coords, tokens)
    assert [t for _, t in labels[::2]] == ["the", "a"] + [f"t{i}" for i in range(18)]  # ties: first seen first
    assert labels[0] == (2, "the") and labels[1] == (n + 2, "the")
    points = [{"token": t, "sentence": 0, "position": i, "segment": 0} for i, t in enumerate(tokens)]
    fig = qk_figure(coords, points, 0, 0, color_by="segment")
    written = [(a["x"], a["y"], a["text"]) for a in fig["layout"]["annotations"]]
    assert len(written) == 40 and written[:2] == [(1.0, 0.0, "the"), (0.0, 10.0, "the")]
    assert "t19" not in {text for _, _, text in written}  # the 21st and 22nd most frequent are not written
