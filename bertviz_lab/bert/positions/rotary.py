"""ModernBERT's rotary positions and local attention (Warner et al. 2024, "Smarter, Better, Faster, Longer: A Modern
Bidirectional Encoder for Fast, Memory Efficient, and Long Context Finetuning and Inference", arXiv:2412.13663;
rotary embeddings: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding",
arXiv:2104.09864), as transformers computes them, and the "rotary" position scheme (``RotaryPositionsScheme``: hook
points ``hook_rot_q`` / ``hook_rot_k`` after the turn on every attention, ``encoder.hook_rotary_positions`` the
positions turned by; in a post-norm BERT layer as well as ModernBERT's pre-norm one)
(``transformers/models/modernbert/modeling_modernbert.py``:
``ModernBertRotaryEmbedding``, ``rotate_half``, ``apply_rotary_pos_emb``; the window from
``masking_utils.sliding_window_bidirectional_overlay``).

Why a module of its own: a rotary model has no position vectors to look at. Position m turns each pair of a
query's (and key's) coordinates (c, c + d/2) by the angle m * w_c, with w_c = theta^(-2c/d) (transformers
pairs the two halves of the head, not neighbours). A rotation by m then one by n leaves q . k depending on
m - n only, so the pre-softmax score is

    score_ij = rot(q_i, m_i) . rot(k_j, m_j) / sqrt(d_head)  (+ the mask)

and adding a constant to every position changes nothing but float error. ModernBERT alternates layers:
every ``global_attn_every_n_layers``-th layer (the first included) attends to all tokens with theta
``global_rope_theta``; the others see keys at most ``local_attention // 2`` tokens away (a window of
``local_attention`` in total) with theta ``local_rope_theta``. The positions that are rotated are the
model's position ids (0..n-1 by default), which interventions may move (``encoder.hook_rotary_positions``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..encoder.hook_spot import SELF, HookSpot
from ..encoder.hooks import HookPoint
from .scheme import Geometry, PositionScheme, register

GLOBAL, LOCAL = "full_attention", "sliding_attention"  # transformers' layer types
DEFAULT_THETA = {GLOBAL: 160_000.0, LOCAL: 10_000.0}  # ModernBertConfig.default_theta


def layer_types(raw: Mapping[str, Any], n_layers: int) -> list[str]:
    """The config's ``layer_types``, or transformers' rule from ``global_attn_every_n_layers``: layer i is global
    when i % n == 0."""
    given = raw.get("layer_types")
    if given:
        types = [str(x) for x in given]
        if len(types) != n_layers or set(types) - {GLOBAL, LOCAL}:
            raise ValueError(f"layer_types {types} is not one of {GLOBAL!r} / {LOCAL!r} per layer ({n_layers})")
        return types
    every = int(raw.get("global_attn_every_n_layers", 3))
    return [LOCAL if i % every else GLOBAL for i in range(n_layers)]


def rope_thetas(raw: Mapping[str, Any]) -> dict[str, float]:
    """theta of each layer type from ``rope_parameters`` (transformers 5) or ``global_rope_theta`` /
    ``local_rope_theta`` (older configs); only the default rotary (no scaling) is supported."""
    params = raw.get("rope_parameters") or {}
    old = {GLOBAL: raw.get("global_rope_theta"), LOCAL: raw.get("local_rope_theta")}
    out = {}
    for kind in (GLOBAL, LOCAL):
        own = params.get(kind) or {}
        if own.get("rope_type", "default") != "default" or raw.get("rope_scaling"):
            raise ValueError(f"rope_type {own.get('rope_type') or 'scaled'!r} is not supported (only the default rotary)")
        out[kind] = float(own.get("rope_theta") or old[kind] or DEFAULT_THETA[kind])
    return out


@dataclass(frozen=True)
class RotarySpec:
    """The ModernBERT config fields the layers read."""

    types: tuple[str, ...]  # per layer: GLOBAL or LOCAL
    global_theta: float
    local_theta: float
    local_attention: int  # the local window's total width: keys within +-local_attention // 2
    norm_bias: bool
    attention_bias: bool
    mlp_bias: bool
    classifier_bias: bool

    @classmethod
    def from_config(cls, extra: Mapping[str, Any], n_layers: int) -> RotarySpec:
        thetas = rope_thetas(extra)
        return cls(types=tuple(layer_types(extra, n_layers)), global_theta=thetas[GLOBAL], local_theta=thetas[LOCAL],
                   local_attention=int(extra.get("local_attention", 128)),
                   norm_bias=bool(extra.get("norm_bias", False)), attention_bias=bool(extra.get("attention_bias", False)),
                   mlp_bias=bool(extra.get("mlp_bias", False)), classifier_bias=bool(extra.get("classifier_bias", False)))

    @property
    def half_window(self) -> int:
        """The farthest key a local layer's query sees, in tokens either side."""
        return self.local_attention // 2

    def is_global(self, layer: int) -> bool:
        """Layer ``layer`` (0-based) attends to every token."""
        return self.types[layer] == GLOBAL


def inverse_frequencies(theta: float, d_head: int) -> torch.Tensor:
    """(d_head / 2,) float32: w_c = 1 / theta^(2c / d_head), radians per position of coordinate pair c."""
    return 1.0 / (theta ** (torch.arange(0, d_head, 2, dtype=torch.float) / d_head))


def wavelengths(theta: float, d_head: int) -> torch.Tensor:
    """(d_head / 2,) float64: tokens for one full turn of pair c, 2 pi theta^(2c / d_head)."""
    return 2 * math.pi * theta ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)


def cos_sin(positions: torch.Tensor, theta: float, d_head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every position's angles, each (batch | 1, pos, d_head), as transformers builds them (the
    half-size frequencies repeated for both halves)."""
    freqs = positions[..., None].float() * inverse_frequencies(theta, d_head).to(positions.device)  # (b|1, pos, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (b|1, pos, d_head)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the last dimension's halves: the 90-degree turn of every pair."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (batch, heads, pos, d_head) turned by its positions' angles (cos / sin (batch | 1, pos, d_head)), in float32
    as transformers does, back in x's dtype."""
    cos, sin = cos[:, None], sin[:, None]  # (b|1, 1, pos, d_head)
    return (x.float() * cos + rotate_half(x.float()) * sin).to(x.dtype)


def window_bias(n: int, half_window: int, dtype: torch.dtype, device: torch.device | str = "cpu") -> torch.Tensor:
    """(1, 1, query, key) additive: 0 where |i - j| <= half_window, the dtype's minimum elsewhere."""
    index = torch.arange(n, device=device)
    outside = (index[:, None] - index[None, :]).abs() > half_window  # (query, key)
    return torch.where(outside, torch.finfo(dtype).min, 0.0).to(dtype)[None, None]


@dataclass(frozen=True)
class RotaryPositions:
    """What every layer of one forward pass reads: the angles of each layer type and the local layers' mask."""

    global_angles: tuple[torch.Tensor, torch.Tensor]  # cos, sin (batch | 1, pos, d_head)
    local_angles: tuple[torch.Tensor, torch.Tensor]
    local_bias: torch.Tensor  # (batch | 1, 1, query, key): the window plus the padding mask

    def for_layer(self, spec: RotarySpec, layer: int, bias: torch.Tensor | None
                  ) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor | None]:
        """The angles and additive mask layer ``layer`` uses (``bias``: the padding mask of the global layers)."""
        return (self.global_angles, bias) if spec.is_global(layer) else (self.local_angles, self.local_bias)


def positions_for(positions: torch.Tensor, spec: RotarySpec, d_head: int, bias: torch.Tensor | None,
                  dtype: torch.dtype) -> RotaryPositions:
    """The rotary angles of ``positions`` (batch | 1, pos) for both layer types, and the local mask (window +
    ``bias``, clamped at the dtype's minimum)."""
    n = positions.shape[-1]
    window = window_bias(n, spec.half_window, dtype, positions.device)
    local = window if bias is None else torch.clamp(window + bias, min=torch.finfo(dtype).min)
    return RotaryPositions(cos_sin(positions, spec.global_theta, d_head), cos_sin(positions, spec.local_theta, d_head),
                           local)


@register
class RotaryPositionsScheme(PositionScheme):
    name = "rotary"
    # "q" / "k" hold the projections before the turn; these hold them after it, so that rot_q . rot_k / sqrt(d_head)
    # + the mask (padding, and the window in local layers) is the "scores" spot
    hooks = {
        "rot_q": HookSpot(f"{SELF}.hook_rot_q", "BertSelfAttention (ModernBERT)", "(batch, heads, query, d_head)",
                          "ModernBERT: queries after the rotary turn by their positions"),
        "rot_k": HookSpot(f"{SELF}.hook_rot_k", "BertSelfAttention (ModernBERT)", "(batch, heads, key, d_head)",
                          "ModernBERT: keys after the rotary turn by their positions"),
        "rotary_positions": HookSpot("bert.encoder.hook_rotary_positions", "BertEncoder (ModernBERT)",
                                     "(batch | 1, pos)",
                                     "ModernBERT: the (float) positions every layer rotates queries and keys by"),
    }
    label = "rotary positions"
    citation = "Su et al. 2021 (RoFormer); Warner et al. 2024 (ModernBERT)"
    input_only = False
    reads_position_ids = True

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        self.spec = RotarySpec.from_config(cfg.extra, cfg.num_hidden_layers)

    def encoder_parts(self, encoder: nn.Module) -> None:
        encoder.hook_rotary_positions = HookPoint()  # (batch | 1, pos) float: the positions rotated by

    def attention_parts(self, attention: nn.Module) -> None:
        attention.hook_rot_q = HookPoint()  # (batch, heads, query, d_head) after the turn
        attention.hook_rot_k = HookPoint()  # (batch, heads, key, d_head) after the turn

    def pass_state(self, model: nn.Module, position_ids: torch.Tensor, bias: torch.Tensor | None, n: int,
                   dtype: torch.dtype) -> RotaryPositions:
        positions = model.bert.encoder.hook_rotary_positions(position_ids.float())  # (batch | 1, pos)
        return positions_for(positions, self.spec, self.cfg.head_dim, bias, dtype)

    def layer_state(self, state: RotaryPositions, layer: int, bias: torch.Tensor | None
                    ) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor]]:
        angles, mask = state.for_layer(self.spec, layer, bias)  # a local layer's window joins its mask
        return mask, angles

    def turn(self, attention: nn.Module, q: torch.Tensor, k: torch.Tensor, state: Any
             ) -> tuple[torch.Tensor, torch.Tensor]:
        if state is None:
            raise ValueError("a rotary layer needs its angles: pass the model's PassPositions to the layer")
        return (attention.hook_rot_q(rotate(q, *state)),  # (batch, heads, query, d_head)
                attention.hook_rot_k(rotate(k, *state)))  # (batch, heads, key, d_head)

    def geometry(self, model: nn.Module, n: int) -> Geometry:
        """cos(offset * w_c) of each coordinate pair c (a band) of the global layers' turn, for offsets 0 .. n-1:
        how much of a query's and key's agreement in band c survives that many tokens apart."""
        d_head = self.cfg.head_dim
        frequencies = inverse_frequencies(self.spec.global_theta, d_head).double()  # (d_head / 2,)
        values = torch.cos(torch.arange(n, dtype=torch.float64)[None] * frequencies[:, None])  # (bands, offset)
        waves = wavelengths(self.spec.global_theta, d_head)
        return Geometry(f"{self.label}: what each band keeps at each offset", values.float().numpy(),
                        [f"band {c + 1} ({w:.3g} tokens a turn)" for c, w in enumerate(waves.tolist())],
                        [str(k) for k in range(n)], "coordinate pair (band)", "offset |m - n|",
                        "fast bands (top) turn within a few tokens, slow ones (bottom) barely move across the input: "
                        "q.k depends on the offset only")
