"""Probing edits as data: what to mask, hide, ablate or replace, turned into the arguments
of one forward pass (token ids, additive attention bias, position ids, hook edits).

Every probe runs on the same model through the hook/intervention mechanism of the core; no
second copy of the model exists.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .hooks import Edit
from .model import BertLab, layer_hook

PROBES = ("mask-tokens", "hide-keys", "left-only", "right-only", "ablate-heads", "zero-positions",
          "shuffle-positions", "shuffle-words", "shift-positions", "sinusoidal-positions")
POSITION_PROBES = ("zero-positions", "shuffle-positions", "shuffle-words", "shift-positions", "sinusoidal-positions")


class ProbeError(ValueError):
    """The probe cannot be applied to this input; the message says why."""


@dataclass
class Probe:
    kind: str
    positions: list[int] = field(default_factory=list)  # mask-tokens, hide-keys
    heads: list[tuple[int, int]] = field(default_factory=list)  # ablate-heads: 0-based (layer, head)
    shift: int = 0  # shift-positions
    seed: int = 0  # shuffles

    def __post_init__(self) -> None:
        if self.kind not in PROBES:
            raise ProbeError(f"unknown probe {self.kind!r}; choose one of {', '.join(PROBES)}")

    def describe(self) -> str:
        extra = {"mask-tokens": f" positions {self.positions}", "hide-keys": f" positions {self.positions}",
                 "ablate-heads": " heads " + ", ".join(f"{l + 1}-{h + 1}" for l, h in self.heads),
                 "shift-positions": f" by {self.shift}", "shuffle-positions": f" (seed {self.seed})",
                 "shuffle-words": f" (seed {self.seed})"}.get(self.kind, "")
        return self.kind + extra


def parse_heads(text: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``"3-5, 6-1"`` (1-based layer-head, as papers write them) -> [(2, 4), (5, 0)]."""
    heads = []
    for part in str(text or "").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            layer, head = (int(v) for v in part.replace(":", "-").split("-"))
        except ValueError:
            raise ProbeError(f"cannot read head {part!r}: write layer-head, e.g. 3-5") from None
        if not (1 <= layer <= n_layers and 1 <= head <= n_heads):
            raise ProbeError(f"head {part} does not exist: layers 1-{n_layers}, heads 1-{n_heads}")
        heads.append((layer - 1, head - 1))
    if not heads:
        raise ProbeError("name at least one head to ablate, e.g. 3-5")
    return heads


def directional_bias(n: int, direction: str) -> torch.Tensor:
    """Additive mask (1, 1, query, key): left-only sees keys <= query, right-only keys >= query."""
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    allowed = {"left-only": k <= q, "right-only": k >= q}[direction]
    bias = torch.zeros((n, n))
    bias[~allowed] = torch.finfo(torch.float32).min
    return bias[None, None]


def hidden_keys_bias(n: int, positions: Sequence[int]) -> torch.Tensor:
    """Additive mask (1, 1, 1, key) that removes the given keys from every query's attention."""
    bias = torch.zeros((1, 1, 1, n))
    bias[..., list(positions)] = torch.finfo(torch.float32).min
    return bias


def ablate_heads_edit(heads_of_layer: Sequence[int]) -> Edit:
    """Zero the per-head context of the given heads (their contribution to the output)."""
    heads = list(heads_of_layer)

    def edit(context: torch.Tensor, _name: str) -> torch.Tensor:  # (batch, heads, query, d_head)
        context = context.clone()
        context[:, heads] = 0
        return context

    return edit


def batched_ablation_edits(n_layers: int, n_heads: int, rows: Sequence[tuple[int, int] | None],
                           device: torch.device) -> dict[str, Edit]:
    """One edit per layer for a batch whose row b ablates head rows[b] (None = nothing ablated)."""
    keep = torch.ones((n_layers, len(rows), n_heads, 1, 1), device=device)
    for b, lh in enumerate(rows):
        if lh is not None:
            keep[lh[0], b, lh[1]] = 0
    edits: dict[str, Edit] = {}
    for layer in range(n_layers):
        scale = keep[layer]  # (batch, heads, 1, 1)

        def edit(context: torch.Tensor, _name: str, scale=scale) -> torch.Tensor:
            return context * scale.to(context.dtype)

        edits[layer_hook(layer, "context")] = edit
    return edits


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """The fixed encoding of the seed material: PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). Shape (positions, d_model)."""
    position = torch.arange(n_positions, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / torch.pow(10000.0, two_i / d_model)  # (positions, d_model / 2)
    table = torch.zeros((n_positions, d_model), dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


def scaled_sinusoidal(model: BertLab, n_positions: int) -> torch.Tensor:
    """Sinusoidal table rescaled to the learned position embeddings' mean norm."""
    learned = model.bert.embeddings.position_embeddings.weight.detach().float()
    table = sinusoidal_table(n_positions, learned.shape[1])
    return table * (learned.norm(dim=1).mean() / table.norm(dim=1).mean())


def replace_positions_edit(replacement: torch.Tensor) -> Edit:
    def edit(position: torch.Tensor, _name: str) -> torch.Tensor:  # (batch|1, pos, d_model)
        n = position.shape[-2]
        return replacement[:n].to(position.device, position.dtype).expand_as(position)

    return edit


def zero_edit(x: torch.Tensor, _name: str) -> torch.Tensor:
    return torch.zeros_like(x)


@dataclass
class ProbeInputs:
    """What the probe changes for one forward pass, plus how to map the result back."""

    mask_positions: list[int] = field(default_factory=list)
    attention_bias: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None
    edits: dict[str, Edit | list[Edit]] = field(default_factory=dict)
    token_order: list[int] | None = None  # shuffle-words: input position i holds original token order[i]


def movable_positions(tokens: Sequence[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t not in ("[CLS]", "[SEP]", "[PAD]")]


def probe_inputs(probe: Probe, model: BertLab, tokens: Sequence[str]) -> ProbeInputs:
    n = len(tokens)
    real = movable_positions(tokens)
    for p in probe.positions:
        if not 0 <= p < n:
            raise ProbeError(f"position {p} is outside the input (0..{n - 1})")
    kind = probe.kind
    if kind == "mask-tokens":
        if not probe.positions:
            raise ProbeError("choose the tokens to mask")
        return ProbeInputs(mask_positions=list(probe.positions))
    if kind == "hide-keys":
        if not probe.positions:
            raise ProbeError("choose the tokens to hide from attention")
        if len(set(probe.positions)) >= n:
            raise ProbeError("at least one token must stay visible")
        return ProbeInputs(attention_bias=hidden_keys_bias(n, probe.positions))
    if kind in ("left-only", "right-only"):
        return ProbeInputs(attention_bias=directional_bias(n, kind))
    if kind == "ablate-heads":
        if not probe.heads:
            raise ProbeError("name at least one head to ablate")
        by_layer: dict[int, list[int]] = {}
        for layer, head in probe.heads:
            by_layer.setdefault(layer, []).append(head)
        return ProbeInputs(edits={layer_hook(l, "context"): ablate_heads_edit(hs) for l, hs in by_layer.items()})
    if kind == "zero-positions":
        return ProbeInputs(edits={"bert.embeddings.hook_position": zero_edit})
    if kind == "shift-positions":
        limit = model.config.max_position_embeddings
        if probe.shift < 0 or n + probe.shift > limit:
            raise ProbeError(f"shift must be between 0 and {limit - n} for this {n}-token input")
        return ProbeInputs(position_ids=torch.arange(probe.shift, probe.shift + n)[None])
    if kind == "shuffle-positions":
        perm = torch.arange(n)
        shuffled = torch.tensor(real)[torch.randperm(len(real), generator=torch.Generator().manual_seed(probe.seed))]
        perm[real] = shuffled
        return ProbeInputs(position_ids=perm[None])
    if kind == "shuffle-words":
        order = list(range(n))
        g = np.random.default_rng(probe.seed)
        moved = list(g.permutation(real))
        for slot, source in zip(real, moved):
            order[slot] = int(source)
        return ProbeInputs(token_order=order)
    if kind == "sinusoidal-positions":
        table = scaled_sinusoidal(model, model.config.max_position_embeddings)
        return ProbeInputs(edits={"bert.embeddings.hook_position": replace_positions_edit(table)})
    raise ProbeError(kind)


def relative_offset_profile(attention: np.ndarray, offsets: range = range(-5, 6)) -> np.ndarray:
    """Mean attention from each query to the key at query+offset, per head: (layers, heads, offsets)."""
    n = attention.shape[-1]
    out = np.zeros(attention.shape[:2] + (len(offsets),), dtype=np.float32)
    for j, o in enumerate(offsets):
        q = np.arange(max(0, -o), min(n, n - o))
        if len(q):
            out[..., j] = attention[..., q, q + o].mean(-1)
    return out


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (nats) between attention rows, averaged over queries: (layers, heads)."""
    p = p.astype(np.float64)
    q = q.astype(np.float64)
    m = 0.5 * (p + q)

    def kl(a, b):
        return np.where(a > 0, a * (np.log(np.clip(a, 1e-30, None)) - np.log(np.clip(b, 1e-30, None))), 0.0).sum(-1)

    return (0.5 * kl(p, m) + 0.5 * kl(q, m)).mean(-1).astype(np.float32)


def cosine_matrix(vectors: torch.Tensor) -> np.ndarray:
    unit = torch.nn.functional.normalize(vectors.float(), dim=-1)
    return (unit @ unit.T).numpy()


__all__ = ["PROBES", "POSITION_PROBES", "Probe", "ProbeError", "ProbeInputs", "batched_ablation_edits",
           "cosine_matrix", "directional_bias", "hidden_keys_bias", "js_divergence", "parse_heads",
           "probe_inputs", "relative_offset_profile", "sinusoidal_table", "scaled_sinusoidal", "math"]
