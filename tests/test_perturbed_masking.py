"""Perturbed Masking (Wu et al. 2020) as github.com/LividWo/Perturbed-Masking computes it: the impact matrix
against a literal transcription of their per-piece loop and merge, their decoding on a hand-counted matrix where
the plausible misreadings give other trees, their right-chain, and the command."""
import json

import numpy as np
import pytest
import torch

from bertviz_lab.bert.encoder.hook_table import hidden_state_names
from bertviz_lab.syntax.perturbed_masking import decode, impact_matrices, perturbed_masking, right_chain, their_softmax
from bertviz_lab.syntax.tree_decoders import chu_liu_edmonds, eisner
from bertviz_lab.treebank import Sentence

# "the puppy barked", puppy in two pieces (docs/research/perturbed-masking.md §6): word-level F after their
# ``--subword avg`` merge; index 0 is [CLS] = ROOT; F[d][h] = impact of word h on word d.
PUPPY = np.array([[0, 2, 2, 3], [0, 0, 4, 2], [0, 3.5, 0, 1], [0, 3, 3, 0]], dtype=float)


def test_their_decoding_of_a_hand_counted_matrix():
    assert decode(PUPPY, root=3, decoder="eisner").tolist() == [2, 3, 0]  # the gold tree, 3/3
    assert decode(PUPPY, root=3, decoder="cle").tolist() == [3, 1, 0]  # cycle the<->puppy contracted via barked
    # the misreadings: a proper row softmax, or no transpose, give other trees
    f = PUPPY.copy()
    f[3], f[3, 0], f[0, 0] = 0, 1, 0
    row_softmax = np.exp(f) / np.exp(f).sum(1, keepdims=True)
    assert eisner(row_softmax.T)[1:].tolist() == [3, 1, 0]
    assert eisner(their_softmax(f))[1:].tolist() == [0, 1, 0]
    # their softmax divides entry (i, j) by the sum of row j
    assert their_softmax(f)[1, 2] == pytest.approx(np.exp(4) / np.exp(f[2]).sum())
    assert PUPPY[3].tolist() == [0, 3, 3, 0]  # decode never changes its input


def test_the_decoders_keep_their_conventions():
    scores = np.array([[0, 5, 1], [0, 0, 4], [0, 3, 0]], dtype=float)  # scores[head, modifier]
    assert eisner(scores).tolist() == [-1, 0, 1]  # ROOT -> 1 -> 2
    several = np.array([[0, 5, 5], [0, 0, 1], [0, 1, 0]], dtype=float)
    assert eisner(several).tolist() == [-1, 0, 0]  # no single-root constraint
    assert chu_liu_edmonds(np.array([[9, 9, 9], [5, 0, 1], [1, 4, 0]], dtype=float)).tolist() == [0, 0, 1]
    assert right_chain(4, root=2).tolist() == [2, 0, 4, 5]  # the last word's head is past the sentence: a miss


def their_impact_matrix(lab, words, layer):
    """get_matrix_for_dep_probe.py's loop, piece by piece ([CLS] and [SEP] rows included), then dep_parsing.py's
    merge: columns the first piece, rows the mean of the pieces ([SEP] dropped, [CLS] kept as index 0)."""
    enc = lab.encode_words(words)
    mapping = [-1 if w is None else w for w in enc.word_ids]
    ids, p = list(enc.ids), len(enc.ids)
    hook = hidden_state_names(lab.n_layers)[layer]
    matrix = np.zeros((p, p))
    for i in range(p):
        base = list(ids)
        for t in range(p):
            if mapping[t] == mapping[i] and mapping[t] != -1:
                base[t] = lab.mask_id
        batch = [list(base) for _ in range(p)]
        for j in range(p):
            for t in range(p):
                if mapping[t] == mapping[j] and mapping[t] != -1:
                    batch[j][t] = lab.mask_id
        x = torch.tensor(batch)
        _, cache = lab.run({"input_ids": x, "token_type_ids": torch.zeros_like(x), "attention_mask": torch.ones_like(x)},
                           capture=[hook], compute_mlm=False)
        states = cache[hook][:, i, :].float().numpy()
        matrix[i] = np.linalg.norm(states[i] - states, axis=-1)
    columns = [[row[j] for j in range(p - 1) if mapping[j] != mapping[j + 1]] for row in matrix]
    merged = np.array(columns).T.tolist()
    rows = []
    for line in merged:
        new, buf = [], []
        for j in range(p - 1):
            buf.append(line[j])
            if mapping[j] != mapping[j + 1]:
                new.append(sum(buf) / len(buf))
                buf = []
        rows.append(new)
    return np.array(rows).T


def test_impact_matrices_equal_their_per_piece_loop_and_merge(tiny_lab):
    words = ["the", "dogs", "sat", "unbelievable", "on", "the", "mat"]  # two words of several pieces
    ours = impact_matrices(tiny_lab, words)  # (layers, 8, 8)
    assert ours.shape == (tiny_lab.n_layers, 8, 8)
    for layer in (1, tiny_lab.n_layers):
        theirs = their_impact_matrix(tiny_lab, words, layer)
        np.testing.assert_allclose(ours[layer - 1], theirs, rtol=1e-4, atol=1e-5)
    assert np.all(ours[:, :, 0] == 0) and np.all(ours[:, np.arange(8), np.arange(8)] == 0)
    assert ours[-1, 0, 1:].min() > 0  # the [CLS] row: masking any word moves [CLS]


def test_uas_counts_every_word_and_compares_with_the_right_chain(tiny_lab):
    sentences = [Sentence(["the", "cat", "sat", "on", "the", "mat", "."], [2, 3, 0, 6, 6, 3, 3],
                          ["det", "nsubj", "root", "case", "det", "obl", "punct"]),
                 Sentence(["dogs", "sat"], [2, 0], ["nsubj", "root"])]
    result = perturbed_masking(tiny_lab, sentences)
    uas = result.uas(resamples=50)
    assert uas["words"] == 9 and uas["sentences"] == 2  # punctuation and the root arc counted
    # the->cat, cat->sat, sat->ROOT, the->mat of 7, and both words of 'dogs sat': 6 of 9 (on->the, mat->., .->8 miss)
    assert uas["right-chain"]["uas"] == pytest.approx(6 / 9)
    eisner_hits = result.hits["eisner"]  # (words, layers)
    assert [row["uas"] for row in uas["eisner"]] == pytest.approx(eisner_hits.mean(0).tolist())
    assert "right-chain" in result.against_chain("eisner", tiny_lab.n_layers, resamples=50)


def test_the_perturbed_masking_command_prints_and_writes_json(tiny_folder, capsys):
    from bertviz_lab.cli import main

    code = main(["perturbed-masking", "--model", str(tiny_folder), "--device", "cpu", "--max-sentences", "3",
                 "--resamples", "50", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["uas"]["sentences"] == 3 and len(out["uas"]["eisner"]) == 2
    assert out["published"]["uas"] == 41.7 and "not a reproduction" not in json.dumps(out["published"])
    assert all(line.startswith("perturbed masking (") for line in out["conclusions"])
