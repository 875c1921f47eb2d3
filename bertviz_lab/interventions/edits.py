"""The low-level pieces interventions are made of: additive attention masks, hook edits that
zero or replace activations, and the seed material's sinusoidal position table."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from ..bert import BertLab, Edit, layer_hook
from ..bert.positions.sinusoidal import sinusoidal_table


def directional_allowed(n: int, direction: str, sinks: Sequence[int] = ()) -> torch.Tensor:
    """(query, key) bool: which keys each query may see. left-only: keys <= query; right-only:
    keys >= query. With ``sinks`` (the [CLS]/[SEP] positions) the masks are symmetric: every query
    may also see every sink, and a sink query sees only itself, so neither direction keeps an
    attention sink the other loses."""
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    allowed = {"left-only": k <= q, "right-only": k >= q}[direction].clone()
    if len(sinks):
        sink = torch.zeros(n, dtype=torch.bool)
        sink[list(sinks)] = True
        allowed |= sink[None, :]
        allowed[sink] = torch.eye(n, dtype=torch.bool)[sink]
    return allowed


def bias_from_allowed(allowed: torch.Tensor) -> torch.Tensor:
    """(query, key) bool -> additive mask (1, 1, query, key)."""
    bias = torch.zeros(allowed.shape)
    bias[~allowed] = torch.finfo(torch.float32).min
    return bias[None, None]


def directional_bias(n: int, direction: str, sinks: Sequence[int] = ()) -> torch.Tensor:
    """Additive mask (1, 1, query, key) of ``directional_allowed``."""
    return bias_from_allowed(directional_allowed(n, direction, sinks))


def _draw(pools: Sequence[list[int]], count: int, generator: torch.Generator) -> list[int]:
    """``count`` keys drawn at random, from the first pool first, then (if it runs out) the next."""
    drawn: list[int] = []
    for pool in pools:
        if len(drawn) >= count or not pool:
            continue
        order = torch.randperm(len(pool), generator=generator)[:count - len(drawn)]
        drawn += [pool[int(i)] for i in order]
    return drawn


def matched_random_allowed(allowed: torch.Tensor, sinks: Sequence[int], seed: int) -> torch.Tensor:
    """The control of a directional mask: it differs from the mask only in *which* keys are hidden.
    Each non-sink query hides as many sink keys and as many other keys (never itself) as ``allowed``
    hides for it, drawn at random (seeded) from the keys the mask keeps where possible, then from
    those it hides: so the control tells "left/right context" apart from "fewer keys", and with
    strict masks it hides [CLS]/[SEP] exactly as often as the mask does. Sink queries keep their row
    of ``allowed`` (with symmetric sinks they see only themselves in every condition)."""
    n = allowed.shape[0]
    generator = torch.Generator().manual_seed(seed)
    sink = set(int(s) for s in sinks)
    out = allowed.clone()
    for query in range(n):
        if query in sink:
            continue
        out[query] = True
        for group in ([k for k in range(n) if k in sink], [k for k in range(n) if k != query and k not in sink]):
            hidden = [k for k in group if not allowed[query, k]]
            kept = [k for k in group if allowed[query, k]]
            out[query, torch.tensor(_draw((kept, hidden), len(hidden), generator), dtype=torch.long)] = False
    return out


def hidden_keys_bias(n: int, positions: Sequence[int]) -> torch.Tensor:
    """Additive mask (1, 1, 1, key) that removes the given keys from every query's attention."""
    bias = torch.zeros((1, 1, 1, n))
    bias[..., list(positions)] = torch.finfo(torch.float32).min
    return bias


def replacement_context(reference: torch.Tensor, n_positions: int) -> torch.Tensor:
    """The head outputs that replace a layer's real ones, (heads, positions, d_head): a mean output
    (heads, d_head) at every position, or another input's outputs aligned to this one's positions
    (heads, positions, d_head; see resample.ResamplePool). Positions never wrap."""
    if reference.dim() == 2:
        return reference[:, None, :].expand(-1, n_positions, -1)
    if reference.shape[1] != n_positions:
        raise ValueError(f"replacement outputs cover {reference.shape[1]} positions but the input has {n_positions}; "
                         "they must be aligned to its positions (nothing wraps)")
    return reference


def ablate_heads_edit(heads_of_layer: Sequence[int], reference: torch.Tensor | None = None) -> Edit:
    """Replace the per-head context of the given heads (their contribution to the output): by zero,
    or by ``reference`` (see ``replacement_context``)."""
    heads = list(heads_of_layer)

    def edit(context: torch.Tensor, _name: str) -> torch.Tensor:  # (batch, heads, query, d_head)
        context = context.clone()
        if reference is None:
            context[:, heads] = 0
        else:
            context[:, heads] = replacement_context(reference, context.shape[2])[heads].to(context)
        return context

    return edit


def batched_ablation_edits(n_layers: int, n_heads: int, rows: Sequence[tuple[int, int] | None],
                           device: torch.device, reference: torch.Tensor | None = None) -> dict[str, Edit]:
    """One edit per layer for a batch whose row b replaces head rows[b]'s output (None = nothing):
    by zero, by ``reference[layer]`` (heads, d_head) — a mean output — or (heads, positions, d_head) —
    another input's outputs (resample ablation, or activation patching from a donor input)."""
    keep = torch.ones((n_layers, len(rows), n_heads, 1, 1), device=device)
    for b, lh in enumerate(rows):
        if lh is not None:
            keep[lh[0], b, lh[1]] = 0
    edits: dict[str, Edit] = {}
    for layer in range(n_layers):
        scale = keep[layer]  # (batch, heads, 1, 1)
        other = None if reference is None else reference[layer].to(device)

        def edit(context: torch.Tensor, _name: str, scale=scale, other=other) -> torch.Tensor:
            kept = context * scale.to(context.dtype)  # (batch, heads, query, d_head)
            if other is None:
                return kept
            replacement = replacement_context(other, context.shape[2])[None]  # (1, heads, query, d_head)
            return kept + (1 - scale.to(context.dtype)) * replacement.to(context.dtype)

        edits[layer_hook(layer, "context")] = edit
    return edits


def learned_positions(model: BertLab, n_positions: int) -> torch.Tensor:
    """The rows of the position table the first n positions read (RoBERTa's start after an offset)."""
    offset = model.config.position_offset
    return model.bert.embeddings.position_embeddings.weight[offset:offset + n_positions].detach().float()


def scaled_sinusoidal(model: BertLab, n_positions: int) -> torch.Tensor:
    """Sinusoidal table for the first n positions, each row rescaled to the norm of the learned row it
    replaces (position 0 included, whose learned norm is several times the others' in MiniLM): the
    intervention changes the positions' directions only, as its control (``random_positions``) does. A
    single mean norm for every row would also change position 0's size, which the control keeps."""
    learned = learned_positions(model, n_positions)
    table = sinusoidal_table(n_positions, learned.shape[1])
    return table / table.norm(dim=1, keepdim=True) * learned.norm(dim=1, keepdim=True)


def random_positions(model: BertLab, n_positions: int, seed: int) -> torch.Tensor:
    """The control for replaced positions: random directions with each learned row's own norm."""
    learned = learned_positions(model, n_positions)
    random = torch.randn(learned.shape, generator=torch.Generator().manual_seed(seed))
    return random / random.norm(dim=1, keepdim=True) * learned.norm(dim=1, keepdim=True)


def replace_positions_edit(replacement: torch.Tensor) -> Edit:
    def edit(position: torch.Tensor, _name: str) -> torch.Tensor:  # (batch|1, pos, d_model)
        n = position.shape[-2]
        return replacement[:n].to(position.device, position.dtype).expand_as(position)

    return edit


def zero_edit(x: torch.Tensor, _name: str) -> torch.Tensor:
    return torch.zeros_like(x)


def key_permutations(heads: int, n: int, seed: int) -> torch.Tensor:
    """(heads, query, key) indices: for every head and query, its own seeded random order of the keys."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand((heads, n, n), generator=generator).argsort(-1)  # (heads, query, key)


def permuted_keys(bias: torch.Tensor, seed: int) -> torch.Tensor:
    """``bias`` (batch, heads, query, key) with each (head, query) row's values put on randomly chosen keys:
    every row keeps its multiset of values (so each head's as well) and loses which offset held which."""
    order = key_permutations(bias.shape[1], bias.shape[-1], seed).to(bias.device)  # (heads, query, key)
    return bias.gather(-1, order[None].expand_as(bias))  # (batch, heads, query, key)


def remove_permuted_bias_edit(seed: int) -> Edit:
    """The relative bias minus its own key-permuted copy (``permuted_keys``): what is removed has each row's
    values, so the same size and distribution as the bias itself, but no relation to the key's offset."""

    def edit(bias: torch.Tensor, _name: str) -> torch.Tensor:  # (1, heads, query, key)
        return bias - permuted_keys(bias, seed)

    return edit
