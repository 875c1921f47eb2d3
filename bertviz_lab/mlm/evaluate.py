"""Masked-word accuracy with a fixed protocol, for any checkpoint that has an MLM head.

For each non-empty line, one position is chosen (seeded) among tokens that are whole words made
of letters: a single WordPiece that is not a ``##`` continuation and is not followed by one.
It is replaced by [MASK]; we score whether the original token is the top-1 and within the top-5.
"""
from __future__ import annotations

import random
from collections.abc import Iterable

import torch
from tqdm import tqdm

from ..lab import Encoded, Lab


def candidates(enc: Encoded, special_ids: set[int]) -> list[int]:
    toks, n = enc.tokens, len(enc.tokens)
    return [i for i, t in enumerate(toks)
            if enc.ids[i] not in special_ids and t.isalpha() and not t.startswith("##")
            and not (i + 1 < n and toks[i + 1].startswith("##"))]


def masked_items(lab: Lab, lines: Iterable[str], seed: int, max_sentences: int | None, max_length: int = 128):
    """(masked Encoded, position, original id) per usable line, in file order."""
    rng = random.Random(seed)
    items = []
    cut = min(max_length, lab.max_tokens)
    for line in lines:
        line = line.strip()
        if not line:
            continue
        enc = lab.encode(line, truncate=True)
        if len(enc.ids) > cut:
            enc = Encoded(enc.tokens[:cut - 1] + ["[SEP]"], enc.ids[:cut - 1] + [enc.ids[-1]],
                          enc.segment_ids[:cut], enc.word_ids[:cut - 1] + [None], enc.offsets[:cut],
                          enc.n_tokens_before_truncation)
        options = candidates(enc, lab.special_ids | {lab.mask_id})
        if not options:
            continue
        pos = rng.choice(options)
        ids = list(enc.ids)
        original = ids[pos]
        ids[pos] = lab.mask_id
        items.append((Encoded(enc.tokens, ids, enc.segment_ids, enc.word_ids, enc.offsets, len(ids)), pos, original))
        if max_sentences is not None and len(items) >= max_sentences:
            break
    return items


def evaluate(lab: Lab, lines: Iterable[str], seed: int = 0, max_sentences: int | None = None,
             batch_size: int = 64, progress: bool = True) -> dict[str, float | int]:
    if not lab.model.has_mlm_head:
        raise ValueError(f"{lab.name} has no MLM head, so masked-word accuracy cannot be measured")
    items = masked_items(lab, lines, seed, max_sentences)
    top1 = top5 = 0
    order = sorted(range(len(items)), key=lambda i: len(items[i][0].ids))  # less padding
    bar = tqdm(total=len(items), desc="eval-mlm", unit="sent", disable=not progress)
    for start in range(0, len(order), batch_size):
        chunk = [items[i] for i in order[start:start + batch_size]]
        tensors = lab.batch_tensors([c[0] for c in chunk])
        select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
        for row, (_, pos, _) in enumerate(chunk):
            select[row, pos] = True
        with torch.inference_mode():
            logits = lab.model(**tensors, mlm_positions=select).mlm_logits  # (batch, vocab), row order kept
        best = torch.topk(logits.float(), 5, dim=-1).indices.cpu()
        for row, (_, _, original) in enumerate(chunk):
            top1 += int(best[row, 0] == original)
            top5 += int((best[row] == original).any())
        bar.update(len(chunk))
    bar.close()
    n = len(items)
    return {"top1": top1 / n if n else 0.0, "top5": top5 / n if n else 0.0, "n": n}
