"""Hewitt & Liang's control task (john-hewitt/control-tasks ``CorruptedEdgePositionTask``): each word type's one
behaviour among self / first / last, case-sensitive, nothing clamped at the edges; and its forest for the distance
probe, with -1 between trees so the L1 loss leaves those pairs out."""
import numpy as np

from bertviz_lab.syntax.control_tasks import BEHAVIOURS, behaviour, control_edges, control_parents, control_sentence
from bertviz_lab.syntax.structural_probe import probe_loss
from bertviz_lab.syntax.trees import tree_distances
from bertviz_lab.treebank import Sentence

WORDS = "The dog saw the cat .".split()


def test_each_type_attaches_to_itself_the_first_or_the_last_word():
    # seed 1: The -> first, dog -> first, saw -> last, the -> self, cat -> first, . -> first (0-based parents)
    assert [behaviour(w, 1) for w in WORDS] == ["first", "first", "last", "self", "first", "first"]
    assert control_parents(WORDS, 1) == [0, 0, 5, 3, 0, 0]
    # case-sensitive: lowercasing would give "The" the behaviour of "the" (self), and 'the' would attach to 0
    assert behaviour("The", 1) != behaviour("the", 1)
    # not neighbours: a left/right reading would give heads such as [1, 1, 1, 2, ...]
    assert set(control_parents(WORDS, 1)) <= {0, 3, 5}
    assert control_parents(["Hello"], 1) == [0]  # one word: every behaviour is a self-loop


def test_a_type_keeps_its_behaviour_everywhere_and_types_split_evenly():
    assert control_parents(["saw", "it"], 1)[0] == 1  # 'saw' -> last in every sentence
    forms = [f"w{i}" for i in range(3000)]
    shares = np.array([sum(behaviour(f, 0) == b for f in forms) for b in BEHAVIOURS]) / len(forms)
    assert np.all(np.abs(shares - 1 / 3) < 0.03)


def test_the_control_forest_gives_distances_and_leaves_unjoined_pairs_out_of_the_loss():
    sentence = Sentence(WORDS, [2, 3, 0, 5, 3, 3], ["x"] * 6)
    control = control_sentence(sentence, 1)
    assert control.heads == [0, 1, 6, 0, 1, 1]  # 'the' attaches to itself: no edge
    d = tree_distances(control.heads)
    assert d[1, 2] == 3  # dog - The - . - saw
    assert (d[3, [0, 1, 2, 4, 5]] == -1).all() and d[3, 3] == 0
    assert control_edges(control, np.ones(6, bool), 1) == {(0, 1), (0, 4), (0, 5), (2, 5)}
    import torch

    gold = torch.tensor(d)[None]
    predicted = torch.zeros_like(gold)
    loss = probe_loss("distance", predicted, gold, torch.tensor([6]))
    assert float(loss) == float(d[d > 0].sum()) / 36  # the -1 pairs add nothing
