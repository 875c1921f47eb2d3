"""Corpus search as exBERT does it: unit vectors per layer (per head for contexts), inner product,
special tokens left out, treebank labels on every piece; FAISS and numpy agree."""
import json

import numpy as np
import pytest
from browser import open_head_view_section
from builders import run_cli

from bertviz_lab.lab import InputError
from bertviz_lab.neighbours import TokenIndex, build_index, nearest, query_vector, unit_rows


def hand_index(raw, heads=2):
    """An index over given raw context vectors (one layer after the empty layer 0)."""
    vectors = np.stack([np.zeros((len(raw), 4), np.float32), unit_rows(np.array(raw, np.float32), heads)])
    records = [{"sentence": i, "position": 1, "token": t, "word": 0, "upos": "X", "deprel": "dep"}
               for i, t in enumerate("AB")]
    return TokenIndex("hand", "hand", "contexts", vectors, records, [["[CLS]", t, "[SEP]"] for t in "AB"], heads)


def test_contexts_are_unit_per_head_as_exbert_normalises_them():
    # two heads of two dimensions. Per head (exBERT's normed_contexts), A matches the query in both heads
    # (score 2) and B only nearly in the second (1.958): A first. Normalising the whole 4-vector instead
    # would rank B first (0.978 vs 0.774), because A's large first head swamps its second.
    index = hand_index([[10, 0, 1, 0], [1, 0, 1, 0.3]])
    query = unit_rows(np.array([1, 0, 1, 0], np.float32), 2)
    found = nearest(index, query, 1, k=2, use_faiss=False)
    assert [n.token for n in found] == ["A", "B"]
    assert found[0].score == pytest.approx(2.0) and found[1].score == pytest.approx(1 + 1 / np.hypot(1, 0.3), abs=1e-4)
    whole = unit_rows(np.array([[10, 0, 1, 0], [1, 0, 1, 0.3]], np.float32), 1) @ unit_rows(np.array([1, 0, 1, 0.]), 1)
    assert whole[1] > whole[0]  # the misreading ranks the other way
    # a search by head 2 alone (exBERT's head mask): A and B differ only there, and B's second head is off
    only_second = nearest(index, query, 1, k=2, heads=[1], use_faiss=False)
    assert [n.token for n in only_second] == ["A", "B"] and only_second[0].score == pytest.approx(1.0)
    with pytest.raises(InputError, match="contexts start at layer 1"):
        nearest(index, query, 0)


@pytest.fixture(scope="module")
def sample_index(tiny_lab):
    from bertviz_lab.resources import SAMPLE_TREEBANK
    from bertviz_lab.treebank import read_conllu

    sentences = read_conllu(SAMPLE_TREEBANK)
    return sentences, build_index(tiny_lab, sentences)


def test_index_leaves_special_tokens_out_and_labels_each_piece(tiny_lab, sample_index):
    sentences, index = sample_index
    assert not {r["token"] for r in index.records} & {"[CLS]", "[SEP]", "[PAD]"}
    assert index.vectors.shape[:2] == (tiny_lab.n_layers + 1, len(index.records))
    assert np.allclose(np.linalg.norm(index.vectors, axis=-1), 1, atol=1e-5)  # cosine by inner product
    first = [r for r in index.records if r["sentence"] == 0]
    s = sentences[0]
    assert [(r["upos"], r["deprel"]) for r in first if r["word"] is not None] == \
        [(s.upos[r["word"]], s.relations[r["word"]]) for r in first]


@pytest.mark.parametrize("layer", [0, 2])
def test_a_token_of_an_indexed_sentence_finds_itself_first(tiny_lab, sample_index, layer):
    sentences, index = sample_index
    text = " ".join(sentences[3].words)
    tokens = tiny_lab.encode(text).tokens
    # a piece no other sentence has at the same position: at layer 0 (token + position + segment
    # embeddings) such a twin would be an exact tie, ranked by float noise
    position = next(i for i, t in enumerate(tokens) if t not in ("[CLS]", "[SEP]") and sum(
        r["token"] == t and r["position"] == i for r in index.records) == 1)
    found = nearest(index, query_vector(tiny_lab, text, position, layer), layer, k=3, use_faiss=False)
    # the same sentence encoded from its words or from its text gives the same pieces here
    assert (found[0].sentence, found[0].position) == (3, position) and found[0].score == pytest.approx(1.0, abs=1e-4)
    assert found[0].score >= found[1].score >= found[2].score
    assert f"[{tokens[position]}]" in found[0].context


def test_faiss_and_numpy_return_the_same_neighbours(tiny_lab, sample_index):
    pytest.importorskip("faiss")
    _, index = sample_index
    query = query_vector(tiny_lab, "the cat sat on the mat", 2, 2)
    ours = nearest(index, query, 2, k=8, use_faiss=False)
    theirs = nearest(index, query, 2, k=8, use_faiss=True)
    assert [(n.sentence, n.position) for n in ours] == [(n.sentence, n.position) for n in theirs]
    assert np.allclose([n.score for n in ours], [n.score for n in theirs], atol=1e-4)


def test_saved_index_gives_the_same_neighbours(tiny_lab, sample_index, tmp_path):
    _, index = sample_index
    loaded = TokenIndex.load(index.save(tmp_path / "index"))
    query = query_vector(tiny_lab, "the cat sat on the mat", 2, 1)
    before, after = (nearest(i, query, 1, 5, use_faiss=False) for i in (index, loaded))
    # saved as float16: scores move by < 2e-3, so near-ties may swap places but the neighbours stay
    assert before[0].sentence == after[0].sentence
    assert {(n.sentence, n.position) for n in before} == {(n.sentence, n.position) for n in after}
    assert np.allclose(sorted(n.score for n in before), sorted(n.score for n in after), atol=2e-3)
    with pytest.raises(InputError, match="not a token index"):
        TokenIndex.load(tmp_path)


def test_cli_index_and_search(tiny_folder, tmp_path, default_lab):
    done = run_cli("index", "--model", tiny_folder, "--out", tmp_path / "idx", "--max-sentences", "20")
    assert done.returncode == 0 and "indexed" in done.stdout and "sha256" in done.stdout
    found = run_cli("search", "The cat sat on the mat.", "--token", "cat", "--index", tmp_path / "idx", "-k", "3",
                    "--json")
    assert found.returncode == 0, found.stderr
    out = json.loads(found.stdout)
    assert out["token"] == "cat" and len(out["neighbours"]) == 3 and out["layer"] == 2
    assert [n["rank"] for n in out["neighbours"]] == [1, 2, 3]
    wrong = run_cli("search", "The cat sat.", "--token", "cat", "--index", tmp_path / "idx", "--model", "default")
    assert wrong.returncode == 2 and "the index was built with" in wrong.stderr  # other weights, other space
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat sat on the mat\nthe dog ran home\n", encoding="utf-8")
    plain = run_cli("index", "--model", tiny_folder, "--text-file", lines, "--out", tmp_path / "plain")
    assert plain.returncode == 0 and "of 2 sentences" in plain.stdout
    missing = run_cli("search", "The cat sat.", "--token", "dog", "--index", tmp_path / "idx")
    assert missing.returncode == 2 and "'dog' is not one of the tokens" in missing.stderr


def test_the_app_searches_from_a_token_of_the_analysis(tiny_lab):
    from bertviz_lab.app import build_demo
    from bertviz_lab.app.forms import RunInput
    from bertviz_lab.app.search_controller import SEARCH_HINT
    from bertviz_lab.app.state import Session

    demo = build_demo(tiny_lab)
    handlers, ui = demo.bvl_controllers, demo.bvl_controllers.page.ui
    session = Session(model=tiny_lab.checkpoint_id, device="cpu")
    assert "Press Run first" in handlers.search.search_tokens(session, 1, 1, 1)[ui.search_message]
    handlers.run.analyze(RunInput("the cat sat on the mat"), session)
    out = handlers.search.search_tokens(session, 2, 2, 1, "embeddings")
    table = out[ui.search_table]
    assert len(table) == 15 and list(table["rank"]) == list(range(1, 16))
    assert table["similarity"].is_monotonic_decreasing
    assert "**cat** (position 2) after layer 2" in out[ui.search_message]
    assert tiny_lab.checkpoint_info().sha256[:12] in out[ui.search_message]  # names its weights
    by_head = handlers.search.search_tokens(session, 2, 2, 1, "contexts", "the chosen head")
    assert "head 1 only" in by_head[ui.search_message] and by_head[ui.search_table]["similarity"].max() <= 1.0001
    assert "not [CLS] or [SEP]" in handlers.search.search_tokens(session, 0, 2, 1)[ui.search_message]
    again = handlers.run.analyze(RunInput("a dog ran"), session)  # a new input clears the old search
    assert again[ui.search_message] == SEARCH_HINT and len(again[ui.search_table]) == 0


def test_search_in_the_browser(browser, tiny_app):
    page = open_head_view_section(browser, tiny_app, "Find similar tokens in a treebank")
    page.click("#search-token input")
    page.get_by_role("option", name="2 cat").click()
    page.click("#search-btn")
    page.wait_for_function("document.querySelector('#search-message').innerText.includes('Nearest to')", timeout=60000)
    assert page.locator("#search-table").is_visible()
    assert "[" in page.locator("#search-table").inner_text()  # each neighbour shown in its sentence
    page.close()


def test_the_search_task_checks_the_query_token_once_for_every_door(tiny_lab, sample_index):
    """A position past the input, a special token, or neither token nor position is one sentence (the command
    line used to fail with an IndexError past the input); a good query finds itself first, as nearest does."""
    from bertviz_lab.lab import InputError
    from bertviz_lab.tasks.search import SearchRequest, search

    sentences, index = sample_index
    text = " ".join(sentences[3].words)
    n = len(tiny_lab.encode(text).tokens)
    with pytest.raises(InputError, match=f"the token must be a whole number from 0 to {n - 1} \\(got 99\\)"):
        search(SearchRequest(text, position=99), tiny_lab, index)
    with pytest.raises(InputError, match="choose a word piece, not \\[CLS\\] or \\[SEP\\]"):
        search(SearchRequest(text, position=0), tiny_lab, index)
    with pytest.raises(InputError, match="name the token to search for, or its position"):
        search(SearchRequest(text), tiny_lab, index)
    record = search(SearchRequest(text, position=2, layer=2, k=3), tiny_lab, index)
    direct = nearest(index, query_vector(tiny_lab, text, 2, 2), 2, k=3)
    assert [(x.sentence, x.position) for x in record.neighbours] == [(x.sentence, x.position) for x in direct]
    assert record.to_json()["token"] == tiny_lab.encode(text).tokens[2] and record.layer == 2
