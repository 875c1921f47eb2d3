"""What a position scheme changes, measured on held-out running text (issue 58): masked-word accuracy at the training
length and beyond, word-order sensitivity, and attention by distance. Every figure comes with a 95 % percentile
bootstrap interval over blocks (the masked words of one block are not independent, so blocks are resampled whole).

Held-out text is packed into blocks as the twins were trained (``twins.packed_blocks``); the masks are seeded, so
every twin is measured on the same masked words.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..lab import Lab
from .objective import IGNORE, mask_tokens

RESAMPLES = 1000


@dataclass(frozen=True)
class Rate:
    """A share (or mean) with its interval and what it is over."""

    value: float
    low: float
    high: float
    n: int  # masked words, or blocks

    def to_json(self) -> dict:
        return {"value": round(self.value, 4), "ci": [round(self.low, 4), round(self.high, 4)], "n": self.n}


def ratio_interval(numerators: np.ndarray, denominators: np.ndarray, seed: int = 0) -> Rate:
    """sum(num) / sum(den) over blocks, with a percentile bootstrap interval that resamples whole blocks."""
    numerators, denominators = np.asarray(numerators, float), np.asarray(denominators, float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(numerators), size=(RESAMPLES, len(numerators)))
    ratios = numerators[draws].sum(1) / np.maximum(denominators[draws].sum(1), 1e-12)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return Rate(float(numerators.sum() / max(denominators.sum(), 1e-12)), float(low), float(high),
                int(denominators.sum()))


def reach_problem(lab: Lab, length: int) -> str | None:
    """Why the model cannot take inputs of ``length`` tokens (a learned table of fewer rows), or None."""
    most = lab.model.config.max_tokens
    if length > most:
        return (f"cannot reach position {most + 1}: its learned position table has {most} rows, so inputs of "
                f"{length} tokens have no position vectors past {most}")
    return None


def masked_blocks(lab: Lab, blocks: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels) with 15 % of each block's real WordPieces chosen by the seeds' 80/10/10 rule."""
    real = blocks != 0
    special = (blocks == blocks[:, :1]) | ~real
    special |= torch.zeros_like(special).scatter_(1, real.sum(1, keepdim=True) - 1, True)
    generator = torch.Generator().manual_seed(seed)
    return mask_tokens(blocks, special, lab.mask_id, lab.model.config.vocab_size, generator, 0.15,
                       random_token_low=999)


def _logits(lab: Lab, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    chosen = labels != IGNORE
    with torch.no_grad():
        return lab.model(inputs.to(lab.device), attention_mask=(inputs != 0).long().to(lab.device),
                         mlm_positions=chosen.to(lab.device)).mlm_logits.float().cpu()  # (n chosen, vocab)


def masked_accuracy(lab: Lab, blocks: torch.Tensor, seed: int = 0, batch: int = 16) -> dict:
    """Top-1 and top-5 over the masked words of every block, each with its interval; or why not (reach)."""
    problem = reach_problem(lab, blocks.shape[1])
    if problem:
        return {"length": blocks.shape[1], "not_measured": problem}
    inputs, labels = masked_blocks(lab, blocks, seed)
    hits1, hits5, counts = [], [], []
    for start in range(0, len(blocks), batch):
        x, y = inputs[start:start + batch], labels[start:start + batch]
        logits = _logits(lab, x, y)
        gold = y[y != IGNORE]
        top5 = logits.topk(5, dim=-1).indices  # (n chosen, 5)
        row = (y != IGNORE).nonzero()[:, 0]  # which block of the batch each chosen word is in
        for b in range(len(x)):
            here = row == b
            hits1.append(int((top5[here, 0] == gold[here]).sum()))
            hits5.append(int((top5[here] == gold[here, None]).any(-1).sum()))
            counts.append(int(here.sum()))
    return {"length": blocks.shape[1], "top1": ratio_interval(hits1, counts, seed).to_json(),
            "top5": ratio_interval(hits5, counts, seed).to_json()}


def shuffled_others(inputs: torch.Tensor, labels: torch.Tensor, seed: int) -> torch.Tensor:
    """Each block with its unmasked real WordPieces in a seeded random order; [CLS], [SEP], padding and the masked
    positions (their [MASK] / replacement tokens) stay where they are."""
    out = inputs.clone()
    rng = np.random.default_rng(seed)
    real = inputs != 0
    for b in range(len(inputs)):
        n = int(real[b].sum())
        movable = [i for i in range(1, n - 1) if labels[b, i] == IGNORE]
        order = rng.permutation(movable)
        out[b, movable] = inputs[b, order]
    return out


def order_sensitivity(lab: Lab, blocks: torch.Tensor, seed: int = 0, batch: int = 16) -> dict:
    """The change in masked-word loss (nats per masked word) when the unmasked words are shuffled: mean per block
    with its interval. A model without positions must show none (its [MASK] outputs do not depend on order)."""
    problem = reach_problem(lab, blocks.shape[1])
    if problem:
        return {"not_measured": problem}
    inputs, labels = masked_blocks(lab, blocks, seed)
    shuffled = shuffled_others(inputs, labels, seed)
    changes = []
    for start in range(0, len(blocks), batch):
        y = labels[start:start + batch]
        gold = y[y != IGNORE]
        row = (y != IGNORE).nonzero()[:, 0]
        losses = []
        for x in (inputs[start:start + batch], shuffled[start:start + batch]):
            per_word = torch.nn.functional.cross_entropy(_logits(lab, x, y), gold, reduction="none")
            losses.append(per_word)
        for b in range(len(y)):
            here = row == b
            if here.any():
                changes.append(float((losses[1][here] - losses[0][here]).mean()))
    values = np.asarray(changes)
    rate = ratio_interval(values, np.ones_like(values), seed)
    return {"loss_change": Rate(rate.value, rate.low, rate.high, len(values)).to_json()}


def attention_by_distance(lab: Lab, blocks: torch.Tensor, threshold: float = 0.5) -> dict:
    """Per layer: the share of attention on the previous and on the next token and the mean attention distance
    |i - j| (over real query tokens, [CLS]/[SEP] included as keys), with intervals over blocks; and the heads whose
    mean attention to the previous (next) token is over ``threshold`` (Clark et al. 2019's positional heads)."""
    from ..bert.encoder.hook_table import every_layer

    layers, heads = lab.model.config.num_hidden_layers, lab.model.config.num_attention_heads
    per_block = {"previous": [], "next": [], "distance": []}  # each (blocks, layers, heads)
    for block in blocks:
        n = int((block != 0).sum())
        ids = block[:n][None].to(lab.device)
        with torch.no_grad(), lab.model.hooks(capture=[every_layer("pattern")]) as run:
            lab.model(ids)
        pattern = torch.stack([run.cache[name][0] for name in sorted(run.cache, key=_layer_index)]).float().cpu()
        index = torch.arange(n)
        distance = (index[:, None] - index[None, :]).abs().float()  # (query, key)
        per_block["previous"].append(pattern[..., index[1:], index[1:] - 1].mean(-1).numpy())  # (layers, heads)
        per_block["next"].append(pattern[..., index[:-1], index[:-1] + 1].mean(-1).numpy())
        per_block["distance"].append((pattern * distance).sum(-1).mean(-1).numpy())
    arrays = {k: np.stack(v) for k, v in per_block.items()}  # (blocks, layers, heads)
    out = {"layers": []}
    for layer in range(layers):
        row = {"layer": layer + 1}
        for key, values in arrays.items():
            per = values[:, layer].mean(-1)  # (blocks,) mean over heads
            row[key] = ratio_interval(per, np.ones_like(per)).to_json()
        out["layers"].append(row)
    mean_heads = {k: v.mean(0) for k, v in arrays.items()}  # (layers, heads)
    out["previous_token_heads"] = [f"{l + 1}-{h + 1}" for l in range(layers) for h in range(heads)
                                   if mean_heads["previous"][l, h] > threshold]
    out["next_token_heads"] = [f"{l + 1}-{h + 1}" for l in range(layers) for h in range(heads)
                               if mean_heads["next"][l, h] > threshold]
    return out


def _layer_index(name: str) -> int:
    return int(name.split(".layer.")[1].split(".")[0])
