"""How far the shipped next-sentence head is from what its data allows (issue 14), in one run:

- the head on the held-out pairs (the ``eval-nsp`` protocol, pooled and per source);
- the same head on pairs drawn the same way from its *training* passages (``--train-pairs``, from
  300 passages): the gap between the two is what more epochs on this data cannot close;
- a control that needs no training at all: the cosine of the published MiniLM sentence embeddings
  (mean-pooled, as all-MiniLM-L6-v2 is used) of A and B, with the threshold tuned on the validation
  passages. What it gets is topic similarity alone; the head should beat it.

    python benchmarks/nsp_ceiling.py --corpus data/corpus [--train-pairs 2000] [--also-pool ewt,gum,lines]

``--also-pool`` adds the pooled figure over only those sources (e.g. an earlier corpus's, so heads
trained on different corpora are compared on the same pairs).

``--corpus`` is a folder written by ``build-corpus --running-text`` (train_docs.jsonl,
validation_docs.txt, heldout-<source>.txt).
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import torch
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.lab import Lab
from bertviz_lab.mlm.evaluate_nsp import evaluate_nsp
from bertviz_lab.mlm.examples import make_nsp_pairs
from bertviz_lab.mlm.report import held_out_sources
from bertviz_lab.mlm.running_text import read_documents


def sentence_embeddings(lab: Lab, sentences: list[str], batch_size: int = 64) -> torch.Tensor:
    """Mean-pooled last hidden states, L2-normalised: all-MiniLM-L6-v2's own sentence embedding."""
    out = []
    for start in range(0, len(sentences), batch_size):
        tensors = lab.batch_tensors([lab.encode(s, truncate=True) for s in sentences[start:start + batch_size]])
        with torch.inference_mode():
            hidden = lab.model(**tensors).last_hidden_state  # (batch, pos, d_model)
        mask = tensors["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (batch, pos, 1)
        out.append(torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1))
    return torch.cat(out)


def cosines(lab: Lab, pairs: list[tuple[str, str, int]]) -> tuple[np.ndarray, np.ndarray]:
    a = sentence_embeddings(lab, [p[0] for p in pairs])
    b = sentence_embeddings(lab, [p[1] for p in pairs])
    return (a * b).sum(-1).float().numpy(), np.array([p[2] == 0 for p in pairs])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--train-pairs", type=int, default=2000)
    parser.add_argument("--head", type=Path, default=None, metavar="DIR",
                        help="a trained head folder to measure instead of the shipped one")
    parser.add_argument("--also-pool", action="append", default=[], metavar="NAMES",
                        help="comma-separated sources to pool as well (repeatable)")
    args = parser.parse_args()
    held_out = {s["name"]: read_documents(args.corpus / s["heldout_file"])
                for s in held_out_sources(args.corpus) if s["name"] != "wordnet"}
    pools = [[name.strip() for name in names.split(",") if name.strip()] for names in args.also_pool]
    unknown = sorted({name for pool in pools for name in pool} - set(held_out))
    if unknown:
        parser.error(f"--also-pool: no held-out slice named {', '.join(unknown)} (have {', '.join(held_out)})")
    head = load("default", device="cpu", mlm_head=args.head) if args.head else load("default", device="cpu")
    pooled = [d for docs in held_out.values() for d in docs]
    rows = {"held-out, pooled": evaluate_nsp(head, pooled, progress=False)}
    for chosen in pools:
        rows[f"held-out, pooled over {' + '.join(chosen)}"] = evaluate_nsp(
            head, [d for name in chosen for d in held_out[name]], progress=False)
    for name, docs in held_out.items():  # NotNext from the same source only: harder than pooled
        rows[f"held-out, {name} alone"] = evaluate_nsp(head, docs, progress=False)
    training = [json.loads(line)["sentences"] for line in (args.corpus / "train_docs.jsonl").open()]
    random.Random(1).shuffle(training)
    rows["training passages"] = evaluate_nsp(head, training[:300], seed=5, max_pairs=args.train_pairs, progress=False)
    print(f"next-sentence head: {head.name}")
    print("| pairs | accuracy [95% CI] | IsNext | NotNext | n |\n|---|---:|---:|---:|---:|")
    for label, r in rows.items():
        print(f"| {label} | {r['accuracy']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] | {r['is_next']['accuracy']:.3f} | "
              f"{r['not_next']['accuracy']:.3f} | {r['n']} |")

    published = load("minilm-original", device="cpu")
    tune_scores, tune_next = cosines(published, make_nsp_pairs(read_documents(args.corpus / "validation_docs.txt")))
    threshold = max(np.linspace(-0.2, 0.9, 111), key=lambda t: ((tune_scores >= t) == tune_next).mean())
    test_scores, test_next = cosines(published, make_nsp_pairs(pooled))
    accuracy = ((test_scores >= threshold) == test_next).mean()
    print(f"\ncontrol: cosine of published MiniLM sentence embeddings >= {threshold:.2f} (tuned on validation "
          f"passages) on the same held-out pairs: {accuracy:.3f} (n={len(test_next)})")


if __name__ == "__main__":
    run_recorded("nsp-ceiling", "How far next-sentence prediction can go on the training data", __doc__, main)
