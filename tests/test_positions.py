"""The position schemes (bert/positions/), one file each: hand-counted values where a misreading differs, and
what each scheme must and must not change in a forward pass of a small random BertLab."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bertviz_lab.bert import BertConfig, BertLab
from bertviz_lab.bert.encoder.model import init_weights
from bertviz_lab.bert.positions import SCHEMES
from bertviz_lab.bert.positions.alibi import alibi_bias, alibi_slopes
from bertviz_lab.bert.positions.sinusoidal import sinusoidal_table

SMALL = dict(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
EXTRA = {"relative": {"relative_attention_num_buckets": 32},
         "disentangled": {"relative_attention": True, "pos_att_type": ["c2p", "p2c"], "position_buckets": 16,
                          "max_relative_positions": 64, "share_att_key": True},
         "rotary": {"layer_types": ["full_attention"] * 2, "global_rope_theta": 10000.0}}
ONE_SCHEME = ["learned", "sinusoidal", "relative", "disentangled", "rotary", "alibi", "none"]


def model_with(scheme: str, seed: int = 0, std: float = 0.02) -> BertLab:
    cfg = BertConfig.from_dict({**SMALL, **EXTRA.get(scheme, {}), "positions": [scheme], "initializer_range": std})
    return init_weights(BertLab(cfg), seed).eval()


def test_the_one_list_of_schemes_holds_the_seven():
    assert sorted(SCHEMES) == sorted(ONE_SCHEME)


def test_alibi_slopes_as_press_et_al_code_makes_them():
    """8 heads: 2^-1 .. 2^-8. 12 heads (not a power of two): the 8 slopes of 8 heads, then every other slope of
    16 heads (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5); the formula 2^(-8h/12) would give 2^(-2/3) = 0.63 for the first."""
    assert alibi_slopes(8) == pytest.approx([2.0 ** -i for i in range(1, 9)])
    twelve = alibi_slopes(12)
    assert twelve[:8] == pytest.approx([2.0 ** -i for i in range(1, 9)])
    assert twelve[8:] == pytest.approx([2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5, 2.0 ** -3.5])


def test_alibi_bias_is_minus_slope_times_distance_both_ways():
    bias = alibi_bias(torch.arange(3)[None], torch.tensor([0.5, 0.25]), torch.float32)  # (1, heads, q, k)
    assert bias[0, 0].tolist() == [[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5], [-1.0, -0.5, 0.0]]
    assert bias[0, 1, 0, 2].item() == -0.5  # head 2: 0.25 per token


def test_sinusoidal_rows_are_the_seed_formula():
    table = sinusoidal_table(3, 8)
    assert table[1, 0].item() == pytest.approx(math.sin(1.0))
    assert table[1, 1].item() == pytest.approx(math.cos(1.0))
    assert table[2, 2].item() == pytest.approx(math.sin(2 / 10000 ** (2 / 8)))
    assert table[2, 3].item() == pytest.approx(math.cos(2 / 10000 ** (2 / 8)))


@pytest.mark.parametrize("scheme", ONE_SCHEME)
def test_every_scheme_loads_strictly_from_its_own_state_dict(scheme):
    """Sinusoids and ALiBi slopes are fixed, so they are not weights; the learned and relative tables are."""
    model = model_with(scheme)
    state = model.state_dict()
    twin = BertLab(model.config)
    twin.load_state_dict(state, strict=True)
    ids = torch.tensor([[2, 5, 7, 9, 3]])
    assert torch.equal(twin(ids).last_hidden_state, model(ids).last_hidden_state)
    position_weights = {k for k in state if "position_embeddings" in k or "relative_attention_bias" in k
                        or "rel_embeddings" in k}
    expected = {"learned": {"bert.embeddings.position_embeddings.weight"},
                "relative": {"bert.encoder.relative_attention_bias.weight"},
                "disentangled": {"bert.encoder.rel_embeddings.weight"}}.get(scheme, set())
    assert position_weights == expected


def predictions_at_mask(model: BertLab, ids: list[int], at: int) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids])).last_hidden_state[0, at]


@pytest.mark.parametrize("scheme", ONE_SCHEME)
def test_only_the_scheme_without_positions_ignores_word_order(scheme):
    """Without positions the state at [MASK] is the same for any order of the other tokens; every other scheme
    moves it. (Weights of std 0.5, so that attention is far from uniform and order has room to matter.)"""
    model = model_with(scheme, std=0.5)
    ids = [2, 11, 12, 13, 14, 15, 4, 3]  # [MASK] = 4 at index 6
    shuffled = [2, 15, 13, 11, 14, 12, 4, 3]
    moved = (predictions_at_mask(model, ids, 6) - predictions_at_mask(model, shuffled, 6)).abs().max().item()
    if scheme == "none":
        assert moved < 1e-5  # the same sums in another order: float error only
    else:
        assert moved > 1e-2


@pytest.mark.parametrize("scheme", ["rotary", "alibi"])
def test_offset_only_schemes_ignore_a_shift_of_every_position(scheme):
    """Rotary scores depend on q.k turned by m - n, ALiBi's on |m - n|: adding 7 to every position id changes
    nothing but float error. The learned table does change."""
    ids = torch.tensor([[2, 5, 7, 9, 3]])
    shifted = torch.arange(5)[None] + 7
    for name, changes in ((scheme, False), ("learned", True)):
        model = model_with(name)
        with torch.no_grad():
            moved = (model(ids).last_hidden_state - model(ids, position_ids=shifted).last_hidden_state).abs().max()
        assert (moved.item() > 1e-3) == changes, (name, moved)


def test_schemes_compose_in_one_config():
    """MPNet's positions are two schemes: the learned table and the relative buckets."""
    cfg = BertConfig.from_dict({**SMALL, **EXTRA["relative"], "positions": ["learned", "relative"]})
    model = BertLab(cfg)
    assert [s.name for s in model.schemes] == ["learned", "relative"]
    assert model.bert.embeddings.position_embeddings is not None
    assert model.bert.encoder.relative_attention_bias is not None
    assert not cfg.absolute_positions_only and BertConfig.from_dict({**SMALL, "positions": ["sinusoidal"]}).absolute_positions_only


def test_an_unknown_scheme_is_one_sentence():
    with pytest.raises(ValueError, match="position scheme 'wavelet' is not one of "):
        BertLab(BertConfig.from_dict({**SMALL, "positions": ["wavelet"]}))


@pytest.mark.parametrize("scheme", ONE_SCHEME)
def test_every_scheme_draws_its_geometry_or_says_it_has_none(scheme):
    model = model_with(scheme)
    geometry = model.schemes[0].geometry(model, 6)
    if scheme == "none":
        assert geometry is None
        return
    assert geometry.values.shape == (len(geometry.rows), len(geometry.columns)) and geometry.title and geometry.note
    assert np.isfinite(geometry.values).all()


def test_geometries_hand_counted():
    """ALiBi's row of head 1 (8 heads: slope 1/2) is 0, -0.5, -1, ...; rotary's fastest band (w = 1) is cos(k); a
    learned or sinusoidal table is 1 on the diagonal; the relative bias at offset 0 is each head's bucket-0 value."""
    alibi = model_with("alibi")
    eight = BertLab(BertConfig.from_dict({**SMALL, "num_attention_heads": 8, "positions": ["alibi"]}))
    assert eight.schemes[0].geometry(eight, 4).values[0].tolist() == [0.0, -0.5, -1.0, -1.5]
    assert alibi.schemes[0].geometry(alibi, 3).values.shape == (4, 3)
    rotary = model_with("rotary")
    cosines = rotary.schemes[0].geometry(rotary, 4).values
    np.testing.assert_allclose(cosines[0], np.cos(np.arange(4)), atol=1e-6)  # band 1: w = theta^0 = 1 radian a token
    for scheme in ("learned", "sinusoidal"):
        model = model_with(scheme)
        np.testing.assert_allclose(np.diag(model.schemes[0].geometry(model, 5).values), 1.0, atol=1e-6)
    relative = model_with("relative")
    table = relative.bert.encoder.relative_attention_bias.weight.detach()
    values = relative.schemes[0].geometry(relative, 3).values  # offsets -2..2, the middle column is offset 0
    np.testing.assert_allclose(values[:, 2], table[0].numpy(), atol=1e-7)
