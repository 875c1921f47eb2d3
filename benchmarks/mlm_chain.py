"""Issue 32's training chain, every head it kept, measured: the selection rule's development figures
(written in the model card before the first leg: the development cloze set and the corpus's validation
split) and, reported but never used to choose, the held-out figures: masked-word top-1 / top-5 on the
shipped running-text slices pooled (UD EWT, GUM, LinES: "natural English", as the shipped head's card
counts it), on the new Brown slice, on WordNet; next-sentence accuracy on the shipped held-out passages;
the teaching set. Then the rule's choice and the legs with their commands. float16 weights as shipped.

    python benchmarks/mlm_chain.py --chain runs/chain1 [--corpus data/corpus] [--fresh] [--write]

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
from bertviz_lab.resources import DEFAULT_MLM_HEAD

ROOT = Path(__file__).resolve().parent.parent


def sha256_of(*files: Path) -> str:
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def measure(name: str, folder: Path, steps: int, corpus: Path, brown: list[str]) -> tuple[DevFigures, list[str]]:
    """One head's development figures and its table row (development, then held-out figures)."""
    lab = load("default", device="cpu", mlm_head=folder)
    figures = dev_figures(lab, corpus, name, steps)
    report = heldout_report(lab, DEFAULT_MLM_HEAD)
    natural, teaching = report["natural_english"], report["teaching"]
    b = evaluate(lab, brown, progress=False) if brown else {"top1": float("nan"), "top5": float("nan")}
    return figures, [name, f"{figures.cloze:.3f}", f"{figures.running_top1:.3f}", f"{figures.nsp:.3f}",
                     f"{figures.wordnet_top1:.3f}", f"**{figures.score:.3f}**",
                     f"{natural['top1']:.3f} / {natural['top5']:.3f}", f"{b['top1']:.3f} / {b['top5']:.3f}",
                     f"{report['mlm']['wordnet']['top1']:.3f}", f"{report['nsp']['accuracy']:.3f}",
                     f"{teaching['top1_hits']}/{teaching['n']} / {teaching['top5_hits']}/{teaching['n']}"]


def measured(name: str, folder: Path, steps: int, corpus: Path, brown: list[str], cache: Path,
             fresh: bool) -> tuple[DevFigures, list[str]]:
    """``measure``, read from the cache when these weights were measured on this validation split before."""
    key = sha256_of(folder / "head.safetensors", corpus / "validation.txt", corpus / "validation_docs.txt")
    kept = cache / f"{key}.json"
    if kept.is_file() and not fresh:
        data = json.loads(kept.read_text())
        return DevFigures(**{**data["figures"], "name": name, "steps": steps}), [name, *data["row"][1:]]
    figures, row = measure(name, folder, steps, corpus, brown)
    cache.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"figures": asdict(figures), "row": row}))
    return figures, row


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
    dev, rows = [], []
    for name, folder, steps in heads:
        figures, row = measured(name, folder, steps, args.corpus, brown, args.chain / "figures", args.fresh)
        dev.append(figures)
        rows.append(row)
    print(markdown_table(["head", "C dev cloze", "M val. top-1", "N val. NSP", "WordNet val.", "score",
                          "held-out natural top-1/top-5", "Brown held-out", "WordNet held-out", "NSP held-out",
                          "teaching top-1 / top-5"], rows))
    winner, why = choose(dev[0], dev[1:])
    print(f"\nRule (written before the first leg): {RULE}\n\nChoice: {why}\n")
    print("Legs:")
    for leg in recorded_legs(args.chain):
        print(f"- leg {leg['leg']}: steps {leg['from_step']} -> {leg['to_step']}, {leg['minutes']} min: `{leg['command']}`")
    print("\nTargets (issue 32): held-out natural top-1 >= 0.35, top-5 >= 0.55; NSP >= 0.88; teaching top-1 >= 50%, "
          "top-5 >= 80%; WordNet >= 0.38.")


if __name__ == "__main__":
    run_recorded("mlm-chain", "The masked-word training chain: every kept head, development and held-out (issue 32)",
                 __doc__, main)
