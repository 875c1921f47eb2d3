"""Next-sentence accuracy with a fixed protocol, for any checkpoint that has an NSP head.

The pairs are BERT's (Devlin et al. 2019, sec. 3.1): for every sentence that has a successor in
its document, with probability 1/2 the true next sentence (IsNext), otherwise a random sentence
of another document (NotNext), seeded, by the generator training uses (``examples.make_nsp_pairs``). A pair is correct when
the head's more probable class is the true one. The 95% interval is Wilson's; pairs share
sentences, so it is slightly optimistic. IsNext and NotNext accuracies are reported apart, since
a head that always answers one class scores about 0.5 overall.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from tqdm import tqdm

from ..lab import Lab
from .evaluate import wilson_interval
from .examples import make_nsp_pairs

PROTOCOL = "B is A's successor (IsNext) or, with probability 1/2, a random sentence of another document (NotNext)"


def rate(hits: list[bool]) -> dict:
    n = len(hits)
    return {"accuracy": sum(hits) / n if n else 0.0, "n": n, "ci": wilson_interval(sum(hits), n)}


def nsp_probabilities(lab: Lab, pairs: Sequence[tuple[str, str]], batch_size: int = 32,
                      progress: bool = False) -> list[float]:
    """P(B follows A) for each pair, in order."""
    if not lab.model.has_nsp_head:
        raise ValueError(f"{lab.name} has no next-sentence head, so NSP cannot be measured")
    encoded = [lab.encode(a, b, truncate=True) for a, b in pairs]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))  # less padding
    probs = [0.0] * len(encoded)
    bar = tqdm(total=len(encoded), desc="eval-nsp", unit="pair", disable=not progress)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        with torch.inference_mode():
            logits = lab.model(**lab.batch_tensors([encoded[i] for i in rows])).nsp_logits  # (batch, 2)
        follows = torch.softmax(logits.float(), dim=-1)[:, 0].cpu().tolist()
        for i, p in zip(rows, follows):
            probs[i] = p
        bar.update(len(rows))
    bar.close()
    return probs


def evaluate_nsp(lab: Lab, documents: Sequence[Sequence[str]], seed: int = 0, max_pairs: int | None = None,
                 batch_size: int = 32, progress: bool = True) -> dict:
    pairs = make_nsp_pairs(documents, seed=seed)[:max_pairs]
    probs = nsp_probabilities(lab, [(a, b) for a, b, _ in pairs], batch_size=batch_size, progress=progress)
    hits = [(p >= 0.5) == (label == 0) for p, (_, _, label) in zip(probs, pairs)]
    is_next = [h for h, (_, _, label) in zip(hits, pairs) if label == 0]
    not_next = [h for h, (_, _, label) in zip(hits, pairs) if label == 1]
    overall = rate(hits)
    return {"protocol": PROTOCOL, "is_next": rate(is_next), "not_next": rate(not_next),
            "accuracy": overall["accuracy"], "ci": overall["ci"], "n": overall["n"]}
