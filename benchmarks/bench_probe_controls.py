"""Do the syntax probes' claims survive their controls? (issue 59) For the published MiniLM (minilm-original) and
its random-weight floor, on the first --train-sentences of UD English EWT train (probes stop on a seeded 10% of
them) and the first --dev-sentences of EWT dev:

- selectivity (Hewitt & Liang 2019): the distance probe of each layer trained on gold trees and, the same way, on
  the control task (each word type attaches to itself, the first or the last word); UUAS on each and their paired
  difference with a 95% bootstrap interval over the report half of the dev sentences; and the head-ensemble
  classifier's selectivity on every arc;
- MDL (Voita & Titov 2020): the online codelength (kbits) and compression of the arcs' relations per layer, for
  the model, for control labels and for the random weights.

Subsets keep the run within minutes on 2 cores; every figure names its sentences.

    python benchmarks/bench_probe_controls.py --train data/ud/en_ewt-ud-train.conllu --dev en_ewt-ud-dev.conllu
        [--train-sentences 1000] [--dev-sentences 500] [--write]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sections import run_recorded

from bertviz_lab.lab import load
from bertviz_lab.syntax.structure import StructureSettings, StructureTreebanks, run_structure
from bertviz_lab.tasks.description_length import DescriptionLengthRequest, description_length
from bertviz_lab.treebank import read_conllu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--dev", type=Path, required=True)
    parser.add_argument("--train-sentences", type=int, default=1000)
    parser.add_argument("--dev-sentences", type=int, default=500)
    parser.add_argument("--skip-mdl", action="store_true")
    args = parser.parse_args()
    train = read_conllu(args.train)[:args.train_sentences]
    dev = read_conllu(args.dev)[:args.dev_sentences]
    lab = load("minilm-original")
    print(f"model: {lab.checkpoint_info().describe()}")
    print(f"train: first {len(train)} sentences of {args.train.name}; dev: first {len(dev)} of {args.dev.name}")
    started = time.perf_counter()
    result = run_structure(lab, StructureTreebanks(dev, train, names=(args.train.name, args.dev.name)),
                           StructureSettings(kinds=("distance",), null=True, control=True))
    print(f"\nselectivity of the distance probe (UUAS on gold trees - UUAS on the control task), report half "
          f"({result.sentences['report']} sentences), 95% paired intervals; {time.perf_counter() - started:.0f} s")
    for model, rows in result.selectivity.groupby("model", sort=False):
        print(f"  {model}:")
        for r in rows.itertuples():
            print(f"    layer {r.layer}: probe {r.probe_uuas:.3f}, control {r.control_uuas:.3f}, selectivity "
                  f"{r.selectivity:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]")
    e = result.ensemble_selectivity
    print(f"  head-ensemble classifier, every arc: gold {e['gold_accuracy']:.3f} ({e['gold_ensemble']}), control "
          f"{e['control_accuracy']:.3f} ({e['control_ensemble']}), selectivity {e['selectivity']:+.3f} "
          f"[{e['ci_low']:+.3f}, {e['ci_high']:+.3f}]")
    print("conclusions:")
    for line in result.conclusions:
        print(f"  {line}")
    if args.skip_mdl:
        return
    started = time.perf_counter()
    record = description_length(DescriptionLengthRequest(train, dev), lab)
    print(f"\nonline codelength of the arcs' relations, kbits (compression = uniform / online); "
          f"{time.perf_counter() - started:.0f} s")
    rows = record.rows
    print(f"  {'layer':>5s} " + " ".join(f"{name:>26s}" for name in rows))
    for k in range(len(rows["relations"])):
        cells = [f"{rows[name][k].online_bits / 1024:8.1f} ({rows[name][k].compression:5.2f}x, acc "
                 f"{rows[name][k].dev_accuracy:.2f})" for name in rows]
        print(f"  {rows['relations'][k].layer:5d} " + " ".join(f"{c:>26s}" for c in cells))
    first = rows["relations"][0]
    print(f"  {first.targets:,} arcs, {first.classes} relations; uniform codelength {first.uniform_bits / 1024:.1f} kbits")


if __name__ == "__main__":
    run_recorded("probe-controls", "Syntax probes against their controls: selectivity and MDL (issue 59)",
                 __doc__.split("\n\n")[0], main)
