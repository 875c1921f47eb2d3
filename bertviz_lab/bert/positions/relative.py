"""MPNet's relative positions (Song et al. 2020): on top of its learned absolute positions, every
attention score gets a learned bias per head that depends on the key's offset from the query,
bucketed as T5 does (Raffel et al. 2020): offsets under 8 in either direction each have their own
bucket, longer ones share logarithmically wider buckets up to 128, each direction its half.

One table (``bert.encoder.relative_attention_bias``, buckets x heads) serves every layer, and the
bias is computed once per forward pass from the token indices 0..n-1 (not the position ids, as
transformers' MPNet does), so shuffling or removing the absolute positions leaves it alone.
transformers buckets with 32 buckets and a maximum distance of 128 whatever the config says;
so does this module, for parity. The "relative" position scheme (``RelativeBias``) adds the table and
``encoder.hook_position_bias``, where interventions zero or shuffle the bias.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..encoder.hooks import HookPoint
from .scheme import POSITION_BIAS, Geometry, PositionScheme, register

BUCKETS = 32  # what transformers' MPNetEncoder.compute_position_bias passes, whatever the config says
MAX_DISTANCE = 128


def relative_position_bucket(relative: torch.Tensor, num_buckets: int = BUCKETS,
                             max_distance: int = MAX_DISTANCE) -> torch.Tensor:
    """Bucket of each offset key - query (same shape, long), as transformers' MPNet computes it."""
    n = -relative
    half = num_buckets // 2
    bucket = (n < 0).to(torch.long) * half  # keys after the query use the upper half
    n = torch.abs(n)
    max_exact = half // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (half - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, half - 1))
    return bucket + torch.where(is_small, n, large)


def position_buckets(n: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """(query, key) bucket of every pair of the first ``n`` tokens."""
    index = torch.arange(n, dtype=torch.long, device=device)
    return relative_position_bucket(index[None, :] - index[:, None])  # (query, key)


def relative_bias(table: nn.Embedding, n: int, dtype: torch.dtype) -> torch.Tensor:
    """The bias every layer adds to its scores: (1, heads, query, key)."""
    values = table(position_buckets(n, table.weight.device))  # (query, key, heads)
    return values.permute(2, 0, 1).unsqueeze(0).to(dtype)  # (1, heads, query, key)


@register
class RelativeBias(PositionScheme):
    name = "relative"
    hooks = {"position_bias": POSITION_BIAS}
    label = "relative-position bias buckets"
    citation = "Raffel et al. 2020 (T5); Song et al. 2020 (MPNet)"
    input_only = False

    def encoder_parts(self, encoder: nn.Module) -> None:
        encoder.relative_attention_bias = nn.Embedding(self.cfg.relative_attention_num_buckets,
                                                       self.cfg.num_attention_heads)
        encoder.hook_position_bias = HookPoint()  # (1, heads, query, key) added to every layer's scores

    def score_bias(self, model: nn.Module, position_ids: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
        encoder = model.bert.encoder
        return encoder.hook_position_bias(relative_bias(encoder.relative_attention_bias, n, dtype))

    def geometry(self, model: nn.Module, n: int) -> Geometry:
        """Each head's bias for each offset key - query from -(n-1) to n-1 (its bucket's learned value)."""
        offsets = torch.arange(-(n - 1), n)
        buckets = relative_position_bucket(offsets)  # (offsets,)
        values = model.bert.encoder.relative_attention_bias.weight.detach()[buckets].T  # (heads, offsets)
        return Geometry(f"{self.label}: the bias each head adds", values.float().cpu().numpy(),
                        [f"head {h + 1}" for h in range(values.shape[0])], [f"{o:+d}" if o else "0" for o in
                                                                             offsets.tolist()],
                        "head", "offset (key - query)", "what every layer adds to a head's score for a key this many "
                        "tokens away; offsets in one bucket share a value")
