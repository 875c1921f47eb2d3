"""Syntax scoring on the embedded model, CPU, all in one run:

1. throughput: batched vs one sentence at a time vs a plain unbatched script on transformers
   (BertModel eager, output_attentions=True, the same word-level conversion and scoring);
2. the cost of what a paper needs: scoring with 95% bootstrap intervals (1,000 resamples),
   held-out selection and tree decoding (UUAS) vs scoring without them (target <= 1.5x).

Sentences: ``--conllu FILE`` (e.g. a UD dev split), else ~20-word sentences made by joining two
sample-treebank sentences (the second root attached to the first as parataxis).

    python benchmarks/bench_probe.py [--conllu en_ewt-ud-dev.conllu] [--sentences 2000]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
from common import median_seconds
from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.attention import head_statistics
from bertviz_lab.bert.loading.checkpoints import packaged_default_folder
from bertviz_lab.syntax.scoring import ArcCollector, score_treebank, word_attention
from bertviz_lab.syntax.statistics import Resampler, head_estimates, relations_by_count
from bertviz_lab.syntax.summary import Settings, summarise
from bertviz_lab.treebank import SAMPLE_TREEBANK, Sentence, read_conllu


def long_sentences(count: int) -> list[Sentence]:
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
    """What a plain script does: one sentence at a time through transformers, accuracies only."""
    collector = ArcCollector(lab.n_layers, lab.n_heads, trees=False)
    for index, s in enumerate(sentences):
        enc = lab.encode_words(s.words)
        with torch.inference_mode():
            out = hf(input_ids=torch.tensor([enc.ids]), output_attentions=True)
        a = torch.stack(out.attentions, 1)[0].numpy()
        words, _ = word_attention(a, enc)
        collector.add(index, s, words)
        head_statistics(a, enc.tokens)
    return accuracies(collector.table())


def accuracies(arcs):
    """Per relation and direction, every head's accuracy: scoring without intervals or trees."""
    no_draws = Resampler.over(arcs.sentence, 0, 0)
    return {r: head_estimates(arcs, r, no_draws) for r in relations_by_count(arcs)}


def seconds(fn, repeat=3):
    return median_seconds(fn, repeat=repeat, warmup=0)


def main() -> None:
    from transformers import BertModel

    parser = argparse.ArgumentParser()
    parser.add_argument("--conllu", default=None)
    parser.add_argument("--sentences", type=int, default=2000)
    args = parser.parse_args()
    lab = load("minilm-original", device="cpu")
    hf = BertModel.from_pretrained(str(packaged_default_folder()), attn_implementation="eager").eval()
    sentences = read_conllu(args.conllu)[:args.sentences] if args.conllu else long_sentences(args.sentences)
    words = np.mean([len(s.words) for s in sentences])
    tokens = np.mean([len(lab.encode_words(s.words).ids) for s in sentences])
    print(f"{len(sentences)} sentences ({args.conllu or 'joined sample sentences'}), {words:.1f} words / "
          f"{tokens:.1f} tokens on average, model {lab.name}, torch threads {torch.get_num_threads()}")

    def plain():
        return accuracies(score_treebank(lab, sentences, batch_size=32, trees=False).arcs)

    def full():
        return summarise(score_treebank(lab, sentences, batch_size=32), settings=Settings(resamples=1000))

    few = sentences[:200]
    t_plain, t_full = seconds(plain, 2), seconds(full, 2)
    t_single = seconds(lambda: accuracies(score_treebank(lab, few, batch_size=1, trees=False).arcs), 2)
    t_ref = seconds(lambda: reference_probe(hf, lab, few), 2)
    n = len(sentences)
    print(f"ours, batched, accuracies only:                  {n / t_plain:7.1f} sentences/s ({t_plain:.1f} s)")
    print(f"ours, batched, + intervals, held-out, UUAS:      {n / t_full:7.1f} sentences/s ({t_full:.1f} s)"
          f"   cost ratio {t_full / t_plain:.2f}x (target <= 1.5x)")
    print(f"ours, one sentence at a time (200 sentences):    {len(few) / t_single:7.1f} sentences/s")
    print(f"transformers eager, one at a time (200):         {len(few) / t_ref:7.1f} sentences/s"
          f"   ours batched / transformers = {(n / t_plain) / (len(few) / t_ref):.1f}x")


def _entry() -> None:
    main()


if __name__ == "__main__":
    run_recorded("syntax-throughput", "Syntax scoring: throughput and the cost of intervals", __doc__, _entry)
