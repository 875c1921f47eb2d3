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
DeBERTa-v3 model has no absolute positions at all (``position_biased_input`` false).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

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
