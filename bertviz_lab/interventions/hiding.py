"""One input run with many sets of tokens hidden from every query on every layer (the hide-keys
intervention the faithfulness check, erasure and the class explanations use), in batched passes.

Hiding a token adds the most negative float to its key column of every layer's scores, so its
attention weight is exactly 0 for every query. On a model whose positions come from the position
table alone (``BertConfig.absolute_positions_only``) that is the same as leaving the token out of
the input while the others keep their position ids: nothing reads it, and only the outputs of the
tokens left are used here. Such rows are shorter, and a row that keeps 3 tokens of 32 costs a tenth
of a full one, so those models run the left-out rows, sorted by length and padded in groups;
the others (relative, disentangled or rotary positions, which read the sequence length) run every
row at full length with the bias. Both give the same numbers up to float rounding (a test compares
them).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..lab import Encoded, Lab

HIDDEN = torch.finfo(torch.float32).min
ROWS_PER_PASS = 16  # left-out rows of like lengths per forward pass

# read(output of a forward pass) -> one value per row, (rows, ...)
Readout = Callable[[object], torch.Tensor]


def outputs_with_hidden(lab: Lab, enc: Encoded, hidden: Sequence[Sequence[int]], read: Readout,
                        position: int | None = None) -> torch.Tensor:
    """``read`` of the pass with nothing hidden (row 0), then with each set of token positions in
    ``hidden`` hidden: (1 + len(hidden), ...), float32 on the CPU. ``position``: the one token whose MLM
    logits the pass computes (None: no MLM head)."""
    sets = [()] + [sorted(set(keys)) for keys in hidden]
    n = len(enc.ids)
    read_at = 0 if position is None else position  # a classifier and the pooler read the first token
    if any(read_at in keys for keys in sets):
        raise ValueError(f"position {read_at} is read, so it cannot be hidden")
    if any(not 0 <= k < n for keys in sets for k in keys):
        raise ValueError(f"a hidden position is outside the input's 0..{n - 1}")
    if lab.model.config.absolute_positions_only:
        return _left_out(lab, enc, sets, read, position)
    return _biased(lab, enc, sets, read, position)


def _biased(lab: Lab, enc: Encoded, sets: list, read: Readout, position: int | None) -> torch.Tensor:
    """Every row at full length, the hidden keys' scores pushed to the most negative float: one pass."""
    n = len(enc.ids)
    bias = torch.zeros((len(sets), 1, 1, n))  # (rows, 1, 1, key)
    for row, keys in enumerate(sets):
        bias[row, ..., list(keys)] = HIDDEN
    batch = lab.batch_tensors([enc] * len(sets))
    kwargs = _mlm_kwargs(len(sets), n, [position] * len(sets) if position is not None else None, lab.device)
    out, _ = lab.run(batch, capture=(), attention_bias=bias.to(lab.device), **kwargs)
    return read(out).float().cpu()


def _left_out(lab: Lab, enc: Encoded, sets: list, read: Readout, position: int | None) -> torch.Tensor:
    """Each row without its hidden tokens, the rest at their own position ids; rows sorted by length and
    run ROWS_PER_PASS at a time, so a pass pads little."""
    n = len(enc.ids)
    kept = [sorted(set(range(n)) - set(keys)) for keys in sets]
    all_ids, all_segments = torch.tensor(enc.ids), torch.tensor(enc.segment_ids)  # (pos,)
    order = sorted(range(len(sets)), key=lambda r: len(kept[r]))
    results: list[torch.Tensor | None] = [None] * len(sets)
    for start in range(0, len(order), ROWS_PER_PASS):
        chunk = order[start:start + ROWS_PER_PASS]
        width = max(len(kept[r]) for r in chunk)
        ids = torch.full((len(chunk), width), lab.pad_id, dtype=torch.long)  # (rows, pos)
        segments = torch.zeros_like(ids)
        positions = torch.zeros_like(ids)
        mask = torch.zeros_like(ids)
        for row, r in enumerate(chunk):
            keep = torch.tensor(kept[r])
            ids[row, :len(keep)] = all_ids[keep]
            segments[row, :len(keep)] = all_segments[keep]
            positions[row, :len(keep)] = keep
            mask[row, :len(keep)] = 1
        batch = {"input_ids": ids.to(lab.device), "token_type_ids": segments.to(lab.device),
                 "attention_mask": mask.to(lab.device)}
        at = [kept[r].index(position) for r in chunk] if position is not None else None
        out, _ = lab.run(batch, capture=(), position_ids=positions.to(lab.device), **_mlm_kwargs(len(chunk), width, at, lab.device))
        for row, value in zip(chunk, read(out).float().cpu()):
            results[row] = value
    return torch.stack(results)


def _mlm_kwargs(rows: int, width: int, at: list[int] | None, device) -> dict:
    """MLM logits at one column per row (``at``), or none."""
    if at is None:
        return {"compute_mlm": False}
    select = torch.zeros((rows, width), dtype=torch.bool)  # (rows, pos)
    select[torch.arange(rows), at] = True
    return {"mlm_positions": select.to(device)}
