"""MDL probing (Voita & Titov 2020) as lena-voita/description-length-probing codes it: int(f * N) cut points over
sentences, the first block sent uniformly, every block in bits (the paper's formula; their code adds nats to
bits), the 100% model never used; control labels per word type; the command."""
import json
import math

import numpy as np
import pytest

from bertviz_lab.resources import SAMPLE_TREEBANK
from bertviz_lab.syntax.mdl import FRACTIONS, CodeSettings, control_labels, cut_points, online_codelength, online_codelengths
from bertviz_lab.treebank import read_conllu


def test_online_codelength_of_a_hand_counted_case():
    # N=10 targets, K=4, fractions 0.2, 0.5, 1: blocks of 2, 3, 5 targets
    online = online_codelength([2, 3, 5], [None, 3.0, 9.0], classes=4)  # 2*2 uniform + 3 x 1 bit + (1+1+2+2+3)
    assert online == 16.0 and 10 * math.log2(4) / online == 1.25
    assert online != pytest.approx(4 + 12 * math.log(2))  # their repo's nats added to bits would give 12.318
    assert online_codelength([2, 3, 5], [None, None, 9.0], classes=4) == 4 + 6 + 9  # no prefix: sent uniformly


def test_cut_points_truncate_over_sentences():
    assert cut_points(1000) == [1, 2, 4, 8, 16, 32, 62, 125, 250, 500, 1000]
    assert cut_points(10) == [0, 0, 0, 0, 0, 0, 0, 1, 2, 5, 10]
    assert FRACTIONS[-1] == 1.0 and len(FRACTIONS) == 11


def test_control_labels_are_one_per_type_and_follow_the_frequencies():
    sentences = read_conllu(SAMPLE_TREEBANK)
    relations = ["a", "b", "c"]
    labels = control_labels(sentences, relations, np.array([8.0, 1.0, 1.0]))
    by_type: dict[str, set] = {}
    for s, y in zip(sentences, labels):
        for w, label in zip(s.words, y):
            by_type.setdefault(w, set()).add(label)
    assert all(len(v) == 1 for v in by_type.values())  # one label per (case-sensitive) type
    shares = np.bincount([next(iter(v)) for v in by_type.values()], minlength=3) / len(by_type)
    assert shares[0] > 0.65 and shares[1] < 0.25


def test_a_layer_is_coded_in_fewer_bits_than_uniform_and_the_command_says_so(tiny_lab, tiny_folder, capsys):
    from bertviz_lab.cli import main

    sentences = read_conllu(SAMPLE_TREEBANK)
    [row] = online_codelengths(tiny_lab, sentences[:50], sentences[50:], CodeSettings(layers=(2,)))
    relations = {r for s in sentences[:50] for r, h in zip(s.relations, s.heads) if h > 0}
    assert row.classes == len(relations) and row.targets == sum(sum(h > 0 for h in s.heads) for s in sentences[:50])
    assert row.uniform_bits == pytest.approx(row.targets * math.log2(row.classes))
    assert 0 < row.online_bits < row.uniform_bits
    code = main(["description-length", "--train", str(SAMPLE_TREEBANK), "--dev", str(SAMPLE_TREEBANK), "--model",
                 str(tiny_folder), "--device", "cpu", "--layers", "1", "--max-train-sentences", "30", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and set(out["codelength"]) == {"relations", "control", "random weights"}
    assert out["codelength"]["relations"][0]["layer"] == 1
