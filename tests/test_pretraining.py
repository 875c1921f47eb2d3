"""BERT's pretraining objective: masking proportions, exclusions, losses, NSP pairs."""
import math

import pytest
import torch

from bertviz_lab.mlm.examples import make_nsp_pairs
from bertviz_lab.mlm.objective import IGNORE, choose_positions, mask_tokens, mlm_loss, nsp_loss

MASK, VOCAB = 4, 1000


def sample(seed=0, batch=400, width=128, whole_word=False):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, VOCAB, (batch, width), generator=g)
    lengths = torch.randint(8, width + 1, (batch,), generator=g)
    real = torch.arange(width)[None, :] < lengths[:, None]
    ids[~real] = 0  # padding
    ids[:, 0] = 2  # [CLS]
    ids[torch.arange(batch), lengths - 1] = 3  # [SEP]
    special = (ids == 0) | (ids == 2) | (ids == 3)
    words = None
    if whole_word:
        words = torch.cumsum(torch.rand((batch, width), generator=g) < 0.6, dim=1)
        words[special] = -1
    return ids, special, words, g


def test_masking_proportions_on_a_large_sample():
    ids, special, _, g = sample()
    inputs, labels = mask_tokens(ids, special, MASK, VOCAB, g, random_token_low=10)
    chosen = labels != IGNORE
    eligible = (~special).sum().item()
    assert eligible > 20000
    assert chosen.sum().item() / eligible == pytest.approx(0.15, abs=0.005)
    n = chosen.sum().item()
    masked = (inputs[chosen] == MASK).sum().item() / n
    unchanged = (inputs[chosen] == ids[chosen]).sum().item() / n
    assert masked == pytest.approx(0.80, abs=0.01)
    # "unchanged" includes the 10% kept plus random draws that hit the same token (1/990 of 10%)
    assert unchanged == pytest.approx(0.10 + 0.10 / 990, abs=0.01)
    assert 1 - masked - unchanged == pytest.approx(0.10, abs=0.01)
    assert torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(inputs[~chosen], ids[~chosen])  # nothing else changes


def test_special_tokens_and_padding_are_never_chosen():
    for seed in range(5):
        ids, special, words, g = sample(seed, whole_word=seed % 2 == 1)
        inputs, labels = mask_tokens(ids, special, MASK, VOCAB, g, word_ids=words)
        assert not (labels[special] != IGNORE).any()
        assert torch.equal(inputs[special], ids[special])


def test_whole_word_masking_takes_all_pieces_of_a_word():
    ids, special, words, g = sample(3, whole_word=True)
    chosen = choose_positions(special, g, 0.15, words)
    for row in range(20):
        for w in words[row][words[row] >= 0].unique():
            flags = chosen[row][words[row] == w]
            assert flags.all() or not flags.any()
    rate = chosen.sum().item() / (~special).sum().item()
    assert rate == pytest.approx(0.15, abs=0.01)


def test_mlm_loss_by_hand():
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0, 0.0, 3.0], [1.0, 1.0, 1.0]]])
    labels = torch.tensor([[IGNORE, 1], [2, IGNORE]])
    lse = lambda row: math.log(sum(math.exp(v) for v in row))  # noqa: E731
    expected = ((lse([0, 1, 0]) - 1.0) + (lse([0, 0, 3]) - 3.0)) / 2
    assert mlm_loss(logits, labels).item() == pytest.approx(expected, rel=1e-6)
    gathered = logits[labels != IGNORE]
    assert mlm_loss(gathered, labels).item() == pytest.approx(expected, rel=1e-6)


def test_nsp_loss_by_hand_and_pairs():
    logits = torch.tensor([[2.0, 0.0], [0.5, 1.5]])
    expected = ((math.log(math.exp(2) + 1) - 2) + (math.log(math.exp(0.5) + math.exp(1.5)) - 1.5)) / 2
    assert nsp_loss(logits, torch.tensor([0, 1])).item() == pytest.approx(expected, rel=1e-6)
    docs = [[f"d{d}s{i}" for i in range(50)] for d in range(40)]
    pairs = make_nsp_pairs(docs, seed=1)
    assert len(pairs) == 40 * 49
    share_next = sum(1 for _, _, y in pairs if y == 0) / len(pairs)
    assert share_next == pytest.approx(0.5, abs=0.03)
    for a, b, y in pairs:
        da, sa = a[1:].split("s")
        db, sb = b[1:].split("s")
        if y == 0:
            assert da == db and int(sb) == int(sa) + 1
        else:
            assert da != db
