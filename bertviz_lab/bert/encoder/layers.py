"""The encoder's blocks: embeddings, self-attention (asking the position schemes where they act), BERT's post-norm
layer and the pre-norm layer with its gated MLP (ModernBERT's), each with the hook points users look at and edit."""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..positions import PassPositions, PositionScheme
from ..positions import build as build_schemes
from .config import BertConfig
from .hooks import HookPoint, active_run

_ACTIVATIONS = {
    "gelu": F.gelu,  # exact (erf) GELU, as BERT uses
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


def activation(name: str):
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"hidden_act {name!r} is not supported ({sorted(_ACTIVATIONS)})") from None


def layer_norm(cfg: BertConfig, d: int) -> nn.LayerNorm:
    """The family's LayerNorm of width d (ModernBERT's may have no bias)."""
    return nn.LayerNorm(d, eps=cfg.layer_norm_eps, bias=cfg.norm_bias)


class BertEmbeddings(nn.Module):
    def __init__(self, cfg: BertConfig, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.schemes = build_schemes(cfg) if schemes is None else schemes
        self.word_embeddings = nn.Embedding(cfg.vocab_size, d, padding_idx=cfg.pad_token_id)
        self.hook_token = HookPoint()  # (batch, pos, d_model)
        # A scheme of position vectors adds its table and hook_position; without one (DeBERTa-v3, rotary) the
        # table is None and capturing or editing hook_position is an error.
        self.position_embeddings = None
        for scheme in self.schemes:
            scheme.embedding_parts(self)
        # DistilBERT has no segment embeddings (type_vocab_size 0): nothing is added for segments.
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, d) if cfg.type_vocab_size else None
        self.position_offset = cfg.position_offset
        self.LayerNorm = layer_norm(cfg, d)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)
        if self.token_type_embeddings is not None:  # no table, no hook point: capturing or editing it is an error
            self.hook_segment = HookPoint()  # (batch, pos, d_model)
        self.hook_out = HookPoint()  # (batch, pos, d_model) after LayerNorm

    def forward(
        self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor:
        token = self.hook_token(self.word_embeddings(input_ids))  # (batch, pos, d_emb)
        total = token
        for scheme in self.schemes:
            added = scheme.embed(self, position_ids)  # (batch | 1, pos, d_emb) or None
            if added is not None:
                total = total + added
        if self.token_type_embeddings is not None:
            total = total + self.hook_segment(self.token_type_embeddings(token_type_ids))  # (batch, pos, d_emb)
        return self.hook_out(self.dropout(self.LayerNorm(total)))


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.head_dim = cfg.head_dim
        self.scale = 1.0 / math.sqrt(self.head_dim)
        bias = cfg.has_bias("attention")  # ModernBERT's Wqkv may have no bias
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=bias)
        self.key = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=bias)
        self.value = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=bias)
        self.dropout = nn.Dropout(cfg.attention_probs_dropout_prob)
        self.hook_q = HookPoint()  # (batch, heads, query, d_head) before any rotation
        self.hook_k = HookPoint()  # (batch, heads, key, d_head) before any rotation
        self.hook_v = HookPoint()  # (batch, heads, key, d_head) value vectors
        self.schemes = build_schemes(cfg) if schemes is None else schemes
        for scheme in self.schemes:
            scheme.attention_parts(self)  # rotary: hook_rot_q/k; disentangled: its projections, terms, scale
        self.hook_scores = HookPoint()  # (batch, heads, query, key) pre-softmax, mask added
        self.hook_pattern = HookPoint()  # (batch, heads, query, key) attention probabilities
        self.hook_context = HookPoint()  # (batch, heads, query, d_head) per-head context

    def split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (batch, heads, pos, d_head)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None,
                positions: dict[str, Any] | None = None) -> torch.Tensor:
        """``positions``: this layer's state of each position scheme by name (``PassPositions.for_layer``)."""
        b, t, d = x.shape
        state = positions or {}
        q = self.hook_q(self.split(self.query(x)))  # (batch, heads, query, d_head)
        k = self.hook_k(self.split(self.key(x)))  # (batch, heads, key, d_head)
        v = self.hook_v(self.split(self.value(x)))  # (batch, heads, key, d_head)
        for scheme in self.schemes:
            q, k = scheme.turn(self, q, k, state.get(scheme.name))
        own = (scheme.attend(self, q, k, v, bias, state.get(scheme.name)) for scheme in self.schemes)
        context = next((c for c in own if c is not None), None)  # a scheme's own attention (disentangled)
        if context is None and self.explicit("hook_scores", "hook_pattern"):
            scores = torch.matmul(q * self.scale, k.transpose(-1, -2))  # (batch, heads, query, key)
            context = self.attend(scores if bias is None else scores + bias, v)
        elif context is None:
            # Nobody looks at the weights: let PyTorch pick its fused kernel.
            context = F.scaled_dot_product_attention(
                q, k, v, attn_mask=bias, dropout_p=self.dropout.p if self.training else 0.0
            )
        context = self.hook_context(context)  # (batch, heads, query, d_head)
        return context.transpose(1, 2).reshape(b, t, d)  # (batch, query, d_model)

    def explicit(self, *hooks: str) -> bool:
        """Whether the active run captures or edits any of these hook points (then scores are materialised)."""
        run = active_run()
        return run is not None and any(run.needs(getattr(self, h).name) for h in hooks if hasattr(self, h))

    def attend(self, scores: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Softmax of the scores (mask included) through their hook points, then the values: (batch, heads, query, d_head)."""
        probs = self.hook_pattern(torch.softmax(self.hook_scores(scores), dim=-1))  # (batch, heads, query, key)
        return torch.matmul(self.dropout(probs), v)  # (batch, heads, query, d_head)


class BertSelfOutput(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)
        self.hook_out = HookPoint()  # (batch, pos, d_model) attention block output after LayerNorm

    def forward(self, context: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.hook_out(self.LayerNorm(self.dropout(self.dense(context)) + residual))


class BertAttention(nn.Module):
    def __init__(self, cfg: BertConfig, output: nn.Module | None = None,
                 schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        self.self = BertSelfAttention(cfg, schemes)
        self.output = output if output is not None else BertSelfOutput(cfg)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None,
                positions: dict[str, Any] | None = None) -> torch.Tensor:
        return self.output(self.self(x, bias, positions), x)


class BertIntermediate(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.act = activation(cfg.hidden_act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.dense(x))  # (batch, pos, d_ff)


class BertOutput(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.intermediate_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)

    def forward(self, ff: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(ff)) + residual)


class BertLayer(nn.Module):
    """A post-LayerNorm layer (BERT): LayerNorm(x + attention(x)), then LayerNorm(. + FFN(.))."""

    def __init__(self, cfg: BertConfig, index: int = 0, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        self.index = index
        self.schemes = build_schemes(cfg) if schemes is None else schemes
        self.attention = BertAttention(cfg, schemes=self.schemes)
        self.intermediate = BertIntermediate(cfg)
        self.output = BertOutput(cfg)
        self.hook_out = HookPoint()  # (batch, pos, d_model) hidden state after this layer

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None, positions: PassPositions | None = None) -> torch.Tensor:
        """``bias``: the padding mask when ``positions`` is None, else ``positions`` (``BertLab.pass_positions``)
        gives this layer its bias and schemes' state."""
        bias, state = positions.for_layer(self.schemes, self.index) if positions is not None else (bias, {})
        attended = self.attention(x, bias, state)
        return self.hook_out(self.output(self.intermediate(attended), attended))


class PreNormAttentionOutput(nn.Module):
    """ModernBERT's ``Wo`` (``dense``) added to the residual stream, no LayerNorm after it (pre-norm)."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=cfg.has_bias("attention"))
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)
        self.hook_out = HookPoint()  # (batch, pos, d_model) the residual stream after the attention block

    def forward(self, context: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.hook_out(residual + self.dropout(self.dense(context)))


class GatedMLP(nn.Module):
    """ModernBERT's GeGLU: ``Wi`` makes an input and a gate half, act(input) * gate, then ``Wo``."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        bias = cfg.has_bias("mlp")
        self.Wi = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=bias)
        self.act = activation(cfg.hidden_act)
        self.Wo = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=bias)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        given, gate = self.Wi(x).chunk(2, dim=-1)  # (batch, pos, d_ff) each
        return self.Wo(self.dropout(self.act(given) * gate))  # (batch, pos, d_model)


class PreNormLayer(nn.Module):
    """A pre-LayerNorm layer (transformers' ``ModernBertEncoderLayer``): x + attention(attn_norm(x)), then
    + mlp(mlp_norm(.)); layer 0's ``attn_norm`` is the identity (the embeddings are normalised already)."""

    def __init__(self, cfg: BertConfig, index: int, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        self.index = index
        self.schemes = build_schemes(cfg) if schemes is None else schemes
        self.attn_norm = nn.Identity() if index == 0 else layer_norm(cfg, cfg.hidden_size)
        self.attention = BertAttention(cfg, PreNormAttentionOutput(cfg), self.schemes)
        self.mlp_norm = layer_norm(cfg, cfg.hidden_size)
        self.mlp = GatedMLP(cfg)
        self.hook_out = HookPoint()  # (batch, pos, d_model) hidden state after this layer (before final_norm)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None, positions: PassPositions | None = None) -> torch.Tensor:
        """As ``BertLayer.forward``."""
        bias, state = positions.for_layer(self.schemes, self.index) if positions is not None else (bias, {})
        attended = self.attention.output(self.attention.self(self.attn_norm(x), bias, state), x)
        return self.hook_out(attended + self.mlp(self.mlp_norm(attended)))


class BertEncoder(nn.Module):
    """The layers. With ``share_layers`` (ALBERT) every layer is its own module, with its own hook
    points, but holds the first layer's Linear and LayerNorm modules (the same objects): one set of
    parameters, run ``num_hidden_layers`` times, captured and edited per layer. The state dict then
    has that set once, under ``layer.0``; loading fills the other layers from it."""

    def __init__(self, cfg: BertConfig, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        schemes = build_schemes(cfg) if schemes is None else schemes
        self.relative_attention_bias = self.rel_embeddings = self.LayerNorm = None  # a scheme's shared tables
        for scheme in schemes:
            scheme.encoder_parts(self)  # relative/alibi: hook_position_bias; disentangled: rel_embeddings; rotary
        kind = PreNormLayer if cfg.norm_placement == "pre" else BertLayer
        if cfg.share_layers:  # ALBERT: the followers are made without memory of their own, then given the first's
            self.layer = nn.ModuleList([kind(cfg, 0, schemes)])
            for i in range(1, cfg.num_hidden_layers):
                with torch.device("meta"):  # a layer's worth of parameters per follower would be n layers' memory
                    follower = kind(cfg, i, schemes)
                share_parameters(self.layer[0], follower)
                self.layer.append(follower)
        else:
            self.layer = nn.ModuleList(kind(cfg, i, schemes) for i in range(cfg.num_hidden_layers))
        self.share_layers = cfg.share_layers
        if cfg.share_layers:
            if any(t.is_meta for t in self.layer.parameters()) or any(t.is_meta for t in self.layer.buffers()):
                raise ValueError("a shared layer kept a tensor of its own")  # share_parameters missed one
            self.register_state_dict_post_hook(_drop_shared_copies)
            self.register_load_state_dict_pre_hook(_fill_shared_copies)


def share_parameters(owner: nn.Module, follower: nn.Module) -> None:
    """Put ``owner``'s parameterised submodules into ``follower`` at the same paths; ``follower``
    keeps its hook points (parameter-free modules), so captures stay per layer."""
    for path, module in list(owner.named_modules()):
        if path and next(module.parameters(recurse=False), None) is not None:
            parent, _, attr = path.rpartition(".")
            setattr(follower.get_submodule(parent) if parent else follower, attr, module)


def _drop_shared_copies(module: BertEncoder, state: dict[str, Any], prefix: str, _meta: Any) -> None:
    """The shared parameters once, under ``layer.0``: drop the other layers' names for them."""
    for i in range(1, len(module.layer)):
        for key in [k for k in state if k.startswith(f"{prefix}layer.{i}.")]:
            del state[key]


def _fill_shared_copies(module: BertEncoder, state: dict[str, Any], prefix: str, _meta: Any, _strict: bool,
                        _missing: list[str], _unexpected: list[str], errors: list[str]) -> None:
    """Every layer's names for the one set under ``layer.0``; a state dict with other values under
    another layer's names does not fit shared layers and is an error."""
    first = f"{prefix}layer.0."
    for key in [k for k in state if k.startswith(first)]:
        rest = key[len(first):]
        for i in range(1, len(module.layer)):
            other = f"{prefix}layer.{i}.{rest}"
            if other in state and not torch.equal(state[other], state[key]):
                errors.append(f"{other} differs from {key}, and the layers share their parameters")
            state[other] = state[key]
