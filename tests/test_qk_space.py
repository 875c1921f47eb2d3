"""Query–key space (AttentionViz's normalisation) and head similarity: invariances by hand, real
vectors from the model, and the CLI."""
import json

import numpy as np
import pytest

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
    assert points[0] == {"sentence": 0, "position": 0, "token": "[CLS]"} and points[n]["sentence"] == 1
    assert len(points) == len(q) == len(k) == n + 5


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
