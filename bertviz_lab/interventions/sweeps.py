"""Sweeps: one question asked of many interventions at once — the directional-context sweep
over masked positions, single-head ablation over every head (batched), and the similarity of
learned vs sinusoidal position embeddings."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..attention import cosine_matrix
from ..lab import Encoded, InputError, Lab
from .compare import probability_of
from .edits import batched_ablation_edits, scaled_sinusoidal
from .kinds import InterventionError, make_intervention

Progress = Callable[[float, str], None]


CONDITIONS = ("both", "left-only", "right-only", "left-only-control", "right-only-control")


@dataclass
class DirectionalRow:
    position: int
    token: str  # the word at this position before masking ([MASK] when it was typed)
    baseline_top: str
    both: float
    left_only: float
    right_only: float
    left_control: float = float("nan")  # as many random keys hidden as left-only hides
    right_control: float = float("nan")
    target: str = ""  # the token scored: the gold word when known, else the full-context top-1
    scored: str = "top-1"  # "gold" or "top-1"


def condition_bias(tokens: Sequence[str], condition: str, sinks: str, seed: int) -> torch.Tensor | None:
    if condition == "both":
        return None
    options = {"sinks": sinks, "seed": seed} if condition.endswith("control") else {"sinks": sinks}
    return make_intervention(condition, **options).inputs(None, tokens).attention_bias


def directional_sweep(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = (),
                      sinks: str = "symmetric", seed: int = 0) -> list[DirectionalRow]:
    """For every masked position: probability of the gold word (when the user masked a known word;
    else the full-context top-1) when every layer sees both sides, only the left context, only the
    right context, and the matched random controls (symmetric sinks by default)."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so the directional sweep cannot score predictions")
    base = lab.analyze(text, pair=pair, mask_positions=mask_positions, truncate=True, keep_probabilities=True)
    if not base.mlm:
        raise InputError("mask at least one token (type [MASK] or pick tokens) to run the directional sweep")
    runs = {c: lab.analyze(text, pair=pair, mask_positions=mask_positions, truncate=True, keep_probabilities=True,
                           attention_bias=condition_bias(base.tokens, c, sinks, seed)) for c in CONDITIONS[1:]}
    rows = []
    for p in base.mlm:
        target = p.original or p.predictions[0].token
        value = {c: probability_of(runs[c], p.position, target, lab) for c in CONDITIONS[1:]}
        rows.append(DirectionalRow(p.position, p.original or p.token, p.predictions[0].token,
                                   probability_of(base, p.position, target, lab), value["left-only"],
                                   value["right-only"], value["left-only-control"], value["right-only-control"],
                                   target, "gold" if p.original else "top-1"))
    return rows


def ablation_sweep(lab: Lab, text: str, pair: str | None = None, mask_positions: Sequence[int] = (),
                   batched: bool = True, chunk: int = 72, progress: Progress | None = None) -> np.ndarray:
    """Drop in log-probability of the baseline's top token (mean over masked positions) when each
    head alone is zeroed: (layers, heads). Positive = the head helped this prediction."""
    if not lab.model.has_mlm_head:
        raise InputError("this checkpoint has no MLM head, so head importance for predictions cannot be measured")
    base = lab.analyze(text, pair=pair, mask_positions=mask_positions, truncate=True)
    if not base.mlm:
        raise InputError("mask at least one token (type [MASK] or pick tokens) to run the ablation sweep")
    positions = [p.position for p in base.mlm]
    targets = torch.tensor([lab.tokenizer.token_to_id(p.predictions[0].token) for p in base.mlm])
    enc = Encoded(base.tokens, base.token_ids, base.segment_ids, base.word_ids, base.offsets, len(base.tokens))
    layers, heads = lab.n_layers, lab.n_heads
    rows: list[tuple[int, int] | None] = [None] + [(l, h) for l in range(layers) for h in range(heads)]
    logp = torch.empty(len(rows))
    size = chunk if batched else 1
    for start in range(0, len(rows), size):
        part = rows[start:start + size]
        tensors = lab.batch_tensors([enc] * len(part))
        select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
        select[:, positions] = True
        edits = batched_ablation_edits(layers, heads, part, lab.device)
        out, _ = lab.run(tensors, capture=(), edits=edits, mlm_positions=select)
        scores = torch.log_softmax(out.mlm_logits.float(), -1).view(len(part), len(positions), -1)  # (rows, masked, vocab)
        picked = scores.gather(2, targets.to(scores.device)[None, :, None].expand(len(part), -1, 1))[..., 0]
        logp[start:start + len(part)] = picked.mean(1).cpu()
        if progress is not None:
            progress(min(1.0, (start + len(part)) / len(rows)), f"ablated {start + len(part) - 1} of {len(rows) - 1} heads")
    return (logp[0] - logp[1:]).view(layers, heads).numpy()


def position_similarity(lab: Lab, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity of the first n learned position embeddings, and of the sinusoidal ones."""
    limit = lab.model.config.max_position_embeddings
    if not 2 <= n <= limit:
        raise InterventionError(f"choose between 2 and {limit} positions")
    learned = lab.model.bert.embeddings.position_embeddings.weight[:n].detach().cpu()
    return cosine_matrix(learned), cosine_matrix(scaled_sinusoidal(lab.model, n))
