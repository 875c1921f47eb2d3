"""Direction names, one place (``syntax/directions.py``): the project's names, the papers' names as
aliases, and a one-sentence error for anything else, in scoring, predictors, head ensembles and figures.
Limisiewicz et al.'s d2p is Clark's dep->head; their p2d reads the parent's row (head-row->dep), which is
not Clark's head->dep (the dependent's column)."""
import numpy as np
import pytest

from bertviz_lab.syntax import ensembles as ens
from bertviz_lab.syntax.directions import (
    ALL_DIRECTIONS,
    CLARK_DIRECTIONS,
    DEP_HEAD,
    HEAD_DEP,
    HEAD_ROW,
    normalize_direction,
)
from bertviz_lab.syntax.predictors import predict_heads, predicted_heads
from bertviz_lab.treebank import Sentence


@pytest.mark.parametrize("name, expected", [("dep->head", DEP_HEAD), ("d2p", DEP_HEAD), ("normal", DEP_HEAD),
                                            ("head->dep", HEAD_DEP), ("transpose", HEAD_DEP),
                                            ("head-row->dep", HEAD_ROW), ("p2d", HEAD_ROW)])
def test_every_name_and_alias_means_one_direction(name, expected):
    assert normalize_direction(name) == expected
    if expected in CLARK_DIRECTIONS:
        assert normalize_direction(name, CLARK_DIRECTIONS) == expected


def test_any_other_name_is_one_sentence_naming_the_choices():
    with pytest.raises(ValueError) as unknown:
        normalize_direction("dep-head")
    assert str(unknown.value) == ("unknown direction 'dep-head'; choose one of dep->head, head->dep, head-row->dep "
                                  "(or the aliases d2p, normal, transpose, p2d)")
    with pytest.raises(ValueError) as not_clark:  # p2d is not Clark's head->dep, so per-head scoring refuses it
        normalize_direction("p2d", CLARK_DIRECTIONS)
    assert str(not_clark.value) == ("direction 'p2d' (head-row->dep) is not computed here; choose one of "
                                    "dep->head, head->dep (or the aliases d2p, normal, transpose)")
    with pytest.raises(ValueError, match="unknown direction None"):
        normalize_direction(None)


def test_predictors_take_the_names_and_refuse_the_ensemble_only_reading():
    word_attn = np.random.default_rng(0).random((2, 3, 5, 5))  # (layers, heads, words, words)
    both = predicted_heads(word_attn)
    assert tuple(both) == CLARK_DIRECTIONS
    assert np.array_equal(predict_heads(word_attn, "normal"), both[DEP_HEAD])
    assert np.array_equal(predict_heads(word_attn, "transpose"), both[HEAD_DEP])
    assert not np.array_equal(both[DEP_HEAD], both[HEAD_DEP])
    for name in ("p2d", "head-row->dep", "up"):
        with pytest.raises(ValueError, match="choose one of dep->head, head->dep"):
            predict_heads(word_attn, name)


def random_maps(seed: int = 0, sentences: int = 6) -> ens.WordMaps:
    """Random row-normalised maps of 4 heads over random trees (every word but the first has a head before it)."""
    rng = np.random.default_rng(seed)
    maps, found = [], []
    for _ in range(sentences):
        n = int(rng.integers(3, 8))
        heads = [0] + [int(rng.integers(1, i + 1)) for i in range(1, n)]
        found.append(Sentence([f"w{i}" for i in range(n)], heads, ["root"] + ["dep"] * (n - 1), ["X"] * n))
        m = rng.random((4, n, n)).astype(np.float32)
        maps.append(m / m.sum(-1, keepdims=True))
    return ens.WordMaps(maps, found, np.arange(sentences), 2, 2)


def by_hand(maps: ens.WordMaps, heads: list[int], read) -> list[bool]:
    """Each arc's hit, computed here from the mean map: ``read(mean, dep, parent)`` -> (vector, itself, target)."""
    hits = []
    for m, s in zip(maps.maps, maps.sentences):
        mean = m[heads].mean(0)
        for dep, head in enumerate(s.heads):
            if head:
                vector, itself, target = read(mean, dep, head - 1)
                vector = vector.copy()
                vector[itself] = 0.0
                hits.append(int(vector.argmax()) == target)
    return hits


def grouped(maps: ens.WordMaps, direction: str, heads: list[int]) -> list[bool]:
    """arc_rows' hits put back in treebank order (it groups arcs by sentence length)."""
    rows = ens.arc_rows(maps, "all", direction)
    _, hit = rows.hits(heads)
    keys = [(int(sentence), k) for *_, ids in rows.groups for k, sentence in enumerate(ids)]  # a sentence's arcs in order
    return [h for _, h in sorted(zip(keys, hit.tolist()), key=lambda pair: pair[0])]


def test_ensembles_given_dep_to_head_give_exactly_the_d2p_result():
    maps = random_maps()
    for heads in ([0], [1, 3], [0, 1, 2, 3]):
        _, d2p = ens.arc_rows(maps, "all", "d2p").hits(heads)
        _, project = ens.arc_rows(maps, "all", "dep->head").hits(heads)
        assert project.tolist() == d2p.tolist()
        assert grouped(maps, "dep->head", heads) == by_hand(maps, heads, lambda m, d, p: (m[d], d, p))
    singles = ens.arc_rows(maps, "all", "dep->head").single_accuracies(4)
    assert ens.greedy_ensemble(ens.arc_rows(maps, "all", "d2p").accuracy, singles) == \
        ens.greedy_ensemble(ens.arc_rows(maps, "all", "dep->head").accuracy, singles)


def test_ensembles_read_p2d_as_the_parents_row_and_head_to_dep_as_clarks_column():
    maps = random_maps(seed=1)
    heads = [1, 2]
    assert grouped(maps, "p2d", heads) == by_hand(maps, heads, lambda m, d, p: (m[p], p, d))
    column = by_hand(maps, heads, lambda m, d, p: (m[:, d], d, p))
    assert grouped(maps, "head->dep", heads) == column
    assert column != by_hand(maps, heads, lambda m, d, p: (m[p], p, d))  # the two readings differ on these maps
    # one head: the ensemble's head->dep is Clark's transpose predictor exactly
    clark = [bool(predict_heads(m[[2]], "head->dep")[0][dep] == head) for m, s in zip(maps.maps, maps.sentences)
             for dep, head in enumerate(s.heads) if head]
    assert grouped(maps, "head->dep", [2]) == clark


def test_ensembles_refuse_a_direction_they_do_not_know():
    with pytest.raises(ValueError, match=r"unknown direction 'p2c'; choose one of dep->head, head->dep, head-row->dep"):
        ens.arc_rows(random_maps(), "all", "p2c")
    assert set(ALL_DIRECTIONS) == {DEP_HEAD, HEAD_DEP, HEAD_ROW}


def test_figures_read_the_aliases_and_refuse_the_rest(tiny_lab):
    from bertviz_lab.figures.syntax import relation_heatmap
    from bertviz_lab.syntax.scoring import score_treebank
    from bertviz_lab.syntax.summary import Settings, summarise
    from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

    summary = summarise(score_treebank(tiny_lab, read_conllu(SAMPLE_TREEBANK)[:8]), settings=Settings(resamples=20))
    project, alias = relation_heatmap(summary, "all", "head->dep"), relation_heatmap(summary, "all", "transpose")
    assert project["data"][0]["z"] == alias["data"][0]["z"] and "(head->dep, n=" in alias["layout"]["title"]["text"]
    assert project["data"][0]["z"] != relation_heatmap(summary, "all", "d2p")["data"][0]["z"]
    with pytest.raises(ValueError, match="direction 'p2d' \\(head-row->dep\\) is not computed here"):
        relation_heatmap(summary, "all", "p2d")


def test_a_summary_reads_a_papers_direction_name_as_the_projects(tiny_lab):
    """accuracy_map used to answer 'no nsubj arcs' for 'normal': the alias now reads as dep->head, and a
    direction per-head scoring does not compute is refused by name."""
    from bertviz_lab.syntax.run import run_syntax
    from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu

    summary = run_syntax(tiny_lab, read_conllu(SAMPLE_TREEBANK)[:30], null=False).summary
    relation = summary.head_scores.relation.iloc[0]
    np.testing.assert_array_equal(summary.accuracy_map(relation, "normal"), summary.accuracy_map(relation, "dep->head"))
    with pytest.raises(ValueError, match="not computed here"):
        summary.accuracy_map(relation, "p2d")
