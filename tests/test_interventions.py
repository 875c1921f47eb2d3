"""Interventions and their controls, one behaviour per test, with exact expectations."""
import math

import numpy as np
import pytest
import torch

from bertviz_lab.attention import relative_offset_profile
from bertviz_lab.bert import layer_hook
from bertviz_lab.interventions import (
    InterventionError,
    ablation_sweep,
    compare,
    directional_sweep,
    make_intervention,
    parse_heads,
    position_similarity,
)
from bertviz_lab.interventions.edits import directional_bias, random_positions, scaled_sinusoidal, sinusoidal_table
from bertviz_lab.interventions.sweeps import AblationRun
from bertviz_lab.lab import Readout

TEXT = "the big cat [MASK] on the red mat and slept"


def test_strict_left_only_gives_zero_attention_to_later_keys(sharp_lab):
    c = compare(sharp_lab, TEXT, make_intervention("left-only", sinks="strict"))
    a = c.intervened.attention  # (layers, heads, query, key)
    later = np.triu(np.ones(a.shape[-2:], dtype=bool), k=1)
    assert np.all(a[..., later] == 0.0)
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)


def test_strict_right_only_gives_zero_attention_to_earlier_keys(sharp_lab):
    right = compare(sharp_lab, TEXT, make_intervention("right-only", sinks="strict")).intervened.attention
    assert np.all(right[..., np.tril(np.ones(right.shape[-2:], dtype=bool), k=-1)] == 0.0)
    np.testing.assert_allclose(right.sum(-1), 1.0, atol=1e-5)


def test_left_only_changes_every_head(sharp_lab):
    c = compare(sharp_lab, TEXT, make_intervention("left-only", sinks="strict"))
    assert float(c.js.min()) > 0.0  # (layers, heads): no head keeps its pattern


def test_symmetric_sinks_by_hand():
    # [CLS] a b c [SEP]: a query sees its side plus both sinks; a sink sees only itself
    from bertviz_lab.interventions.kinds import LeftOnly, RightOnly

    tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    left = LeftOnly().allowed(tokens).int().tolist()
    assert left == [[1, 0, 0, 0, 0],
                    [1, 1, 0, 0, 1],
                    [1, 1, 1, 0, 1],
                    [1, 1, 1, 1, 1],
                    [0, 0, 0, 0, 1]]
    right = RightOnly().allowed(tokens).int().tolist()
    assert right == [[1, 0, 0, 0, 0],
                     [1, 1, 1, 1, 1],
                     [1, 0, 1, 1, 1],
                     [1, 0, 0, 1, 1],
                     [0, 0, 0, 0, 1]]


def test_matched_control_hides_as_many_random_keys(sharp_lab):
    from bertviz_lab.interventions.kinds import LeftOnly, LeftOnlyControl

    tokens = sharp_lab.encode(TEXT).tokens
    direction = LeftOnly().allowed(tokens)
    control = LeftOnlyControl(seed=3)
    bias = control.inputs(sharp_lab.model, tokens).attention_bias[0, 0]
    hidden = bias < 0  # (query, key)
    assert hidden.sum(1).tolist() == (~direction).sum(1).tolist()  # same count per query
    words = slice(1, len(tokens) - 1)
    assert torch.equal(hidden[[0, -1]], ~direction[[0, -1]])  # sink queries: as in the directional mask
    assert not hidden[words][:, [0, len(tokens) - 1]].any() and not hidden.diagonal().any()  # sinks and self stay
    assert not torch.equal(hidden, ~direction)  # random, not the directional mask


def test_matched_control_hides_other_keys_and_treats_sinks_alike_with_strict_masks():
    """Hand-counted: [CLS] a b c d [SEP], strict left-only. Query b (2) hides c, d and [SEP]: one sink
    and two other keys. Its control hides one sink, drawn from those the mask keeps ([CLS]), and two
    other keys, first those the mask keeps (a; b itself never), then one of c, d. The old control drew
    among non-sinks only: it never hid a sink, and could hide exactly c and d (the mask itself)."""
    from bertviz_lab.interventions.edits import directional_allowed, matched_random_allowed

    allowed = directional_allowed(6, "left-only")  # strict: no sinks kept open
    for seed in range(8):
        control = matched_random_allowed(allowed, [0, 5], seed)
        hidden, intervention_hidden = ~control, ~allowed
        assert hidden.sum(1).tolist() == intervention_hidden.sum(1).tolist()  # as many keys per query
        assert hidden[1:5][:, [0, 5]].sum(1).tolist() == intervention_hidden[1:5][:, [0, 5]].sum(1).tolist()  # as many sinks
        assert torch.equal(hidden[[0, 5]], intervention_hidden[[0, 5]]) and not hidden.diagonal().any()
        row = set(torch.nonzero(hidden[2]).flatten().tolist())
        assert {0, 1} <= row and len(row & {3, 4}) == 1 and 5 not in row  # b: [CLS], a, and one of c, d
        # a keeps no other key but itself: its three non-sink keys come from those the mask hides
        assert set(torch.nonzero(hidden[1]).flatten().tolist()) == {0, 2, 3, 4}


def test_word_shuffle_keeps_pieces_together():
    from bertviz_lab.interventions.kinds import ShuffleWords

    tokens = ["[CLS]", "it", "was", "un", "##bel", "##ie", "##va", "##bly", "good", "[SEP]"]
    for seed in range(5):
        order = ShuffleWords(seed=seed).inputs(None, tokens).token_order
        shown = [tokens[i] for i in order]
        start = shown.index("un")
        assert shown[start:start + 5] == ["un", "##bel", "##ie", "##va", "##bly"]
        assert shown[0] == "[CLS]" and shown[-1] == "[SEP]"


def test_word_shuffle_uses_the_tokenizers_words_for_pieces_without_hashes():
    """RoBERTa-style pieces carry no ##: "Ġun bel iev ably" is one word by its word ids. With the ids
    the four pieces move together; read by ## marks they would be four words."""
    from bertviz_lab.interventions.kinds import ShuffleWords

    tokens = ["[CLS]", "Ġit", "Ġwas", "Ġun", "bel", "iev", "ably", "Ġgood", "[SEP]"]
    word_ids = [None, 0, 1, 2, 2, 2, 2, 3, None]
    for seed in range(6):
        order = ShuffleWords(seed=seed).inputs_for(None, tokens, word_ids).token_order
        shown = [tokens[i] for i in order]
        start = shown.index("Ġun")
        assert shown[start:start + 4] == ["Ġun", "bel", "iev", "ably"] and shown[0] == "[CLS]" and shown[-1] == "[SEP]"
    by_marks = [ShuffleWords(seed=s).inputs(None, tokens).token_order for s in range(6)]
    assert any([tokens[i] for i in o].index("bel") != [tokens[i] for i in o].index("Ġun") + 1 for o in by_marks)


def test_word_labels_drop_the_word_start_marks():
    from bertviz_lab.attention import word_groups

    groups, labels = word_groups(["[CLS]", "Ġun", "bel", "ievable", "Ġcat", "[SEP]"], [None, 0, 0, 0, 1, None])
    assert groups == [[0], [1, 2, 3], [4], [5]] and labels == ["[CLS]", "unbelievable", "cat", "[SEP]"]


def test_token_shuffle_separates_pieces():
    from bertviz_lab.interventions.kinds import ShuffleWords

    tokens = ["[CLS]", "it", "was", "un", "##bel", "##ie", "##va", "##bly", "good", "[SEP]"]
    pieces = [ShuffleWords(seed=s, unit="tokens").inputs(None, tokens).token_order for s in range(5)]
    assert any([tokens[i] for i in o].index("##bel") != [tokens[i] for i in o].index("un") + 1 for o in pieces)


def test_hidden_key_gets_zero_attention_from_every_query(sharp_lab):
    c = compare(sharp_lab, TEXT, make_intervention("hide-keys", positions=[2, 5]))
    assert np.all(c.intervened.attention[..., [2, 5]] == 0.0)
    assert c.intervened.tokens == c.baseline.tokens  # the tokens stay in the input
    np.testing.assert_allclose(c.intervened.attention.sum(-1), 1.0, atol=1e-5)


def test_ablated_head_context_is_zero_and_the_others_unchanged(sharp_lab):
    lab = sharp_lab
    enc = lab.encode(TEXT)
    tensors = lab.batch_tensors([enc])
    inputs = make_intervention("ablate-heads", heads=[(1, 2)]).inputs(lab.model, enc.tokens)
    names = [layer_hook(1, "context"), layer_hook(0, "context"), layer_hook(1, "pattern")]
    _, base = lab.run(tensors, capture=names)
    _, edited = lab.run(tensors, capture=names, edits=inputs.edits)
    ctx = edited[layer_hook(1, "context")]
    assert ctx[:, 2].abs().max().item() == 0.0
    assert torch.equal(ctx[:, [0, 1, 3]], base[layer_hook(1, "context")][:, [0, 1, 3]])
    assert torch.equal(edited[layer_hook(0, "context")], base[layer_hook(0, "context")])


def test_parse_heads_is_one_based_and_checks_range():
    assert parse_heads("2-3, 1-1", 2, 4) == [(1, 2), (0, 0)]
    with pytest.raises(InterventionError, match="does not exist"):
        parse_heads("3-1", 2, 4)


def test_zeroed_positions_make_the_model_permutation_equivariant(sharp_lab):
    lab = sharp_lab
    enc = lab.encode("the big cat sat on the red mat")
    ids = torch.tensor([enc.ids])
    n = len(enc.ids)
    middle = torch.randperm(n - 2, generator=torch.Generator().manual_seed(0)) + 1
    perm = torch.cat([torch.tensor([0]), middle, torch.tensor([n - 1])])  # [CLS] first, [SEP] last
    zero = {"bert.embeddings.hook_position": lambda x, _: torch.zeros_like(x)}
    out, cache = lab.run({"input_ids": ids}, capture=["*hook_pattern"], edits=zero)
    out_p, cache_p = lab.run({"input_ids": ids[:, perm]}, capture=["*hook_pattern"], edits=zero)
    torch.testing.assert_close(out_p.last_hidden_state[0], out.last_hidden_state[0][perm], atol=1e-5, rtol=1e-5)
    a, a_p = lab.attention_of(cache)[0], lab.attention_of(cache_p)[0]
    torch.testing.assert_close(a_p, a[..., perm, :][..., :, perm], atol=1e-6, rtol=1e-5)
    # with the learned positions it is not equivariant
    out2, _ = lab.run({"input_ids": ids}, capture=())
    out2_p, _ = lab.run({"input_ids": ids[:, perm]}, capture=())
    assert (out2_p.last_hidden_state[0] - out2.last_hidden_state[0][perm]).abs().max() > 1e-2


def test_sinusoidal_values_match_the_formula():
    table = sinusoidal_table(50, 32)
    for pos, i in [(0, 0), (3, 1), (17, 5), (49, 15)]:
        angle = pos / 10000 ** (2 * i / 32)
        assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_positional_intervention_and_control_keep_each_rows_norm(sharp_lab):
    scaled = scaled_sinusoidal(sharp_lab.model, 64)
    learned = sharp_lab.model.bert.embeddings.position_embeddings.weight[:64].detach()
    control = random_positions(sharp_lab.model, 64, seed=0)
    # probe and control replace each row by a vector of that row's learned norm, position 0 included
    torch.testing.assert_close(scaled.norm(dim=1), learned.norm(dim=1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(control.norm(dim=1), learned.norm(dim=1), rtol=1e-5, atol=1e-6)


def test_position_similarity_is_cosine_with_unit_diagonal(sharp_lab):
    learned_sim, sin_sim = position_similarity(sharp_lab, 20)
    assert learned_sim.shape == sin_sim.shape == (20, 20)
    np.testing.assert_allclose(np.diag(sin_sim), 1.0, atol=1e-5)


def test_position_interventions_change_attention_and_map_back(sharp_lab):
    kinds = [("zero-positions", {}), ("shuffle-positions", {"seed": 3}), ("shift-positions", {"shift": 20}),
             ("sinusoidal-positions", {}), ("shuffle-words", {"seed": 1})]
    for intervention in (make_intervention(kind, **options) for kind, options in kinds):
        c = compare(sharp_lab, TEXT, intervention)
        assert c.intervened.tokens == c.baseline.tokens
        assert float(c.js.max()) > 1e-3, intervention.kind
        assert c.offsets_before.shape == (2, 4, 11)


def test_shift_beyond_the_position_table_is_refused(sharp_lab):
    with pytest.raises(InterventionError, match="shift"):
        compare(sharp_lab, TEXT, make_intervention("shift-positions", shift=60))


def test_shuffled_words_are_mapped_back_to_the_original_order(sharp_lab):
    c = compare(sharp_lab, TEXT, make_intervention("shuffle-words", seed=2))
    inputs = make_intervention("shuffle-words", seed=2).inputs(sharp_lab.model, c.baseline.tokens)
    order = inputs.token_order
    assert sorted(order) == list(range(len(order))) and order != list(range(len(order)))
    shuffled_ids = torch.tensor([[c.baseline.token_ids[i] for i in order]])
    _, cache = sharp_lab.run({"input_ids": shuffled_ids})
    raw = sharp_lab.attention_of(cache)[0].numpy()
    # attention between slots i, j of the shuffled input is between original tokens order[i], order[j]
    np.testing.assert_allclose(c.intervened.attention[..., order[1], order[2]], raw[..., 1, 2], atol=1e-6)


def test_offset_profile_by_hand():
    a = np.zeros((1, 1, 6, 6), dtype=np.float32)
    for q in range(6):
        a[0, 0, q, max(q - 1, 0)] = 1.0  # previous-token head
    prof = relative_offset_profile(a)
    assert prof[0, 0, 4] == pytest.approx(1.0)  # offset -1: every query with a previous token
    assert prof[0, 0, 5] == pytest.approx(1 / 6)  # offset 0: only the first token attends to itself


def test_ablation_sweep_batched_equals_one_at_a_time(sharp_lab):
    batched = ablation_sweep(sharp_lab, TEXT).drops
    single = ablation_sweep(sharp_lab, TEXT, run=AblationRun(batched=False)).drops
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_ablation_sweep_scores_top1_at_a_typed_mask_and_gold_at_a_picked_one(sharp_lab):
    assert ablation_sweep(sharp_lab, TEXT).scored == "top-1"  # a typed [MASK]: no gold word to score
    assert ablation_sweep(sharp_lab, "the cat sat on the mat", mask_positions=[2]).scored == "gold"


def test_ablation_sweep_matches_a_direct_ablation(sharp_lab):
    batched = ablation_sweep(sharp_lab, TEXT).drops  # (layers, heads)
    base = sharp_lab.analyze_encoded(sharp_lab.encode(TEXT), TEXT, Readout(keep_probabilities=True))
    top = base.mlm[0].predictions[0]
    ablated = compare(sharp_lab, TEXT, make_intervention("ablate-heads", heads=[(1, 3)]))
    expected = math.log(top.probability) - math.log(ablated.changes[0].intervened_probability)
    assert batched[1, 3] == pytest.approx(expected, abs=1e-4)


def test_directional_sweep_matches_directional_interventions(sharp_lab):
    rows = directional_sweep(sharp_lab, TEXT)
    assert [r.position for r in rows] == [4]
    left = compare(sharp_lab, TEXT, make_intervention("left-only")).changes[0]
    right = compare(sharp_lab, TEXT, make_intervention("right-only")).changes[0]
    assert rows[0].left_only == pytest.approx(left.intervened_probability, rel=1e-5)
    assert rows[0].right_only == pytest.approx(right.intervened_probability, rel=1e-5)
    assert rows[0].both == pytest.approx(left.baseline_probability, rel=1e-6)


def test_directional_sweep_needs_a_mask(sharp_lab):
    with pytest.raises(Exception, match="mask at least one"):
        directional_sweep(sharp_lab, "the cat sat")


def test_mask_intervention_baseline_is_a_plain_analyze_on_the_embedded_model(minilm_lab):
    text = "The quick brown fox jumps over the lazy dog."
    c = compare(minilm_lab, text, make_intervention("mask-tokens", positions=[4]))
    plain = minilm_lab.analyze(text)
    np.testing.assert_array_equal(c.baseline.attention, plain.attention)
    assert c.intervened.tokens[4] == "[MASK]" and c.baseline.tokens[4] == "fox"
    assert float(c.js.max()) > 0  # the input changed, so some head's pattern does


def test_left_only_bias_blocks_later_keys_by_hand():
    dir_bias = directional_bias(3, "left-only")  # (1, 1, query, key)
    assert dir_bias[0, 0, 0, 1] == torch.finfo(torch.float32).min and dir_bias[0, 0, 1, 0] == 0


def test_patching_by_construction(sharp_lab):
    from bertviz_lab.interventions.sweeps import patching_sweep

    target, source = "the big cat [MASK] on the red mat", "the big dog [MASK] on the red mat"
    same = patching_sweep(sharp_lab, target, target, "the", "mat")
    assert np.abs(same.heads).max() < 1e-5 and np.abs(same.residual).max() < 1e-5  # from itself: nothing changes
    p = patching_sweep(sharp_lab, target, source, "the", "mat")
    # the last layer's residual stream at the [MASK] is all the MLM head reads: patching it gives the source's value
    assert p.residual[-1] == pytest.approx(p.donor - p.baseline, abs=1e-4)
    assert np.abs(p.heads).max() > 1e-4


def test_patching_needs_inputs_of_one_length(sharp_lab):
    from bertviz_lab import InputError
    from bertviz_lab.interventions.sweeps import patching_sweep

    target = "the big cat [MASK] on the red mat"
    with pytest.raises(InputError, match="same number of tokens"):
        patching_sweep(sharp_lab, target, "a [MASK] b", "the", "mat")


def test_patching_blames_only_the_word_that_is_not_one_token(sharp_lab):
    from bertviz_lab import InputError
    from bertviz_lab.interventions.sweeps import patching_sweep

    target = "the big cat [MASK] on the red mat"
    with pytest.raises(InputError) as raised:
        patching_sweep(sharp_lab, target, target, "the", "zzqx")
    said = str(raised.value)
    assert "the wrong word 'zzqx' is not one token" in said and "'the'" not in said, said


def test_mean_ablation_paths_agree(sharp_lab):
    from bertviz_lab.interventions.sweeps import ablation_drops, mean_head_outputs

    reference = mean_head_outputs(sharp_lab, ["the red mat was big", "a cat sat"])  # (layers, heads, d_head)
    enc = sharp_lab.encode(TEXT)
    position = enc.tokens.index("[MASK]")
    target = [sharp_lab.tokenizer.token_to_id("the")]
    mean = ablation_drops(sharp_lab, enc, [position], target, reference)
    as_resample = ablation_drops(sharp_lab, enc, [position], target,
                                 reference[:, :, None, :].expand(-1, -1, len(enc.ids), -1))
    np.testing.assert_allclose(mean, as_resample, atol=1e-5)
    single = compare(sharp_lab, TEXT, make_intervention("ablate-heads", heads=[(1, 2)], mode="mean",
                                                        reference=reference))
    logp = np.log(single.intervened.mlm_probabilities[0, target[0]]) - np.log(single.baseline.mlm_probabilities[0, target[0]])
    assert -logp == pytest.approx(mean[1, 2], abs=1e-4)  # the typed intervention equals the batched sweep


def test_sets_carry_intervals():
    from bertviz_lab.interventions.sets import mean_interval

    constant = mean_interval(np.ones((12, 3)) * 0.5)
    assert np.all(constant.ci_low == 0.5) and np.all(constant.ci_high == 0.5) and constant.n == 12
    varied = mean_interval(np.arange(20.0))
    assert varied.ci_low < 9.5 < varied.ci_high


def test_directional_set_matches_single_runs(sharp_lab):
    from bertviz_lab.interventions.sets import SetSettings, directional_set
    from bertviz_lab.sentences import masked_items

    lines = ["the big cat sat on the red mat", "a small dog ran to the park"]
    result = directional_set(sharp_lab, lines, settings=SetSettings(resamples=20))
    effects = result.effects
    assert effects["both"].n == 2
    both = []
    for enc, position, gold in masked_items(sharp_lab, lines, 0, None):
        a = sharp_lab.analyze_encoded(enc, readout=Readout(keep_probabilities=True))
        both.append(a.mlm_probabilities[[p.position for p in a.mlm].index(position), gold])
    assert float(effects["both"].mean) == pytest.approx(float(np.mean(both)), rel=1e-4)
    # the paired differences the directional claims rest on, each with the sentence its interval supports
    left = result.differences[0]
    assert (left.a, left.b) == ("left-only", "left-only-control")
    assert float(left.effect.mean) == pytest.approx(float(effects["left-only"].mean - effects["left-only-control"].mean))
    low, high = float(left.effect.ci_low), float(left.effect.ci_high)
    assert ("indistinguishable" in left.verdict()) == (low <= 0 <= high)
    out = result.to_json()["differences"][0]
    assert set(out) == {"a", "b", "difference", "difference_ci", "n", "verdict"} and out["difference_ci"] == [low, high]


def test_most_important_head_is_chosen_on_one_half_and_measured_on_the_other():
    """Hand-counted: 6 sentences, heads (1, 2). Head 1-1 drops 1.0 on the three selection sentences and
    0.0 on the others; head 1-2 drops 0.5 everywhere. The head is chosen on the selection half (1-1,
    mean 1.0 against 0.5) and its reported drop is measured on the other half: 0.0 [0.0, 0.0]. Picking
    and measuring on all sentences would quote 1-2 at 0.5, or 1-1 at 0.5 in sample."""
    from bertviz_lab.interventions.sets import heldout_best_head

    order = np.random.default_rng(4).permutation(6)
    select = order[:3]
    values = np.full((6, 1, 2), 0.5)
    values[:, 0, 0] = 0.0
    values[select, 0, 0] = 1.0
    best = heldout_best_head(values, resamples=50, seed=4)
    assert (best.layer, best.head, best.selected_on, best.effect.n) == (0, 0, 3, 3)
    assert float(best.effect.mean) == 0.0 and float(best.effect.ci_low) == float(best.effect.ci_high) == 0.0
    assert best.to_json()["head"] == "1-1"
    assert heldout_best_head(values[:1]) is None



def test_resample_draws_an_aligned_sentence_at_least_as_long(sharp_lab):
    """Hand-counted: the input "the cat sat" is 5 tokens ([CLS] the cat sat [SEP]). Of the pool, "a dog"
    (4 tokens) is too short and the input itself is never drawn, so every draw comes from the 9-token
    sentence: positions 0-3 from its positions 0-3 and the input's [SEP] (4) from its [SEP] (8). The old
    reading wrapped a shorter sentence (position i -> i mod its length)."""
    from bertviz_lab.interventions.resample import ResamplePool
    from bertviz_lab.interventions.sweeps import head_outputs

    long = "the big dog sat on the mat"
    pool = ResamplePool(sharp_lab, ["a dog", "the cat sat", long], seed=1)
    enc = sharp_lab.encode("the cat sat")
    assert len(enc.ids) == 5 and len(sharp_lab.encode(long).ids) == 9
    source = head_outputs(sharp_lab, sharp_lab.encode(long))  # (layers, heads, 9, d_head)
    for draw in range(4):
        assert pool.text_of(enc.ids, draw) == long
        torch.testing.assert_close(pool.draw(enc.ids, draw), source[:, :, [0, 1, 2, 3, 8]])


def test_resample_without_a_long_enough_sentence_is_refused(sharp_lab):
    from bertviz_lab import InputError
    from bertviz_lab.interventions.resample import ResamplePool

    pool = ResamplePool(sharp_lab, ["a dog", "one two"])
    with pytest.raises(InputError, match="at least 5 tokens.*longest in the pool has 4"):
        pool.draw(sharp_lab.encode("the cat sat").ids)


def test_replacement_outputs_never_wrap():
    from bertviz_lab.interventions.edits import replacement_context

    with pytest.raises(ValueError, match="nothing wraps"):
        replacement_context(torch.zeros(2, 4, 3), 5)  # (heads, positions, d_head) for a 5-token input
    assert replacement_context(torch.zeros(2, 3), 5).shape == (2, 5, 3)  # a mean output: every position


def test_resample_ablation_of_one_head_equals_patching_in_the_drawn_outputs(sharp_lab):
    from bertviz_lab.interventions.resample import ResamplePool

    enc = sharp_lab.encode(TEXT)
    pool = ResamplePool(sharp_lab, ["the big dog sat on the red mat and then it slept well",
                                    "a small bird flew over the old house and sang a song"], seed=0)
    drawn = pool.draw(enc.ids)  # (layers, heads, n, d_head)
    via_pool = compare(sharp_lab, TEXT, make_intervention("ablate-heads", heads=[(0, 2)], mode="resample",
                                                          reference=pool))
    via_tensor = compare(sharp_lab, TEXT, make_intervention("ablate-heads", heads=[(0, 2)], mode="resample",
                                                            reference=drawn))
    np.testing.assert_allclose(via_pool.intervened.attention, via_tensor.intervened.attention, atol=1e-6)
    assert float(via_pool.js[1].max()) > 0  # layer 2 sees layer 1 head 3 output replaced


def test_an_ablation_set_draws_again_for_each_sentence(sharp_lab):
    from bertviz_lab.interventions.resample import ResamplePool, reference_for

    pool = ResamplePool(sharp_lab, [f"sentence number {w} is long enough for the inputs here" for w in
                                    ("one", "two", "three", "four", "five", "six")], seed=3)
    enc = sharp_lab.encode("the cat sat on the mat")
    texts = {pool.text_of(enc.ids, draw) for draw in range(6)}
    assert len(texts) > 1  # seeded draws per sentence, not one fixed other input
    torch.testing.assert_close(reference_for(pool, enc, draw=2), pool.draw(enc.ids, 2))


def test_sets_report_how_many_lines_were_cut(sharp_lab):
    from bertviz_lab.interventions.sets import SetSettings, directional_set
    from bertviz_lab.sentences import SET_MAX_TOKENS, masked_items, truncated_count, truncation_note

    cut = min(SET_MAX_TOKENS, sharp_lab.max_tokens)
    long = " ".join(["the big cat sat on the red mat"] * 40)  # far over the cut
    lines = [long, "a small dog ran to the park"]
    items = masked_items(sharp_lab, lines, 0, None)
    assert len(items[0][0].ids) == cut and items[0][0].n_tokens_before_truncation > cut
    assert truncated_count(items) == 1
    assert directional_set(sharp_lab, lines, settings=SetSettings(resamples=10)).to_json()["truncated_lines"] == 1
    assert truncation_note(1) == "1 line was longer than 128 tokens and cut to the first 128"
    assert truncation_note(0) == ""


def test_intervention_and_control_are_compared_sentence_by_sentence(sharp_lab):
    """The same intervention as probe and control: every paired difference is exactly 0 and the tool
    says so; the sinusoidal probe against its random control gives a difference equal to the
    difference of the two means (paired over the same sentences)."""
    from bertviz_lab.interventions.sets import SetSettings, intervention_and_control

    lines = ["the big cat sat on the red mat", "a small dog ran to the park", "the red bird sat on a big tree"]
    same = intervention_and_control(sharp_lab, lines, make_intervention("left-only"), make_intervention("left-only"),
                                    SetSettings(resamples=50))
    for d in same.differences:
        assert float(d.effect.mean) == 0 and float(d.effect.ci_low) == 0 == float(d.effect.ci_high)
        assert "indistinguishable" in d.verdict()
    pc = intervention_and_control(sharp_lab, lines, make_intervention("sinusoidal-positions"),
                           make_intervention("random-positions"), SetSettings(resamples=50))
    change = pc.differences[1]
    assert float(change.effect.mean) == pytest.approx(float(pc.intervention.effects["change in P(gold)"].mean) -
                                                      float(pc.control.effects["change in P(gold)"].mean))
    assert set(pc.to_json()) == {"intervention", "control", "differences"}
