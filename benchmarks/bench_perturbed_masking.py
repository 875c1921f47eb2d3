"""Perturbed Masking (Wu et al. 2020) as their released code computes it (bertviz_lab/syntax/perturbed_masking.py),
on UD English PUD and on UD English EWT test (both for evaluation only): UAS per layer with Eisner and with MST
decoding, the gold root injected as their default, punctuation and the root arc counted; their right-chain baseline;
95% percentile-bootstrap intervals over sentences; and the published bert-base-uncased figure (41.7 on PUD, layer 12,
Eisner) beside ours as the same protocol on different weights.

    python benchmarks/bench_perturbed_masking.py --treebank ../shared/data/en_pud-ud-test.conllu.gz
        --treebank ../shared/data/ud-en-ewt-test.conllu.gz [--model minilm-original] [--max-sentences N] [--write]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sections import run_recorded

from bertviz_lab.lab import load
from bertviz_lab.syntax.perturbed_masking import PUBLISHED_UAS
from bertviz_lab.tasks.masking_trees import MaskingTreesRequest, masking_trees
from bertviz_lab.treebank import read_conllu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--treebank", type=Path, action="append", required=True)
    parser.add_argument("--model", default="minilm-original")
    parser.add_argument("--max-sentences", type=int, default=None)
    args = parser.parse_args()
    lab = load(args.model)
    print(f"model: {lab.checkpoint_info().describe()}")
    for path in args.treebank:
        sentences = read_conllu(path)[:args.max_sentences]
        started = time.perf_counter()
        done = masking_trees(MaskingTreesRequest(sentences), lab)
        uas = done.uas
        print(f"\n{path.name}: {uas['sentences']:,} sentences, {uas['words']:,} words, "
              f"{time.perf_counter() - started:.0f} s; UAS % [95% interval]")
        print(f"  {'layer':>5s} {'Eisner':>20s} {'MST (CLE)':>20s}")
        for e, c in zip(uas["eisner"], uas["cle"]):
            print(f"  {e['layer']:5d} {100 * e['uas']:6.1f} [{100 * e['low']:4.1f}, {100 * e['high']:4.1f}]"
                  f"   {100 * c['uas']:6.1f} [{100 * c['low']:4.1f}, {100 * c['high']:4.1f}]")
        chain = uas["right-chain"]
        print(f"  right-chain (gold root): {100 * chain['uas']:.1f} [{100 * chain['low']:.1f}, {100 * chain['high']:.1f}]")
        for line in done.conclusions:
            print(f"  {line}")
        if done.result.skipped:
            print(f"  skipped {done.result.skipped} sentences (too long, or a word with no piece)")
    print(f"\npublished: {PUBLISHED_UAS['uas']} for {PUBLISHED_UAS['model']} on {PUBLISHED_UAS['treebank']} (layer "
          f"{PUBLISHED_UAS['layer']} of 12, {PUBLISHED_UAS['decoder']}; {PUBLISHED_UAS['source']}): the same protocol "
          "on other weights, not a reproduction")


if __name__ == "__main__":
    run_recorded("perturbed-masking", "Perturbed Masking on PUD and EWT test (issue 59)", __doc__.split("\n\n")[0], main)
