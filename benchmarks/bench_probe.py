"""Syntax-probe throughput on the embedded model, CPU: batched vs one sentence at a time vs a
plain unbatched reference built on transformers (BertModel eager, output_attentions=True, the
same word-level conversion and scoring), all in one run.

Sentences of about 20 words are made by joining two sample-treebank sentences (the second
sentence's root attached to the first's as parataxis).

    python benchmarks/bench_probe.py
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from bertviz_lab import load
from bertviz_lab.attention import head_statistics
from bertviz_lab.bert.checkpoints import packaged_default_folder
from bertviz_lab.syntax import SAMPLE_TREEBANK, Counts, Sentence, probe_treebank, read_conllu, word_attention


def long_sentences(count: int = 240) -> list[Sentence]:
    base = read_conllu(SAMPLE_TREEBANK)
    out = []
    i = 0
    while len(out) < count:
        a, b = base[i % len(base)], base[(i * 7 + 3) % len(base)]
        i += 1
        if not 18 <= len(a.words) + len(b.words) <= 24:
            continue
        shift = len(a.words)
        root_a = a.heads.index(0) + 1
        heads = a.heads + [root_a if h == 0 else h + shift for h in b.heads]
        rels = a.relations + ["parataxis" if h == 0 else r for h, r in zip(b.heads, b.relations)]
        out.append(Sentence(a.words + b.words, heads, rels))
    return out


def reference_probe(hf, lab, sentences):
    """What a plain script does: one sentence at a time through transformers."""
    counts = Counts(lab.n_layers, lab.n_heads)
    for s in sentences:
        enc = lab.encode_words(s.words)
        with torch.inference_mode():
            out = hf(input_ids=torch.tensor([enc.ids]), output_attentions=True)
        a = torch.stack(out.attentions, 1)[0].numpy()
        words, _ = word_attention(a, enc)
        counts.add(words, s)
        counts.add_stats(head_statistics(a, enc.tokens))
    return counts


def rate(fn, n, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times)


def main() -> None:
    from transformers import BertModel

    lab = load("default", device="cpu")
    hf = BertModel.from_pretrained(str(packaged_default_folder()), attn_implementation="eager").eval()
    sentences = long_sentences()
    words = np.mean([len(s.words) for s in sentences])
    tokens = np.mean([len(lab.encode_words(s.words).ids) for s in sentences])
    batched = probe_treebank(lab, sentences, batch_size=32)
    single = probe_treebank(lab, sentences, batch_size=1)
    assert (batched.head_scores.correct.values == single.head_scores.correct.values).all()
    r_batched = rate(lambda: probe_treebank(lab, sentences, batch_size=32), len(sentences))
    r_single = rate(lambda: probe_treebank(lab, sentences, batch_size=1), len(sentences))
    r_ref = rate(lambda: reference_probe(hf, lab, sentences[:80]), 80)
    print(f"{len(sentences)} sentences, {words:.1f} words / {tokens:.1f} tokens on average, model {lab.name}")
    print(f"batched (32):        {r_batched:7.1f} sentences/s")
    print(f"one at a time:       {r_single:7.1f} sentences/s   batched/unbatched = {r_batched / r_single:.1f}x")
    print(f"transformers, plain: {r_ref:7.1f} sentences/s   batched/reference = {r_batched / r_ref:.1f}x")
    print("targets: batched >= 100 sentences/s and >= 3x unbatched:",
          "met" if r_batched >= 100 and r_batched / r_single >= 3 else "NOT met")


if __name__ == "__main__":
    main()
