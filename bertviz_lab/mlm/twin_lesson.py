"""The Positions lesson on one typed sentence (issue 58): what each position-scheme twin does with it, side by side.

For each twin: one head's attention map, attention by distance per layer (this sentence only: no interval), the
scheme's position geometry (``PositionScheme.geometry``), and the shuffle demonstration: the masked word's
distribution with the other tokens in their order and in ``shuffles`` seeded permutations ([CLS], [SEP] and the masked
positions stay where they are), the Jensen-Shannon divergence per permutation, its mean with a 95 % percentile
bootstrap interval over permutations, and the sentence that interval supports. An encoder without positions computes
the same distribution for every order (attention is permutation-equivariant and nothing else sees the order), so its
divergence is zero up to float rounding; ``tests/test_twin_lesson.py`` checks it exactly.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..attention.metrics import js_divergence
from ..bert.positions.scheme import Geometry
from ..bert.runtime.model_thread import on_model_thread
from ..lab import Analysis, InputError, Lab
from ..naming import SPECIAL_TOKENS
from .twin_measures import ratio_interval

UNCHANGED = 1e-10  # nats: below this a permutation left the distribution as it was (float32 rounding: ~1e-14)


@dataclass
class ShuffleDemo:
    """The masked words' distributions before and after shuffling the other tokens, over seeded permutations."""

    positions: list[int]  # the masked token positions the divergence is averaged over
    chosen_for_you: bool  # no [MASK] was typed: the middle word was masked
    js: np.ndarray  # (shuffles,) mean JS divergence over the masked positions, nats
    top_before: list[str]
    top_kept: float  # share of permutations whose top-1 at every masked position is unchanged
    interval: dict[str, Any] = field(default_factory=dict)

    def conclusion(self, twin: str) -> str:
        """The sentence the interval over permutations supports, never written by hand."""
        low, high = self.interval["ci"]
        if float(np.max(self.js)) < UNCHANGED:
            return (f"{twin}: the prediction does not move when the other words are shuffled (JS divergence below "
                    f"{UNCHANGED:g} nats for all {len(self.js)} orders): it cannot see word order.")
        return (f"{twin}: shuffling the other words moves the prediction (mean JS divergence "
                f"{self.interval['value']:.3g} nats, 95 % interval [{low:.3g}, {high:.3g}] over {len(self.js)} "
                f"orders; top-1 unchanged in {self.top_kept:.0%} of them).")


@dataclass
class TwinView:
    """One twin on the lesson's sentence."""

    twin: str  # checkpoint name
    scheme: str
    analysis: Analysis
    head_attention: np.ndarray  # (query, key) at the chosen layer and head
    previous: np.ndarray  # (layers,) share of attention on the previous token, mean over heads and queries
    following: np.ndarray  # (layers,) on the next token
    distance: np.ndarray  # (layers,) mean attention distance |i - j| in tokens
    geometry: Geometry | None
    shuffle: ShuffleDemo


def masked_positions(analysis: Analysis) -> tuple[list[int], bool]:
    """The typed [MASK] positions, or the middle word's first piece (masked for the demonstration)."""
    typed = [p.position for p in analysis.mlm]
    if typed:
        return typed, False
    words = [i for i, t in enumerate(analysis.tokens) if t not in SPECIAL_TOKENS and not t.startswith("##")
             and any(c.isalpha() for c in t)]
    if not words:
        raise InputError("type a sentence with at least one word to shuffle around")
    return [words[len(words) // 2]], True


def permutations(ids: torch.Tensor, keep: Sequence[int], shuffles: int, seed: int) -> torch.Tensor:
    """(shuffles, n) copies of ``ids`` with every position not in ``keep`` permuted among themselves, seeded."""
    n = ids.shape[0]
    movable = torch.tensor([i for i in range(n) if i not in set(keep)], dtype=torch.long)
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(shuffles):
        row = ids.clone()
        row[movable] = ids[movable[torch.randperm(len(movable), generator=generator)]]
        rows.append(row)
    return torch.stack(rows)


def shuffle_demo(lab: Lab, analysis: Analysis, shuffles: int = 30, seed: int = 0) -> ShuffleDemo:
    positions, chosen = masked_positions(analysis)
    ids = torch.tensor(analysis.token_ids)
    ids[positions] = lab.tokenizer.token_to_id("[MASK]")
    special = [i for i, t in enumerate(analysis.tokens) if t in SPECIAL_TOKENS]
    batch = torch.cat([ids[None], permutations(ids, sorted(set(special) | set(positions)), shuffles, seed)])
    segments = torch.tensor(analysis.segment_ids)[None].expand_as(batch)
    at_masks = torch.zeros_like(batch, dtype=torch.bool)
    at_masks[:, positions] = True  # logits at the masked positions only (the vocabulary projection is most of the cost)

    def run() -> tuple:  # tensor work on the app's model thread when it has one (bert/runtime/model_thread.py)
        with torch.no_grad():
            logits = lab.model(batch.to(lab.device), token_type_ids=segments.to(lab.device),
                               mlm_positions=at_masks.to(lab.device)).mlm_logits  # (rows x masked, vocab)
        probs = torch.softmax(logits.double().cpu(), dim=-1).reshape(len(batch), len(positions), -1)
        top = probs.argmax(-1)  # (1 + shuffles, masked)
        return probs.numpy(), top

    probs, top = on_model_thread(run)
    js = js_divergence(probs[:1], probs[1:]).astype(np.float64)  # (shuffles,): mean over the masked positions

    kept = float((top[1:] == top[:1]).all(-1).double().mean())
    demo = ShuffleDemo(positions, chosen, js, [lab.tokenizer.id_to_token(int(t)) for t in top[0]], kept)
    rate = ratio_interval(js, np.ones_like(js), seed=seed)  # the mean over orders; orders resampled
    demo.interval = {"value": float(f"{rate.value:.6g}"), "ci": [float(f"{rate.low:.6g}"), float(f"{rate.high:.6g}")],
                     "n": rate.n}
    return demo


def twin_view(lab: Lab, text: str, layer: int, head: int, shuffles: int = 30) -> TwinView:
    """``lab`` (a twin) on ``text``: layer and head 1-based."""
    analysis = lab.analyze(text, top_k=5)
    n = len(analysis.tokens)
    attention = analysis.attention  # (layers, heads, query, key)
    index = np.arange(n)
    distance = np.abs(index[:, None] - index[None, :])
    schemes = lab.model.schemes
    geometry = on_model_thread(lambda: next((g for s in schemes if (g := s.geometry(lab.model, n)) is not None), None))
    return TwinView(lab.checkpoint_id, ", ".join(s.name for s in schemes) or "none", analysis, attention[layer - 1, head - 1],
                    attention[:, :, index[1:], index[1:] - 1].mean(axis=(1, 2)),
                    attention[:, :, index[:-1], index[:-1] + 1].mean(axis=(1, 2)),
                    (attention * distance).sum(-1).mean(axis=(1, 2)),
                    geometry,
                    shuffle_demo(lab, analysis, shuffles))
