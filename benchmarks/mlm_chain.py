"""Issue 32's training chain, every head it kept, measured: the selection rule's development figures
(written in the model card before the first leg: the development cloze set and the corpus's validation
split) and, reported but never used to choose, the held-out figures: masked-word top-1 / top-5 on the
shipped running-text slices pooled (UD EWT, GUM, LinES: "natural English", as the shipped head's card
counts it), on the new Brown slice, on WordNet; next-sentence accuracy on the shipped held-out passages;
the teaching set. Then the rule's choice, the legs with their commands, the data, and the issue's targets
judged by each figure's 95% Wilson interval (generated from the counts). float16 weights as shipped.

    python benchmarks/mlm_chain.py --chain runs/chain2 [--corpus data/corpus] [--fresh] [--write]

The corpus (UD train splits and the Brown Corpus from snapshots of their public repositories, WordNet
from Debian's wordnet-base; whole documents held out):

    python scripts/ud_running_text.py data/ud UD_English-EWT UD_English-GUM UD_English-LinES
    python scripts/nltk_brown.py data/brown nltk_data
    python -m bertviz_lab build-corpus --out data/corpus --running-text data/ud/manifest.json --running-text data/brown/manifest.json

Each head's figures are kept in ``CHAIN/figures/`` under the sha256 of its weights and of the corpus's
validation split, so a run after the next leg measures only the new heads (``--fresh`` measures all).
"""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from sections import markdown_table, run_recorded

from bertviz_lab import load
from bertviz_lab.mlm.evaluate import evaluate
from bertviz_lab.mlm.model_card import recorded_legs
from bertviz_lab.mlm.report import heldout_report
from bertviz_lab.mlm.selection import RULE, DevFigures, choose, dev_figures
from bertviz_lab.mlm.targets import ISSUE_32_TARGETS, target_sentence
from bertviz_lab.resources import DEFAULT_MLM_HEAD

ROOT = Path(__file__).resolve().parent.parent


def sha256_of(*files: Path) -> str:
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def measure(name: str, folder: Path, steps: int, corpus: Path, brown: list[str]) -> tuple[DevFigures, list[str], dict]:
    """One head's development figures, its table row (development, then held-out figures) and the
    held-out counts ``[hits, n]`` its figures come from, which the targets are judged on."""
    lab = load("default", device="cpu", mlm_head=folder)
    figures = dev_figures(lab, corpus, name, steps)
    report = heldout_report(lab, DEFAULT_MLM_HEAD)
    natural, teaching = report["natural_english"], report["teaching"]
    b = evaluate(lab, brown, progress=False) if brown else {"top1": float("nan"), "top5": float("nan")}
    return figures, [name, f"{figures.cloze:.3f}", f"{figures.running_top1:.3f}", f"{figures.nsp:.3f}",
                     f"{figures.wordnet_top1:.3f}", f"**{figures.score:.3f}**",
                     f"{natural['top1']:.3f} / {natural['top5']:.3f}", f"{b['top1']:.3f} / {b['top5']:.3f}",
                     f"{report['mlm']['wordnet']['top1']:.3f}", f"{report['nsp']['accuracy']:.3f}",
                     f"{teaching['top1_hits']}/{teaching['n']} / {teaching['top5_hits']}/{teaching['n']}"], counts_of(report)


def counts_of(report: dict) -> dict:
    """[hits, n] of every figure a target names, from a held-out report."""
    natural, nsp, wordnet, teaching = (report["natural_english"], report["nsp"], report["mlm"]["wordnet"],
                                       report["teaching"])
    return {"natural_top1": [round(natural["top1"] * natural["n"]), natural["n"]],
            "natural_top5": [round(natural["top5"] * natural["n"]), natural["n"]],
            "nsp": [round(nsp["accuracy"] * nsp["n"]), nsp["n"]],
            "wordnet_top1": [round(wordnet["top1"] * wordnet["n"]), wordnet["n"]],
            "teaching_top1": [teaching["top1_hits"], teaching["n"]],
            "teaching_top5": [teaching["top5_hits"], teaching["n"]]}


def measured(name: str, folder: Path, steps: int, corpus: Path, brown: list[str], cache: Path,
             fresh: bool) -> tuple[DevFigures, list[str], dict]:
    """``measure``, read from the cache when these weights were measured on this validation split before."""
    key = sha256_of(folder / "head.safetensors", corpus / "validation.txt", corpus / "validation_docs.txt")
    kept = cache / f"{key}.json"
    data = json.loads(kept.read_text()) if kept.is_file() and not fresh else {}
    if "counts" in data:
        return DevFigures(**{**data["figures"], "name": name, "steps": steps}), [name, *data["row"][1:]], data["counts"]
    figures, row, counts = measure(name, folder, steps, corpus, brown)
    cache.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"figures": asdict(figures), "row": row, "counts": counts}))
    return figures, row, counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chain", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "corpus")
    parser.add_argument("--fresh", action="store_true", help="measure every head again, ignoring kept figures")
    args = parser.parse_args()
    heads = [("shipped (v3)", DEFAULT_MLM_HEAD, 0)] + [
        (f"chain step {int(f.name.split('-')[1])}", f, int(f.name.split("-")[1]))
        for f in sorted((args.chain / "steps").glob("step-*"), key=lambda f: int(f.name.split("-")[1]))]
    brown = [ln for ln in (args.corpus / "heldout-brown.txt").read_text().splitlines() if ln.strip()] \
        if (args.corpus / "heldout-brown.txt").is_file() else []
    dev, rows, counts = [], [], []
    for name, folder, steps in heads:
        figures, row, kept = measured(name, folder, steps, args.corpus, brown, args.chain / "figures", args.fresh)
        dev.append(figures)
        rows.append(row)
        counts.append(kept)
    print(markdown_table(["head", "C dev cloze", "M val. top-1", "N val. NSP", "WordNet val.", "score",
                          "held-out natural top-1/top-5", "Brown held-out", "WordNet held-out", "NSP held-out",
                          "teaching top-1 / top-5"], rows))
    winner, why = choose(dev[0], dev[1:])
    print(f"\nRule (written before the first leg): {RULE}\n\nChoice: {why}\n")
    print("Legs:")
    for leg in recorded_legs(args.chain):
        print(f"- leg {leg['leg']}: steps {leg['from_step']} -> {leg['to_step']}, {leg['minutes']} min: `{leg['command']}`")
    data = json.loads((args.corpus / "corpus.json").read_text())
    print(f"\nData ({args.corpus.name}/corpus.json): {data['train_lines']:,} training lines, seed {data['seed']}; "
          + "; ".join(f"{s['name']}: {s['train_lines']:,} train / {s['validation_lines']:,} validation / "
                      f"{s['heldout_lines']:,} held-out lines, {s['source']}, {s['licence']}" for s in data["sources"]))
    chosen = counts[next(i for i, d in enumerate(dev) if d is winner)]
    print("\nTargets (issue 32), judged by the 95% Wilson interval: the chosen head, then the curve over every head "
          "and the best head on that figure:")
    for target in ISSUE_32_TARGETS:
        curve = [hits / n for hits, n in (c[target.key] for c in counts)]
        best = max(range(len(curve)), key=curve.__getitem__)
        print("- " + target_sentence(winner.name, target, *chosen[target.key]))
        print("  curve: " + ", ".join(f"{d.name} {v:.3f}" for d, v in zip(dev, curve))
              + "; best: " + target_sentence(dev[best].name, target, *counts[best][target.key]))


if __name__ == "__main__":
    run_recorded("mlm-chain", "The masked-word training chain: every kept head, development and held-out (issue 32)",
                 __doc__, main)
