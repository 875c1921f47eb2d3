"""BERT in plain PyTorch, with hook points where users look and intervene.

The module tree *is* the Hugging Face checkpoint format (``bert.encoder.layer.0.attention.
self.query.weight``, ``cls.predictions.transform.dense.weight``, ``cls.predictions.bias``,
``cls.seq_relationship.weight``), so real checkpoints load with ``strict=True``. The MLM
decoder is tied to the word embeddings and is therefore not a module of its own. A sequence
classifier's head is ``classifier`` (bert/encoder/classifier.py), whatever the family calls it.

The architecture is a set of typed axes in the config, never a family: the position schemes (``positions``:
one file each under bert/positions/, which add their own modules and hook points and act where a forward pass asks
them), the norm placement (post: BERT; pre: ModernBERT's ``PreNormLayer`` with ``attn_norm``/``mlp_norm``), the MLP
kind (dense, or the gated ``mlp.Wi``/``mlp.Wo``), a final norm (``bert.final_norm``) and shared layers (ALBERT). Every
layer takes the pass's ``PassPositions`` (``BertLab.pass_positions``) as its third argument.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..runtime.budget import charge, check_time
from .classifier import SequenceClassifier, class_labels
from ..positions.disentangled import DisentangledSpec
from .hook_table import HOOK_TABLE, hook_name
from .hooks import Edit, HookPoint, active_run, hook_run, name_hook_points
from ..positions import PassPositions, PositionScheme
from ..positions import build as build_schemes
from ..positions.rotary import RotarySpec

NORM_PLACEMENTS = ("post", "pre")
MLP_KINDS = ("dense", "gated")


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    # The rest of the BERT family (bert/loading/families.py): ELECTRA's smaller embeddings, RoBERTa's
    # first position, the MLM head's own activation where it is not hidden_act.
    embedding_size: int | None = None  # None: the hidden size (no projection after the embeddings)
    position_offset: int = 0  # position i reads row i + offset of the position table
    head_act: str | None = None  # None: hidden_act
    share_layers: bool = False  # ALBERT: every layer runs the first layer's parameters
    relative_attention_num_buckets: int = 0  # the "relative" scheme's buckets (MPNet: 32)
    # The architecture's axes (never a family): position schemes by name (bert/positions/), in order
    positions: tuple[str, ...] = ("learned",)
    norm_placement: str = "post"  # "post": LayerNorm after each residual sum (BERT); "pre": before each block
    mlp: str = "dense"  # "dense": BERT's intermediate/output; "gated": a GeGLU Wi/Wo (ModernBERT)
    final_norm: bool = False  # a LayerNorm on the last layer's output (pre-norm encoders)
    model_type: str = "bert"
    # Which parts the checkpoint carries; set by the loader from the weights it finds.
    has_pooler: bool = True
    has_mlm_head: bool = True
    has_nsp_head: bool = True
    n_classes: int = 0  # outputs of a sequence classifier's head; 0: none
    classifier_act: str | None = None  # its activation after the dense layer (None: BERT's pooler instead)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BertConfig:
        known = {f.name for f in fields(cls)} - {"extra"}
        cfg = cls(**{k: v for k, v in raw.items() if k in known})
        cfg.extra = {k: v for k, v in raw.items() if k not in known}
        if cfg.hidden_size % cfg.num_attention_heads:
            raise ValueError(
                f"hidden_size {cfg.hidden_size} is not a multiple of "
                f"num_attention_heads {cfg.num_attention_heads}"
            )
        pe = cfg.extra.get("position_embedding_type", "absolute")
        if pe != "absolute":
            raise ValueError(f"position_embedding_type {pe!r} is not supported (only 'absolute')")
        cfg.positions = tuple(str(name) for name in cfg.positions)  # JSON gives a list
        if cfg.norm_placement not in NORM_PLACEMENTS:
            raise ValueError(f"norm_placement {cfg.norm_placement!r} is not one of {', '.join(NORM_PLACEMENTS)}")
        if cfg.mlp not in MLP_KINDS:
            raise ValueError(f"mlp {cfg.mlp!r} is not one of {', '.join(MLP_KINDS)}")
        if (cfg.norm_placement == "pre") != (cfg.mlp == "gated"):
            raise ValueError("a pre-norm layer comes with the gated MLP (ModernBERT's), a post-norm one with the dense")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["positions"] = list(out["positions"])
        out.update(out.pop("extra"))
        return out

    @property
    def position_biased_input(self) -> bool:
        """A learned absolute table is added to the token embeddings (its shape is checked against the weights)."""
        return "learned" in self.positions

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def embedding_dim(self) -> int:
        return self.embedding_size or self.hidden_size

    @property
    def absolute_positions_only(self) -> bool:
        """Every scheme acts on the input alone (learned or sinusoidal vectors, or none): a token's output depends
        on the others only through attention, and leaving a token out of the input (the rest keeping their
        position ids) equals hiding it from every query on every layer."""
        return all(scheme.input_only for scheme in build_schemes(self))

    @property
    def disentangled_spec(self) -> DisentangledSpec | None:
        """The disentangled scheme's settings (DeBERTa's config fields), or None without that scheme."""
        return (DisentangledSpec.from_config(self.extra, self.max_position_embeddings)
                if "disentangled" in self.positions else None)

    @property
    def rotary_spec(self) -> RotarySpec | None:
        """The rotary scheme's layer types, thetas and window, or None without that scheme."""
        return RotarySpec.from_config(self.extra, self.num_hidden_layers) if "rotary" in self.positions else None

    def has_bias(self, part: str) -> bool:
        """Whether ``part``'s layers have biases: ``norm``, ``attention``, ``mlp`` or ``classifier`` (the config's
        ``<part>_bias``, false in ModernBERT's; every other family has them)."""
        return bool(self.extra.get(f"{part}_bias", True))

    @property
    def norm_bias(self) -> bool:
        return self.has_bias("norm")

    @property
    def max_tokens(self) -> int:
        """Tokens one input may have: the position table's rows from the offset on."""
        return self.max_position_embeddings - self.position_offset


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


class BertPooler(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))  # (batch, d_model) from [CLS]


class BertModel(nn.Module):
    def __init__(self, cfg: BertConfig, schemes: tuple[PositionScheme, ...] | None = None) -> None:
        super().__init__()
        schemes = build_schemes(cfg) if schemes is None else schemes
        self.embeddings = BertEmbeddings(cfg, schemes)
        # ELECTRA: embeddings smaller than the hidden size are projected up before the encoder.
        self.embeddings_project = nn.Linear(cfg.embedding_size, cfg.hidden_size) if cfg.embedding_size else None
        self.encoder = BertEncoder(cfg, schemes)
        self.pooler = BertPooler(cfg) if cfg.has_pooler else None
        # ModernBERT normalises the last layer's output (pre-norm layers leave it unnormalised)
        self.final_norm = layer_norm(cfg, cfg.hidden_size) if cfg.final_norm else None
        if self.final_norm is not None:
            self.hook_final = HookPoint()  # (batch, pos, d_model) final_norm(last layer's output)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        bias = cfg.has_bias("classifier")  # ModernBERT's head.dense may have none
        self.dense = nn.Linear(cfg.hidden_size, cfg.embedding_dim, bias=bias)  # back to the (tied) embedding size
        self.act = activation(cfg.head_act or cfg.hidden_act)
        self.LayerNorm = layer_norm(cfg, cfg.embedding_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """MLM head; the decoder matrix is the word embedding matrix (tied), plus its own bias."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(cfg)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.hook_logits = HookPoint()  # (..., vocab)

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        return self.hook_logits(F.linear(self.transform(hidden), word_embeddings, self.bias))


class BertHeads(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        if cfg.has_mlm_head:
            self.predictions = BertLMPredictionHead(cfg)
        if cfg.has_nsp_head:
            self.seq_relationship = nn.Linear(cfg.hidden_size, 2)
            self.hook_nsp_logits = HookPoint()  # (batch, 2): [is next, is random]


@dataclass
class BertForwardOutput:
    last_hidden_state: torch.Tensor  # (batch, pos, d_model)
    pooled: torch.Tensor | None  # (batch, d_model)
    mlm_logits: torch.Tensor | None  # (batch, pos, vocab), or (n_selected, vocab) with mlm_positions
    nsp_logits: torch.Tensor | None  # (batch, 2)
    class_logits: torch.Tensor | None = None  # (batch, classes) of a sequence classifier


class BertLab(nn.Module):
    """Encoder plus whichever pretraining heads the checkpoint has."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        if cfg.has_nsp_head and not cfg.has_pooler:
            raise ValueError("an NSP head needs the pooler")
        if cfg.n_classes and cfg.classifier_act is None and not cfg.has_pooler:
            raise ValueError("a BERT sequence classifier needs the pooler")
        self.config = cfg
        self.schemes = build_schemes(cfg)  # the position schemes, made once for every module (bert/positions/)
        self.bert = BertModel(cfg, self.schemes)
        self.cls = BertHeads(cfg) if (cfg.has_mlm_head or cfg.has_nsp_head) else None
        self.classifier = (SequenceClassifier(cfg.hidden_size, cfg.n_classes, cfg.classifier_act,
                                              float(cfg.extra.get("classifier_dropout") or cfg.hidden_dropout_prob))
                           if cfg.n_classes else None)
        self.class_labels: list[str] = class_labels(cfg.n_classes, cfg.extra) if cfg.n_classes else []
        self.hook_names: list[str] = name_hook_points(self)

    @property
    def has_mlm_head(self) -> bool:
        return self.config.has_mlm_head

    @property
    def has_nsp_head(self) -> bool:
        return self.config.has_nsp_head

    def hooks(
        self,
        capture: list[str] | tuple[str, ...] = (),
        edits: dict[str, Edit | list[Edit]] | None = None,
        detach: bool = True,
    ):
        """Context manager: capture/edit at the named hook points (glob patterns allowed)."""
        return hook_run(self.hook_names, capture=capture, edits=edits, detach=detach)

    def attention_bias(
        self, attention_mask: torch.Tensor | None, extra_bias: torch.Tensor | None, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """Additive bias broadcastable to (batch, heads, query, key); None if nothing is masked."""
        bias = None
        if attention_mask is not None and not bool(attention_mask.all()):
            keep = attention_mask[:, None, None, :].to(dtype)  # (batch, 1, 1, key)
            bias = (1.0 - keep) * torch.finfo(dtype).min
        if extra_bias is not None:
            extra_bias = extra_bias.to(dtype)
            bias = extra_bias if bias is None else torch.clamp(bias + extra_bias, min=torch.finfo(dtype).min)
        return bias

    def scheme(self, name: str) -> PositionScheme | None:
        """The loaded model's position scheme called ``name``, or None: what views and interventions ask."""
        return next((scheme for scheme in self.schemes if scheme.name == name), None)

    def pass_positions(self, position_ids: torch.Tensor, bias: torch.Tensor | None, n: int,
                       dtype: torch.dtype) -> PassPositions:
        """What every layer of one pass reads: ``bias`` (the mask) plus each scheme's score bias (relative buckets,
        ALiBi: through ``encoder.hook_position_bias``, so both the fused and the explicit attention see it), and
        each scheme's per-pass state (rotary angles and window, the disentangled table and its rows)."""
        for scheme in self.schemes:
            added = scheme.score_bias(self, position_ids, n, dtype)  # (batch | 1, heads, query, key) or None
            if added is not None:
                bias = added if bias is None else torch.clamp(bias + added, min=torch.finfo(dtype).min)
        state = {}
        for scheme in self.schemes:
            value = scheme.pass_state(self, position_ids, bias, n, dtype)
            if value is not None:
                state[scheme.name] = value
        return PassPositions(bias, state)

    def forward(
        self,
        input_ids: torch.Tensor,  # (batch, pos)
        token_type_ids: torch.Tensor | None = None,  # (batch, pos)
        attention_mask: torch.Tensor | None = None,  # (batch, pos) 1 = real token, 0 = padding
        position_ids: torch.Tensor | None = None,  # (batch | 1, pos)
        attention_bias: torch.Tensor | None = None,  # additive, broadcastable to (batch, heads, q, k)
        mlm_positions: torch.Tensor | None = None,  # (batch, pos) bool: where to compute MLM logits
        compute_mlm: bool = True,
    ) -> BertForwardOutput:
        b, t = input_ids.shape
        if t > self.config.max_tokens:
            raise ValueError(f"{t} tokens exceed the model maximum of {self.config.max_tokens}")
        charge(input_ids, attention_mask, mlm_positions, compute_mlm and self.config.has_mlm_head)  # request caps
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if position_ids is None:
            position_ids = torch.arange(t, device=input_ids.device)[None]  # (1, pos)
        elif not any(scheme.reads_position_ids for scheme in self.schemes):
            raise ValueError(f"this model has no absolute positions, so position ids would change nothing; its positions "
                             f"are {' and '.join(s.label for s in self.schemes)}")
        dtype = self.bert.embeddings.word_embeddings.weight.dtype
        hidden = self.bert.embeddings(input_ids, token_type_ids, position_ids)  # (batch, pos, d_emb)
        if self.bert.embeddings_project is not None:
            hidden = self.bert.embeddings_project(hidden)  # (batch, pos, d_model)
        positions = self.pass_positions(position_ids, self.attention_bias(attention_mask, attention_bias, dtype), t, dtype)
        for layer in self.bert.encoder.layer:
            check_time()  # a request past its time stops here, not after the whole pass (bert/runtime/budget.py)
            hidden = layer(hidden, positions.bias, positions)
        if self.bert.final_norm is not None:
            hidden = self.bert.hook_final(self.bert.final_norm(hidden))  # (batch, pos, d_model)
        pooled = self.bert.pooler(hidden) if self.bert.pooler is not None else None
        mlm_logits = nsp_logits = None
        if self.cls is not None and self.config.has_mlm_head and compute_mlm:
            selected = hidden if mlm_positions is None else hidden[mlm_positions]  # (n, d_model)
            mlm_logits = self.cls.predictions(selected, self.bert.embeddings.word_embeddings.weight)
        if self.cls is not None and self.config.has_nsp_head:
            nsp_logits = self.cls.hook_nsp_logits(self.cls.seq_relationship(pooled))  # (batch, 2)
        class_logits = self.classifier(hidden, pooled) if self.classifier is not None else None  # (batch, classes)
        return BertForwardOutput(hidden, pooled, mlm_logits, nsp_logits, class_logits)


def layer_hook(layer: int, name: str) -> str:
    """Hook name inside layer ``layer`` (the hook table's): ``layer_hook(3, 'pattern')`` ->
    ``bert.encoder.layer.3.attention.self.hook_pattern``."""
    if not HOOK_TABLE[name].per_layer:
        raise KeyError(name)
    return hook_name(name, layer)



def init_weights(model: BertLab, seed: int = 0) -> BertLab:
    """BERT's initialisation (Hugging Face ``_init_weights``): Linear and Embedding weights
    N(0, initializer_range), biases 0, the padding row 0, LayerNorm 1 and 0. Seeded, and without
    touching the global random state."""
    std = float(model.config.extra.get("initializer_range", 0.02))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.copy_(torch.empty_like(module.weight).normal_(0.0, std, generator=generator))
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.zero_()
                if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                if module.bias is not None:  # ModernBERT's norms may have none
                    module.bias.zero_()
            elif isinstance(module, BertLMPredictionHead):
                module.bias.zero_()
    return model
