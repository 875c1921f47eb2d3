"""The position-scheme twins (mlm/twins.py, bert/loading/twin_checkpoints.py): trained alike, loaded by name, and the twin
without positions blind to word order. Tiny twins on a tiny corpus the test writes (no data/ at test time)."""
from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from bertviz_lab.lab import load
from bertviz_lab.mlm.twins import (
    SCHEMES,
    Leg,
    TwinRecipe,
    build_twins,
    export_twins,
    packed_blocks,
    shared_words,
    train_twins,
)

WORDS = "the teacher said that a student who reads every evening will pass the exam in spring".split()


@pytest.fixture(scope="module")
def words_and_tokenizer():
    return shared_words()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    rng = random.Random(0)
    sentence = lambda: " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))) + "."  # noqa: E731
    with open(folder / "train_docs.jsonl", "w") as handle:
        for d in range(12):
            handle.write(json.dumps({"origin": "test", "document": f"d{d}", "sentences": [sentence() for _ in range(8)]}) + "\n")
    (folder / "validation_docs.txt").write_text("\n\n".join("\n".join(sentence() for _ in range(8)) for _ in range(3)))
    return folder


def tiny(corpus: Path, **changes) -> TwinRecipe:
    return replace(TwinRecipe(corpus=str(corpus), hidden=16, layers=2, heads=2, ffn=32, length=32, batch=4, steps=4,
                              eval_every=2, validation_blocks=4), **changes)


def quiet(_line: str) -> None:
    pass


def test_blocks_run_across_sentences_between_cls_and_sep(words_and_tokenizer):
    _, tokenizer = words_and_tokenizer
    document = ["the cat sat .", "a dog ran home ."]  # 4 + 5 WordPieces
    blocks = packed_blocks(tokenizer, [document], length=8)  # 6 WordPieces between [CLS] and [SEP]
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    pieces = [tokenizer.token_to_id(t) for t in ["the", "cat", "sat", ".", "a", "dog", "ran", "home", "."]]
    # the last 3 fill half a block: kept, padded after [SEP]
    assert blocks.tolist() == [[cls_id, *pieces[:6], sep_id], [cls_id, *pieces[6:], sep_id, 0, 0, 0]]
    # 8 between [CLS] and [SEP]: the one left over is under half a block, dropped
    assert packed_blocks(tokenizer, [document], length=10).tolist() == [[cls_id, *pieces[:8], sep_id]]


def test_the_twins_start_equal_in_everything_but_positions(corpus, words_and_tokenizer):
    words, _ = words_and_tokenizer
    twins = build_twins(tiny(corpus), words)
    reference = twins["none"].state_dict()
    for scheme, model in twins.items():
        state = model.state_dict()
        own = sorted(set(state) - set(reference))
        assert all(torch.equal(state[k], reference[k]) for k in reference), scheme
        expected = {"learned": ["bert.embeddings.position_embeddings.weight"],
                    "relative": ["bert.encoder.relative_attention_bias.weight"]}.get(scheme, own)
        assert own == expected, (scheme, own)
    assert any("rel_embeddings" in k for k in twins["disentangled"].state_dict())


def test_a_chain_of_legs_equals_one_run(corpus, words_and_tokenizer, tmp_path):
    words, tokenizer = words_and_tokenizer
    recipe = tiny(corpus, steps=3)
    train_twins(tmp_path / "one", recipe, (words, tokenizer), say=quiet)
    legs = 0
    while True:  # legs of "0 minutes": each ends after one step
        legs += 1
        run = train_twins(tmp_path / "chain", recipe, (words, tokenizer), Leg(resume=legs > 1, minutes=0), say=quiet)
        if run.step == recipe.steps:
            break
    assert legs == recipe.steps and [leg["to_step"] for leg in run.legs] == [1, 2, 3]
    one = export_twins(tmp_path / "one", tmp_path / "one-export", recipe, words)
    chain = export_twins(tmp_path / "chain", tmp_path / "chain-export", recipe, words)
    assert one.keys() == chain.keys() == {f"twin-{s}.safetensors" for s in SCHEMES}
    for name in one:
        with safe_open(tmp_path / "one-export" / name, "pt") as a, safe_open(tmp_path / "chain-export" / name, "pt") as b:
            assert a.metadata() == b.metadata() and sorted(a.keys()) == sorted(b.keys())
            assert all(torch.equal(a.get_tensor(k), b.get_tensor(k)) for k in a.keys()), name


@pytest.fixture(scope="module")
def exported(corpus, words_and_tokenizer, tmp_path_factory) -> Path:
    words, tokenizer = words_and_tokenizer
    folder = tmp_path_factory.mktemp("twins")
    recipe = tiny(corpus, steps=2)
    train_twins(folder / "run", recipe, (words, tokenizer), say=quiet)
    export_twins(folder / "run", folder / "export", recipe, words)
    return folder / "export"


def test_each_twin_loads_by_name_and_names_its_scheme(exported, monkeypatch):
    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    for scheme in SCHEMES:
        lab = load(f"twin-{scheme}", device="cpu")
        assert lab.model.config.positions == (scheme,) and f"twin-{scheme}" in lab.name
        assert lab.analyze("the cat sat on the [MASK] .").mlm  # a Run works end to end, with masked-word predictions
    with pytest.raises(ValueError, match="no such twin .*twins there: twin-learned, twin-sinusoidal"):
        load("twin-wavelet", device="cpu")


def test_the_twin_without_positions_predicts_the_same_for_any_order(exported, monkeypatch):
    """Its predictions at [MASK] are invariant to any permutation of the other tokens ([CLS] and [SEP] included);
    the learned twin's move."""
    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    rng = random.Random(0)
    for scheme, invariant in (("none", True), ("learned", False)):
        lab = load(f"twin-{scheme}", device="cpu")
        ids = lab.tokenizer.encode("the teacher said that a student [MASK] every evening").ids
        at = ids.index(lab.mask_id)
        moved = 0.0
        for _ in range(5):
            others = [i for i in range(len(ids)) if i != at]
            order = others[:]
            rng.shuffle(order)
            permuted = list(ids)
            for src, dst in zip(others, order):
                permuted[dst] = ids[src]
            with torch.no_grad():
                a = lab.model(torch.tensor([ids]), mlm_positions=torch.tensor([[i == at for i in range(len(ids))]])).mlm_logits
                b = lab.model(torch.tensor([permuted]), mlm_positions=torch.tensor([[i == at for i in range(len(ids))]])).mlm_logits
            moved = max(moved, (a - b).abs().max().item())
            if invariant:
                assert torch.equal(a.topk(5).indices, b.topk(5).indices)
        assert (moved < 1e-4) == invariant, (scheme, moved)


def test_shuffling_moves_only_the_unmasked_words_and_the_twin_without_positions_does_not_notice(exported, monkeypatch):
    from bertviz_lab.mlm.objective import IGNORE
    from bertviz_lab.mlm.twin_measures import masked_blocks, order_sensitivity, shuffled_others

    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    lab = load("twin-none", device="cpu")
    document = [" ".join(WORDS)] * 6
    blocks = packed_blocks(lab.tokenizer, [document], 32)
    inputs, labels = masked_blocks(lab, blocks, seed=0)
    shuffled = shuffled_others(inputs, labels, seed=0)
    fixed = (labels != IGNORE) | (inputs == 0)
    fixed[:, 0] = True
    fixed[torch.arange(len(inputs)), (inputs != 0).sum(1) - 1] = True
    assert torch.equal(shuffled[fixed], inputs[fixed])  # [CLS], [SEP], padding and masked positions stay
    assert not torch.equal(shuffled, inputs)
    assert sorted(shuffled[0].tolist()) == sorted(inputs[0].tolist())  # the same words, in another order
    change = order_sensitivity(lab, blocks)["loss_change"]
    assert abs(change["value"]) < 1e-4 and change["n"] == len(blocks)


def test_a_learned_table_says_which_position_it_cannot_reach(exported, monkeypatch):
    from bertviz_lab.mlm.twin_measures import masked_accuracy

    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    lab = load("twin-learned", device="cpu")
    blocks = packed_blocks(lab.tokenizer, [[" ".join(WORDS)] * 12], 64)  # the tiny twins were trained at 32
    assert masked_accuracy(lab, blocks)["not_measured"].startswith("cannot reach position 33: its learned position "
                                                                   "table has 32 rows")
    assert "top1" in masked_accuracy(load("twin-rotary", device="cpu"), blocks)


def test_ratio_intervals_resample_whole_blocks():
    from bertviz_lab.mlm.twin_measures import ratio_interval

    rate = ratio_interval([3, 0, 1], [4, 4, 2])
    assert rate.value == pytest.approx(0.4) and rate.n == 10 and 0.0 <= rate.low < 0.4 < rate.high <= 0.75


def test_the_twins_are_among_the_shipped_models_the_page_lists(exported, monkeypatch):
    from bertviz_lab.bert.loading.checkpoints import shipped_checkpoints

    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    assert shipped_checkpoints()[3:] == [f"twin-{s}" for s in SCHEMES]
    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported.parent / "nowhere"))
    assert shipped_checkpoints() == ["default", "minilm-original", "sst2"]


def test_the_page_lists_only_the_interventions_of_a_twins_scheme(exported, monkeypatch):
    from bertviz_lab.app.interventions_tab import intervention_choices

    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    listed = {scheme: {kind for _, kind in intervention_choices(load(f"twin-{scheme}", device="cpu"))}
              for scheme in ("sinusoidal", "rotary", "relative", "disentangled", "none")}
    assert {"zero-positions", "sinusoidal-positions"} <= listed["sinusoidal"]
    assert {"rotate-positions", "disable-rotary"} <= listed["rotary"] and "zero-positions" not in listed["rotary"]
    assert "zero-relative-bias" in listed["relative"] and "rotate-positions" not in listed["relative"]
    assert "zero-position-terms" in listed["disentangled"]
    positional = {"zero-positions", "rotate-positions", "zero-relative-bias", "zero-position-terms"}
    assert not listed["none"] & positional and "left-only" in listed["none"]


def test_a_twin_trained_alone_is_the_same_twin_and_merges_into_the_run(corpus, words_and_tokenizer, tmp_path):
    """Each twin's weights depend only on its start and the batches (its dropout is seeded by the step and the twin),
    so a twin whose recipe was corrected can be retrained alone and put back (merge_twins)."""
    from bertviz_lab.mlm.twins import merge_twins

    words, tokenizer = words_and_tokenizer
    recipe = tiny(corpus, steps=3)
    train_twins(tmp_path / "all", recipe, (words, tokenizer), Leg(stop_at=2), say=quiet)
    train_twins(tmp_path / "alone", replace(recipe, schemes=("sinusoidal",)), (words, tokenizer), Leg(stop_at=2),
                say=quiet)
    joint = torch.load(tmp_path / "all" / "checkpoint.pt", weights_only=False)
    alone = torch.load(tmp_path / "alone" / "checkpoint.pt", weights_only=False)
    assert joint["run"]["step"] == alone["run"]["step"] == 2
    for name, value in alone["models"]["sinusoidal"].items():
        assert torch.equal(value, joint["models"]["sinusoidal"][name]), name
    assert merge_twins(tmp_path / "all", tmp_path / "alone", ["sinusoidal"]) == 2
    merged = torch.load(tmp_path / "all" / "checkpoint.pt", weights_only=False)
    assert merged["run"]["legs"][-1]["merged"] == ["sinusoidal"]
    with pytest.raises(ValueError, match="at steps 2 and 3"):
        train_twins(tmp_path / "alone", replace(recipe, schemes=("sinusoidal",)), (words, tokenizer), Leg(resume=True),
                    say=quiet)
        merge_twins(tmp_path / "all", tmp_path / "alone", ["sinusoidal"])


def test_the_model_card_says_what_the_numbers_say():
    """The card's comparisons are generated from the losses and measures it reads, never written by hand."""
    from bertviz_lab.mlm.twin_card import loss_sentence, measures_table, twin_card

    assert loss_sentence({"none": 5.80, "learned": 5.82, "rotary": 4.48, "alibi": 5.70}) == (
        "Final validation loss (nats), clearly below the no-position twin's 5.80: rotary 4.48, alibi 5.70; "
        "within 0.05 nats of it: learned 5.82.")
    measures = {"twins": {"twin-learned": {"top1": {"1x": {"value": 0.2, "ci": [0.1, 0.3]},
                                                    "2x": {"problem": "cannot reach position 129"}},
                                           "order": {"value": 0.5, "ci": [0.4, 0.6]}}}}
    table = measures_table(measures)
    assert "| twin-learned | 0.200 [0.100, 0.300] | cannot reach position 129 | - | 0.500 [0.400, 0.600] | - | - |" \
        in table
    recipe = {**vars(TwinRecipe()), "schemes": ["learned", "none"]}
    record = {"recipe": recipe, "configs": {"learned": {"embedding_size": 384}},
              "history": [{"step": 1200, "loss": {"learned": 5.82, "none": 5.80}}],
              "legs": [{"leg": 1, "from_step": 0, "to_step": 1200, "minutes": 40.0, "command": "c"}]}
    card = twin_card(record, measures, {"twin-learned.safetensors": 6_900_000, "twin-none.safetensors": 6_800_000})
    assert "2 files, 13.7 MB together" in card and "| 1200 | 5.820 | 5.800 |" in card
    assert "within 0.05 nats of it: learned 5.82" in card and "cannot reach position 129" in card


def test_a_start_the_recipe_cannot_have_is_refused_by_name(corpus, words_and_tokenizer):
    words, _ = words_and_tokenizer
    with pytest.raises(ValueError, match="unknown start 'pretrained'; choose from scratch, minilm, distill"):
        build_twins(tiny(corpus, init="pretrained"), words)
    with pytest.raises(ValueError, match="fit only its own size .*not --hidden 16, --layers 2, --heads 2, --ffn 32"):
        build_twins(tiny(corpus, init="minilm"), words)


@pytest.mark.slow
def test_a_twin_started_from_the_embedded_encoder_is_it_without_its_positions(corpus, words_and_tokenizer):
    """At the embedded size, the no-position twin started from `minilm` computes what `default` computes with its
    position table set to zero: the same layers, head and segment table, and an identity projection."""
    words, tokenizer = words_and_tokenizer
    recipe = tiny(corpus, init="minilm", hidden=384, layers=6, heads=12, ffn=1536, schemes=("none", "learned"))
    twins = build_twins(recipe, words)
    default = load("default", device="cpu").model.float().eval()
    with torch.no_grad():
        default.bert.embeddings.position_embeddings.weight.zero_()
    ids = torch.tensor([tokenizer.encode("the teacher said that [MASK] student passed .").ids])
    with torch.no_grad():
        expected = default(ids).mlm_logits  # (1, pos, vocab)
        got = twins["none"].eval()(ids).mlm_logits
    torch.testing.assert_close(got, expected, atol=2e-4, rtol=1e-4)
    # the learned twin's table is its own (BERT's initialisation), not the embedded encoder's 512 rows
    assert twins["learned"].bert.embeddings.position_embeddings.weight.shape == (recipe.length, 384)


def test_a_distilled_twin_is_pulled_toward_the_teacher_and_scored_on_the_gold_word(corpus, words_and_tokenizer):
    """loss = (1 - w) CE + w KL(teacher || twin): with the twin's own distribution as the teacher the KL is 0, and a
    teacher sure of another word adds exactly w times that KL (hand-computed here)."""
    from bertviz_lab.mlm.twins import DISTILL_WEIGHT, mlm_loss_of

    words, _ = words_and_tokenizer
    model = build_twins(tiny(corpus, schemes=("none",)), words)["none"].eval()
    inputs = torch.tensor([[101, 2000, 103, 2003, 102]])
    labels = torch.full_like(inputs, -100)
    labels[0, 2] = 2040
    mask = torch.ones_like(inputs)
    with torch.no_grad():
        own = model(inputs, attention_mask=mask, mlm_positions=labels != -100).mlm_logits.float().log_softmax(-1)
        ce = mlm_loss_of(model, inputs, labels, mask)
        torch.testing.assert_close(mlm_loss_of(model, inputs, labels, mask, own), (1 - DISTILL_WEIGHT) * ce)
        sure = torch.full_like(own, -1e4)
        sure[0, 7] = 0.0  # the teacher puts all its mass on word 7
        kl = -own[0, 7]  # KL(one-hot at 7 || twin) = -log q(7)
        torch.testing.assert_close(mlm_loss_of(model, inputs, labels, mask, sure),
                                   (1 - DISTILL_WEIGHT) * ce + DISTILL_WEIGHT * kl)


def test_the_card_says_where_the_twins_started_from_the_pilot_it_reads():
    """The Initialisation paragraph is the pilot's table and its rule's choice; when the shipped twins started
    elsewhere (trained before the pilot), the card says so rather than claiming the choice."""
    from bertviz_lab.mlm.twin_card import initialisation_text

    effect = {"mean": 5.0, "ci_low": 4.9, "ci_high": 5.1, "n": 200}
    trained_start = {"size": {"hidden": 256, "layers": 4, "heads": 4, "ffn": 1024}, "shipped_mb": 47.6, "fits": True,
                     "mean_loss": effect, "minus_scratch": None, "order_gain": {"learned": effect, "rotary": effect}}
    pilot = {"steps": 200, "schemes": ["learned", "rotary", "none"], "blocks": 200, "rule": "lowest loss.",
             "chosen": "distill", "why": "distill has the lowest mean held-out loss.",
             "starts": {"scratch": trained_start,
                        "minilm": {"size": {"hidden": 384, "layers": 6, "heads": 12, "ffn": 1536},
                                   "shipped_mb": 153.8, "fits": False},
                        "distill": {**trained_start, "minus_scratch": {**effect, "mean": -0.1}}}}
    text = initialisation_text({"init": "scratch"}, pilot)
    assert "| minilm | 384 wide, 6 layers | 153.8 | not trained: too large | - | - | - |" in text
    assert "| distill | 256 wide, 4 layers | 47.6 | 5.000 [4.900, 5.100] | -0.100 [4.900, 5.100] |" in text
    assert "Its choice: **distill**." in text and "a retrain from distill (`train-twins --init distill`)" in text
    assert "started from scratch (BERT's initialisation), as chosen" in initialisation_text(
        {"init": "scratch"}, {**pilot, "chosen": "scratch"})
    assert "not measured for this run" in initialisation_text({}, None)


def test_the_position_inspector_shows_what_each_twins_scheme_is(exported, monkeypatch):
    """The inspector asks the loaded schemes: ALiBi draws each head's slope times the distance, relative buckets
    their learned bias, the sinusoidal twin its table; the twin without positions says it has none (it used to
    answer every one of these with "no disentangled position terms")."""
    import base64

    import numpy as np

    from bertviz_lab.app.position_inspector import inspect_positions
    from bertviz_lab.bert.positions.alibi import alibi_slopes

    def heat(figure) -> np.ndarray:
        z = figure["data"][0]["z"]
        shape = tuple(int(x) for x in z["shape"].split(", "))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.float32).reshape(shape)

    monkeypatch.setenv("BERTVIZ_LAB_TWINS", str(exported))
    found, settings, figure = inspect_positions(load("twin-alibi", device="cpu"), 6)
    assert found.startswith("ALiBi linear distance biases: fixed, not learned") and settings == "6 tokens"
    z = heat(figure)  # (heads, distance 0..5)
    np.testing.assert_allclose(z, -np.array(alibi_slopes(2))[:, None] * np.arange(6)[None], rtol=1e-6)
    found, _, figure = inspect_positions(load("twin-relative", device="cpu"), 4)
    assert found.startswith("relative-position bias buckets:") and figure["data"][0]["x"] == [
        "-3", "-2", "-1", "0", "+1", "+2", "+3"]
    found, _, figure = inspect_positions(load("twin-sinusoidal", device="cpu"), 5)
    assert found.startswith("fixed sinusoidal positions:") and np.allclose(np.diag(heat(figure)), 1.0, atol=1e-6)
    found, _, figure = inspect_positions(load("twin-none", device="cpu"), 5)
    assert found.startswith("This model has no positions") and figure is None
    found, _, _ = inspect_positions(load("twin-learned", device="cpu"), 5)
    assert found.startswith("Cosine similarity of the first 5 positions: the model's learned ones beside sinusoidal")
