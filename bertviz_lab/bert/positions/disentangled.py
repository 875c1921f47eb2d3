"""DeBERTa's disentangled attention (He, Liu, Gao & Chen 2021, "DeBERTa: Decoding-enhanced BERT with
Disentangled Attention", ICLR; DeBERTa-v3: He, Gao & Chen 2023, "DeBERTaV3: Improving DeBERTa using
ELECTRA-Style Pre-Training with Gradient-Disentangled Embedding Sharing", ICLR), as transformers computes
it (``transformers/models/deberta_v2/modeling_deberta_v2.py``: ``DisentangledSelfAttention``,
``disentangled_attention_bias``, ``build_relative_position``, ``make_log_bucket_position``).

Why a module of its own: a DeBERTa score is a sum of parts that users want to see apart. Each token
has a content vector H_i; each offset i - j (bucketed) has a position vector P, one table shared by
every layer (``encoder.rel_embeddings``, layer-normalised once when ``norm_rel_ebd`` says
"layer_norm"). With Q = H W_q, K = H W_k and, from the table, Q_r = P W_q,r and K_r = P W_k,r (the
content projections themselves when ``share_att_key``, as in DeBERTa-v3):

    score_ij = [ Q_i . K_j  +  Q_i . K_r[d(i, j)]  +  K_j . Q_r[d(j, i)] ] / sqrt(d_head * (1 + terms))
               content-to-content   content-to-position    position-to-content

where d(i, j) = clamp(bucket(i - j) + span, 0, 2 span - 1) and ``terms`` counts the position terms the
config asks for (``pos_att_type``: "c2p", "p2c"). This module computes the buckets, the index tables
and the two position terms, each already divided by the scale, so that c2c + c2p + p2c + mask is
exactly the pre-softmax score the model uses (and each part has its hook point in the model).

The offsets come from the token indices 0..n-1 (not the position ids), as in transformers; a
DeBERTa-v3 model has no absolute positions at all (``position_biased_input`` false). The "disentangled"
position scheme (``DisentangledAttention``) adds the table, the projections and the hook points, and computes the
attention of a layer from these parts.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..encoder.hook_spot import SELF, HookSpot
from ..encoder.hooks import HookPoint
from .scheme import Geometry, PositionScheme, cosine_matrix, register

TERMS = ("c2p", "p2c")  # the position terms a config may name, in transformers' spelling


def position_terms(value: Any) -> tuple[str, ...]:
    """``pos_att_type`` as transformers reads it: None, a list, or "p2c|c2p" -> a tuple of names."""
    if value is None:
        return ()
    names = [x.strip().lower() for x in (value.split("|") if isinstance(value, str) else value)]
    names = [x for x in names if x and x != "none"]
    unknown = sorted(set(names) - set(TERMS))
    if unknown:
        raise ValueError(f"pos_att_type {unknown} is not supported (only {', '.join(TERMS)})")
    return tuple(names)


@dataclass(frozen=True)
class DisentangledSpec:
    """The DeBERTa-v2 config fields the attention reads, with transformers' defaults."""

    terms: tuple[str, ...]  # "c2p" and/or "p2c"
    relative_attention: bool
    position_buckets: int  # > 0: offsets are bucketed logarithmically into this many per side
    max_relative_positions: int  # the largest offset the buckets reach (max_position_embeddings if < 1)
    share_att_key: bool  # position projections = the content projections (DeBERTa-v3)
    layer_norm: bool  # the shared table is layer-normalised before use (norm_rel_ebd "layer_norm")

    @classmethod
    def from_config(cls, extra: Mapping[str, Any], max_position_embeddings: int) -> DisentangledSpec:
        max_relative = int(extra.get("max_relative_positions", -1))
        norms = [x.strip() for x in str(extra.get("norm_rel_ebd", "none")).lower().split("|")]
        return cls(terms=position_terms(extra.get("pos_att_type")),
                   relative_attention=bool(extra.get("relative_attention", False)),
                   position_buckets=int(extra.get("position_buckets", -1)),
                   max_relative_positions=max_relative if max_relative >= 1 else int(max_position_embeddings),
                   share_att_key=bool(extra.get("share_att_key", False)),
                   layer_norm="layer_norm" in norms)

    @property
    def span(self) -> int:
        """Offsets each side of 0 that have their own row: the table has 2 * span rows."""
        return self.position_buckets if self.position_buckets > 0 else self.max_relative_positions

    @property
    def scale_factor(self) -> int:
        """1 + the number of position terms: scores are divided by sqrt(d_head * this) (He et al. 2021, eq. 4),
        also when ``relative_attention`` is off, as transformers does."""
        return 1 + len(self.terms)


def scale_root(d_head: int, factor: int) -> torch.Tensor:
    """sqrt(d_head * factor) as transformers computes it (a float32 scalar tensor)."""
    return torch.sqrt(torch.tensor(d_head, dtype=torch.float) * factor)


def log_bucket_position(relative: torch.Tensor, bucket_size: int, max_position: int) -> torch.Tensor:
    """Offsets under ``bucket_size // 2`` in either direction kept as they are; longer ones on a log scale up to
    ``max_position`` (transformers' ``make_log_bucket_position``; a float tensor of whole numbers)."""
    sign = torch.sign(relative)
    mid = bucket_size // 2
    abs_pos = torch.where((relative < mid) & (relative > -mid), torch.tensor(mid - 1).type_as(relative),
                          torch.abs(relative))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid))
                         * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative.type_as(log_pos), log_pos * sign)


def relative_positions(n: int, spec: DisentangledSpec, device: torch.device | str = "cpu") -> torch.Tensor:
    """(query, key) long: query index - key index, bucketed when the config has buckets."""
    index = torch.arange(n, dtype=torch.long, device=device)
    relative = index[:, None] - index[None, :]  # (query, key)
    if spec.position_buckets > 0 and spec.max_relative_positions > 0:
        relative = log_bucket_position(relative, spec.position_buckets, spec.max_relative_positions)
    return relative.to(torch.long)


@dataclass(frozen=True)
class DisentangledPositions:
    """What every layer of one forward pass reads: the (normalised) relative table and the rows each pair uses."""

    table: torch.Tensor  # (2 span, d_model) after the encoder's LayerNorm
    c2p_index: torch.Tensor  # (query, key) row of the table for the key's offset seen from the query
    p2c_index: torch.Tensor  # (key, query) row for the query's offset seen from the key (before the transpose)


def positions_for(table: torch.Tensor, n: int, spec: DisentangledSpec) -> DisentangledPositions:
    """The rows of the relative table that n tokens use (transformers: ``c2p_pos`` and ``p2c_pos``)."""
    relative = relative_positions(n, spec, table.device)  # (query, key)
    span = spec.span
    c2p = torch.clamp(relative + span, 0, 2 * span - 1)  # (query, key)
    p2c = torch.clamp(-relative + span, 0, 2 * span - 1)  # (key, query): the same offsets, seen from the key
    return DisentangledPositions(table[: 2 * span], c2p, p2c)


def content_to_position(q: torch.Tensor, pos_k: torch.Tensor, index: torch.Tensor,
                        root: torch.Tensor) -> torch.Tensor:
    """Q_i . K_r[d(i, j)] / root: (batch, heads, query, key) from q (batch, heads, query, d_head) and the
    table's keys pos_k (1, heads, 2 span, d_head)."""
    scores = torch.matmul(q, pos_k.transpose(-1, -2))  # (batch, heads, query, 2 span)
    gathered = torch.gather(scores, -1, index.expand(*scores.shape[:2], *index.shape))  # (batch, heads, query, key)
    return gathered / root.to(gathered.dtype)


def position_to_content(k: torch.Tensor, pos_q: torch.Tensor, index: torch.Tensor,
                        root: torch.Tensor) -> torch.Tensor:
    """K_j . Q_r[d(j, i)] / root: (batch, heads, query, key) from k (batch, heads, key, d_head) and the
    table's queries pos_q (1, heads, 2 span, d_head)."""
    scores = torch.matmul(k, pos_q.transpose(-1, -2))  # (batch, heads, key, 2 span)
    gathered = torch.gather(scores, -1, index.expand(*scores.shape[:2], *index.shape))  # (batch, heads, key, query)
    return gathered.transpose(-1, -2) / root.to(gathered.dtype)  # (batch, heads, query, key)


@register
class DisentangledAttention(PositionScheme):
    name = "disentangled"
    # the parts of every layer's scores, each divided by sqrt(d_head * (1 + terms)); c2c + c2p + p2c + the mask is
    # the "scores" spot. c2p / p2c exist where the config's pos_att_type names them.
    hooks = {
        "c2c": HookSpot(f"{SELF}.hook_c2c", "BertSelfAttention (DeBERTa)", "(batch, heads, query, key)",
                        "DeBERTa: content-to-content term, query content . key content, scaled"),
        "c2p": HookSpot(f"{SELF}.hook_c2p", "BertSelfAttention (DeBERTa)", "(batch, heads, query, key)",
                        "DeBERTa: content-to-position term, query content . the key's relative position, scaled"),
        "p2c": HookSpot(f"{SELF}.hook_p2c", "BertSelfAttention (DeBERTa)", "(batch, heads, query, key)",
                        "DeBERTa: position-to-content term, the query's relative position . key content, scaled"),
    }
    label = "disentangled attention (its c2p and p2c score terms)"
    citation = "He et al. 2021 (DeBERTa)"
    input_only = False

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        self.spec = DisentangledSpec.from_config(cfg.extra, cfg.max_position_embeddings)

    def encoder_parts(self, encoder: nn.Module) -> None:
        spec = self.spec
        encoder.rel_embeddings = nn.Embedding(2 * spec.span, self.cfg.hidden_size) if spec.relative_attention else None
        # (transformers makes it whenever norm_rel_ebd says so, unused without relative attention: so do we)
        encoder.LayerNorm = nn.LayerNorm(self.cfg.hidden_size, eps=self.cfg.layer_norm_eps) if spec.layer_norm else None

    def attention_parts(self, attention: nn.Module) -> None:
        """Its own scale, the position projections when they are not the content ones, and a hook point per score
        term (transformers' ``DisentangledSelfAttention``)."""
        spec, d = self.spec, self.cfg.hidden_size
        attention.root = scale_root(attention.head_dim, spec.scale_factor)  # sqrt(d_head * (1 + terms)), float32
        attention.hook_c2c = HookPoint()  # (batch, heads, query, key) content-to-content, scaled
        if spec.relative_attention and not spec.share_att_key:
            if "c2p" in spec.terms:
                attention.pos_key_proj = nn.Linear(d, d)
            if "p2c" in spec.terms:
                attention.pos_query_proj = nn.Linear(d, d)
        if spec.relative_attention and "c2p" in spec.terms:
            attention.hook_c2p = HookPoint()  # (batch, heads, query, key) content-to-position, scaled
        if spec.relative_attention and "p2c" in spec.terms:
            attention.hook_p2c = HookPoint()  # (batch, heads, query, key) position-to-content, scaled

    def pass_state(self, model: nn.Module, position_ids: torch.Tensor, bias: torch.Tensor | None, n: int,
                   dtype: torch.dtype) -> DisentangledPositions | None:
        """The relative table (after the encoder's LayerNorm) and the rows n tokens use; None without relative
        attention."""
        encoder = model.bert.encoder
        if encoder.rel_embeddings is None:
            return None
        table = encoder.rel_embeddings.weight  # (2 span, d_model)
        if encoder.LayerNorm is not None:
            table = encoder.LayerNorm(table)
        return positions_for(table, n, self.spec)

    def position_terms(self, attention: nn.Module, q: torch.Tensor, k: torch.Tensor,
                       positions: DisentangledPositions | None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The c2p and p2c terms (batch, heads, query, key), each divided by the scale; None where absent."""
        spec = self.spec
        if not spec.relative_attention or not spec.terms:
            return None, None
        if positions is None:
            raise ValueError("a DeBERTa layer needs the relative positions of its input: pass the model's "
                             "PassPositions to the layer")
        table = positions.table[None]  # (1, 2 span, d_model)
        c2p = p2c = None
        if "c2p" in spec.terms:
            proj = attention.key if spec.share_att_key else attention.pos_key_proj
            pos_k = attention.split(proj(table))  # (1, heads, 2 span, d_head)
            c2p = content_to_position(q, pos_k, positions.c2p_index, attention.root)
        if "p2c" in spec.terms:
            proj = attention.query if spec.share_att_key else attention.pos_query_proj
            pos_q = attention.split(proj(table))  # (1, heads, 2 span, d_head)
            p2c = position_to_content(k, pos_q, positions.p2c_index, attention.root)
        return c2p, p2c

    def attend(self, attention: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               bias: torch.Tensor | None, state: DisentangledPositions | None) -> torch.Tensor:
        """c2c + c2p + p2c (+ mask) through their hook points when anyone looks, else the position terms as SDPA's
        additive mask with DeBERTa's scale. (batch, heads, query, d_head)."""
        c2p, p2c = self.position_terms(attention, q, k, state)
        if attention.explicit("hook_c2c", "hook_c2p", "hook_p2c", "hook_scores", "hook_pattern"):
            scores = attention.hook_c2c(torch.matmul(q, k.transpose(-1, -2) / attention.root.to(q.dtype)))  # (b, h, q, k)
            position = None
            if c2p is not None:
                position = attention.hook_c2p(c2p)
            if p2c is not None:
                position = attention.hook_p2c(p2c) if position is None else position + attention.hook_p2c(p2c)
            scores = scores if position is None else scores + position
            return attention.attend(scores if bias is None else scores + bias, v)
        mask = None
        for term in (c2p, p2c, bias):
            if term is not None:
                mask = term if mask is None else mask + term
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0 / float(attention.root),
                                              dropout_p=attention.dropout.p if attention.training else 0.0)

    def geometry(self, model: nn.Module, n: int) -> Geometry | None:
        """Cosine similarity of the relative-position rows n tokens read, each labelled by its bucketed offset."""
        positions = self.pass_state(model, torch.arange(n)[None], None, n, torch.float32)
        if positions is None:
            return None
        rows = sorted(set(positions.c2p_index.flatten().tolist()))  # the table rows these n tokens read
        labels = [f"{row - self.spec.span:+d}" if row != self.spec.span else "0" for row in rows]
        return Geometry(f"{self.label}: similarity of the relative-position vectors", cosine_matrix(positions.table[rows]),
                        labels, labels, "offset (query - key, bucketed)", "offset",
                        "the vectors the c2p and p2c terms read for each offset; one table for every layer")
