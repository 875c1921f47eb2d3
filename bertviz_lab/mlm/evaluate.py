"""Masked-word accuracy with a fixed protocol, for any checkpoint that has an MLM head.

For each non-empty line, one position is chosen (seeded) among tokens that are whole words made
of letters: a single WordPiece that is not a ``##`` continuation and is not followed by one.
Words split into several WordPieces are never masked, so the score says nothing about them.
The chosen token is replaced by [MASK]; we score whether the original token is the top-1 and
within the top-5. One masked word per line makes the items independent, so the 95% intervals
are Wilson score intervals for a binomial proportion. Accuracy is also split into function
words (closed-class English words: determiners, pronouns, prepositions, conjunctions,
auxiliaries, particles) and content words (all others).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

import torch
from tqdm import tqdm

from ..engines import LOCAL, Engine, run_units
from ..lab import Lab
from ..sentences import masked_items

MASKING = "one single-WordPiece word per line (multi-piece words are never masked)"
FUNCTION_WORDS = frozenset("""
a an the this that these those some any no every each either neither both all such what which whose
i me my mine myself you your yours yourself yourselves he him his himself she her hers herself it its itself
we us our ours ourselves they them their theirs themselves who whom whoever whatever one ones
of in on at to for from by with about against between into through during before after above below up down
out off over under again further than as until while since because although though if unless whether
and or but nor so yet not n't
be am is are was were been being have has had having do does did doing
will would shall should can could may might must ought
there here then when where why how very too also just only
""".split())


def wilson_interval(successes: int, n: int, z: float = 1.96) -> list[float]:
    """95% Wilson score interval of a binomial proportion (Wilson 1927)."""
    if not n:
        return [0.0, 0.0]
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def accuracy_of(hits1: list[bool], hits5: list[bool]) -> dict:
    n = len(hits1)
    return {"top1": sum(hits1) / n if n else 0.0, "top5": sum(hits5) / n if n else 0.0, "n": n,
            "top1_ci": wilson_interval(sum(hits1), n), "top5_ci": wilson_interval(sum(hits5), n)}


@dataclass(frozen=True)
class Batching:
    """How the sentences are run: ``batch_size`` per forward pass (one unit each) on ``engine``."""

    batch_size: int = 64
    engine: Engine = LOCAL


def evaluate_batch(lab: Lab, chunk: list) -> list[tuple[bool, bool, bool]]:
    """One batch of (enc, masked position, gold id): per sentence (top-1 hit, top-5 hit, gold is a function
    word); a unit of work for ``engines.run_units``."""
    tensors = lab.batch_tensors([c[0] for c in chunk])
    select = torch.zeros_like(tensors["input_ids"], dtype=torch.bool)
    for row, (_, pos, _) in enumerate(chunk):
        select[row, pos] = True
    with torch.inference_mode():
        logits = lab.model(**tensors, mlm_positions=select).mlm_logits  # (batch, vocab), row order kept
    best = torch.topk(logits.float(), 5, dim=-1).indices.cpu()
    return [(bool(best[row, 0] == original), bool((best[row] == original).any()),
             lab.tokenizer.id_to_token(int(original)) in FUNCTION_WORDS) for row, (_, _, original) in enumerate(chunk)]


def evaluate(lab: Lab, lines: Iterable[str], seed: int = 0, max_sentences: int | None = None,
             progress: bool = True, batching: Batching = Batching()) -> dict[str, float | int]:
    """Top-1 and top-5 accuracy (Wilson intervals) on one seeded masked whole word per line, split by
    function and content words. Batches of similar length are the units on ``batching.engine`` (local or
    Ray): the same batches, so the same hits, either way."""
    if not lab.model.has_mlm_head:
        raise ValueError(f"{lab.name} has no MLM head, so masked-word accuracy cannot be measured")
    items = masked_items(lab, lines, seed, max_sentences)
    order = sorted(range(len(items)), key=lambda i: len(items[i][0].ids))  # less padding
    size = batching.batch_size
    batches = [order[start:start + size] for start in range(0, len(order), size)]
    sizes = [0, *accumulate(len(rows) for rows in batches)]
    bar = tqdm(total=len(items), desc="eval-mlm", unit="sent", disable=not progress)
    results = run_units(lab, evaluate_batch, [[items[i] for i in rows] for rows in batches], batching.engine,
                        lambda k, _: bar.update(sizes[k] - bar.n))
    bar.close()
    by_item = dict(zip((i for rows in batches for i in rows), (r for batch in results for r in batch)))
    hits1, hits5, function = ([by_item[i][k] for i in range(len(items))] for k in range(3))
    split = {name: accuracy_of([h for h, f in zip(hits1, function) if f == want],
                               [h for h, f in zip(hits5, function) if f == want])
             for name, want in (("function_words", True), ("content_words", False))}
    return {**split, "masking": MASKING, **accuracy_of(hits1, hits5)}
