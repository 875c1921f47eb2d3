"""Uncertainty, held-out selection, null model and checkpoint comparison of syntax scores."""
import numpy as np
import pytest

from bertviz_lab.lab import CheckpointInfo, null_model
from bertviz_lab.syntax.scoring import ALL, TREE, ArcTable, TreebankScores, score_treebank
from bertviz_lab.syntax.statistics import Resampler, estimate, split_sentences
from bertviz_lab.syntax.summary import Settings, compare_checkpoints, summarise
from bertviz_lab.treebank import SAMPLE_TREEBANK, read_conllu


def table(sentence, relation_names, relation, dep_hits, head_hits=None, layers=1, heads=2):
    arcs = len(sentence)
    hits = np.asarray(dep_hits, dtype=bool).reshape(arcs, layers, heads)
    other = np.zeros_like(hits) if head_hits is None else np.asarray(head_hits, dtype=bool).reshape(arcs, layers, heads)
    return ArcTable(layers, heads, np.asarray(sentence), np.asarray(relation), relation_names, np.zeros(arcs, bool),
                    {"dep->head": hits, "head->dep": other, TREE: np.zeros_like(hits)},
                    np.zeros((arcs, 6), bool), np.zeros(arcs, bool))


def scores_of(arcs):
    return TreebankScores(arcs, CheckpointInfo("t", "test", "0" * 64, False), len(np.unique(arcs.sentence)), 0)


def test_vectorised_bootstrap_equals_a_loop_over_resamples():
    rng = np.random.default_rng(1)
    sentence = rng.integers(0, 30, 400)
    hits = rng.random((400, 5)) < 0.4
    resampler = Resampler.over(sentence, 200, seed=7)
    est = estimate(sentence, hits, resampler)
    assert est.total == 400 and np.array_equal(est.correct, hits.sum(0))
    for b in (0, 57, 199):
        weight = dict(zip(resampler.sentences.tolist(), resampler.weights[b]))
        w = np.array([weight[s] for s in sentence.tolist()])  # each arc counts as often as its sentence was drawn
        np.testing.assert_allclose(est.draws[b], (w[:, None] * hits).sum(0) / w.sum())
    low, high = est.interval()
    assert np.all(low <= est.accuracy) and np.all(est.accuracy <= high)


def test_resampling_is_by_sentence_and_seeded():
    sentence = np.repeat(np.arange(10), 3)
    a, b = Resampler.over(sentence, 50, seed=3), Resampler.over(sentence, 50, seed=3)
    assert np.array_equal(a.weights, b.weights) and a.weights.shape == (50, 10)
    assert np.all(a.weights.sum(1) == 10)  # each resample draws as many sentences as there are
    select, report = split_sentences(sentence, 0.5, seed=0)
    assert len(select) == len(report) == 5 and not set(select) & set(report)


def test_held_out_selection_reports_the_chosen_head_on_other_sentences():
    # 20 sentences, one arc each. Head 0 is right on every "select" sentence and wrong elsewhere;
    # head 1 is right on 60% of all sentences. In sample, head 1 wins (0.6 against head 0's 0.5);
    # on the select half head 0 wins, so held out it is scored on the sentences it did not win on.
    select, report = split_sentences(np.arange(20), 0.5, seed=0)
    head0 = np.isin(np.arange(20), select)
    head1 = np.arange(20) % 5 < 3
    arcs = table(np.arange(20), ["nsubj"], np.zeros(20, int), np.stack([head0, head1], 1))
    best = summarise(scores_of(arcs), settings=Settings(resamples=100, min_arcs=1)).best_heads.set_index("relation")
    row = best.loc["nsubj"]
    assert row.best_head == "1-2" and row.accuracy == pytest.approx(0.6)  # in sample: 0.6 beats 0.5
    assert row.heldout_head == "1-1"  # on the select half head 0 is perfect ...
    assert row.heldout_accuracy == 0.0  # ... and on the report half it is always wrong


def test_held_out_p_value_compares_head_and_baseline_both_chosen_on_the_other_half():
    """Hand-counted: 20 one-arc sentences. Head 0 is right exactly on the selection half (chosen there,
    always wrong on the report half); offset -1 is never right on the selection half and right on every
    report sentence. In sample, head 1 (12 of 20) is compared with offset -1 (10 of 20); held out,
    head 0 (0 of 10) is compared with the offset chosen on the selection half: all
    offsets tie at 0 there and the tie goes to the largest, +2, which is never right -> difference 0 - 0,
    p = 1. A reading that picks the baseline on the report half (offset -1, 10 of 10) would give -1.0."""
    from bertviz_lab.syntax.predictors import OFFSETS

    select, report = split_sentences(np.arange(20), 0.5, seed=0)
    head0 = np.isin(np.arange(20), select)
    head1 = np.arange(20) % 5 < 3
    arcs = table(np.arange(20), ["nsubj"], np.zeros(20, int), np.stack([head0, head1], 1))
    arcs.offset_hits[:, OFFSETS.index(-1)] = ~head0  # right on every report sentence only
    row = summarise(scores_of(arcs), settings=Settings(resamples=200, min_arcs=1)).best_heads.set_index(
        "relation").loc["nsubj"]
    assert row.baseline_offset == -1 and row.baseline_accuracy == pytest.approx(0.5)  # in sample: 10 of 20
    assert row.heldout_head == "1-1" and row.heldout_accuracy == 0.0
    assert row.heldout_baseline_offset == max(OFFSETS) and row.heldout_baseline_accuracy == 0.0
    assert row.heldout_difference == 0.0 and row.heldout_p_value == 1.0
    assert "indistinguishable" in row.heldout_verdict and "includes 0" in row.heldout_verdict


def test_paired_p_value_when_the_head_wins_in_every_sentence():
    sentence = np.repeat(np.arange(30), 2)
    arcs = table(sentence, ["det"], np.zeros(60, int), np.ones((60, 2)))
    row = summarise(scores_of(arcs), settings=Settings(resamples=99, min_arcs=1)).best_heads.iloc[0]
    # the offset baseline is never right here, so every resample favours the head: p = 1 / (B + 1)
    assert row.accuracy == 1.0 and row.baseline_accuracy == 0.0 and row.p_value_in_sample == pytest.approx(1 / 100)


def test_null_model_is_seeded_random_weights_of_the_same_shape(sharp_lab):
    a, b, c = null_model(sharp_lab, 0), null_model(sharp_lab, 0), null_model(sharp_lab, 1)
    assert a.n_layers == sharp_lab.n_layers and a.n_heads == sharp_lab.n_heads
    assert a.checkpoint_info().sha256 == b.checkpoint_info().sha256 != c.checkpoint_info().sha256
    assert a.checkpoint_info().sha256 != sharp_lab.checkpoint_info().sha256
    weight = a.model.bert.encoder.layer[0].attention.self.query.weight
    assert abs(float(weight.detach().std()) - 0.02) < 0.002
    assert float(a.model.bert.encoder.layer[0].output.LayerNorm.bias.detach().abs().max()) == 0


def test_summary_names_weights_and_shows_the_null_model(sharp_lab):
    sentences = read_conllu(SAMPLE_TREEBANK)[:30]
    scores = score_treebank(sharp_lab, sentences)
    summary = summarise(scores, score_treebank(null_model(sharp_lab), sentences),
                        Settings(resamples=100, min_arcs=5))
    assert set(summary.head_scores.model_sha256) == {sharp_lab.checkpoint_info().sha256}
    assert summary.best_heads.relation.iloc[0] == ALL
    assert summary.best_heads.null_accuracy.notna().all()
    assert summary.null_checkpoint.name.startswith("random weights")


def test_comparing_a_checkpoint_with_itself_gives_zero_difference(sharp_lab, tiny_lab):
    sentences = read_conllu(SAMPLE_TREEBANK)[:20]
    a = score_treebank(sharp_lab, sentences)
    same = compare_checkpoints(a, a, Settings(resamples=50, min_arcs=5))
    assert (same.difference == 0).all() and (same.ci_low == 0).all() and (same.ci_high == 0).all()
    assert set(same.b_vs_a) == {"indistinguishable"}  # the interval [0, 0] includes 0
    other = compare_checkpoints(a, score_treebank(tiny_lab, sentences), Settings(resamples=50, min_arcs=5))
    assert (other.difference != 0).any()
    assert ((other.ci_low <= other.difference + 1e-9) | other.ci_low.isna()).all()


def test_verdicts_follow_the_interval_of_the_difference():
    from bertviz_lab.conclusions import verdict

    assert verdict(0.01, 0.2, "A", "B").startswith("A is above B") and "excludes 0" in verdict(0.01, 0.2, "A", "B")
    assert verdict(-0.2, -0.01, "A", "B").startswith("A is below B")
    assert verdict(-0.034, 0.002, "left-only", "its control") == (
        "left-only and its control are indistinguishable: the 95% interval of the difference [-0.034, 0.002] "
        "includes 0")
    assert verdict(0.0, 0.5, "A", "B").startswith("A and B are indistinguishable")  # touching 0 is not excluding it
    assert "no interval" in verdict(float("nan"), float("nan"), "A", "B")


def test_null_row_is_the_mean_over_seeds_with_an_interval_over_seeds_and_sentences():
    """Hand-counted: 10 one-arc sentences. Seed A's best head is right on 4 (0.4), seed B's on 8 (0.8).
    The null row is their mean, 0.6; the seeds' spread is 0.4-0.8 and the interval, whose replicates
    each draw a seed and resample the sentences, reaches beyond both. Taking the best over all seeds
    would give 0.8, one seed alone 0.4."""
    sentence = np.arange(10)
    model = table(sentence, ["nsubj"], np.zeros(10, int), np.stack([sentence < 5, sentence < 3], 1))
    seed_a = table(sentence, ["nsubj"], np.zeros(10, int), np.stack([sentence < 4, sentence < 2], 1))
    seed_b = table(sentence, ["nsubj"], np.zeros(10, int), np.stack([sentence < 1, sentence < 8], 1))
    summary = summarise(scores_of(model), [scores_of(seed_a), scores_of(seed_b)],
                        Settings(resamples=400, min_arcs=1, null_seeds=2))
    row = summary.best_heads.set_index("relation").loc["nsubj"]
    assert row.null_accuracy == pytest.approx(0.6)
    assert (row.null_seeds, row.null_seed_min, row.null_seed_max) == (2, pytest.approx(0.4), pytest.approx(0.8))
    assert row.null_best_head == "1-1 dep->head"  # the first seed's best head
    assert row.null_ci_low < 0.4 and row.null_ci_high > 0.8
    assert len(summary.null_checkpoints) == 2


@pytest.mark.parametrize("punct, expected", [("include", 2 / 3), ("exclude", 1.0)])
def test_uuas_counts_punctuation_arcs_only_when_told(punct, expected):
    """Hand-counted: one sentence "cats sleep , dogs" with arcs nsubj, root, punct, obj. Head 1-1's tree
    has the nsubj and obj arcs but not the punct one; the root word has no arc to find. Counting
    punctuation: 2 of 3 arcs; leaving it out: 2 of 2. Every row says which."""
    from bertviz_lab.syntax.statistics import Resampler
    from bertviz_lab.syntax.summary import uuas_table

    tree = np.array([True, False, False, True]).reshape(4, 1, 1)
    arcs = ArcTable(1, 1, np.zeros(4, int), np.array([0, 1, 2, 3]), ["nsubj", "root", "punct", "obj"],
                    np.array([False, True, False, False]), {TREE: tree}, np.zeros((4, 6), bool),
                    np.array([True, False, True, False]))
    frame, best = uuas_table(arcs, Resampler.over(arcs.sentence, 10, 0), punct)
    head = frame[frame.predictor == "head"].iloc[0]
    assert head.uuas == pytest.approx(expected) and head.total == (3 if punct == "include" else 2)
    chain = frame[frame.predictor == "right-branching"].iloc[0]
    assert chain.uuas == pytest.approx(2 / 3 if punct == "include" else 1 / 2)  # it has nsubj and punct
    assert set(frame.punctuation) == {f"{punct}d"}


def test_standing_words_come_from_the_interval():
    from bertviz_lab.conclusions import standing

    assert [standing(0.01, 0.2), standing(-0.2, -0.01), standing(-0.1, 0.1), standing(0.0, 0.1),
            standing(float("nan"), 0.1)] == ["above", "below", "indistinguishable", "indistinguishable", "no interval"]
