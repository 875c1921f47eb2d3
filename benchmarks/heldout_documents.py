"""Does a held-out passage that shares its document with training passages score higher? (issue 14)

The shipped head's corpus held out one 40-sentence passage of a long UD document and trained on the
document's other passages (``build-corpus --heldout-unit passage``; whole documents are the default
now). This splits that corpus's held-out passages into those no passage of whose document was trained
on ("whole") and those whose document was partly trained on ("shared"), and measures the head on each: masked words (the
``eval-mlm`` protocol) and next-sentence pairs (the ``eval-nsp`` protocol, NotNext drawn within the
group), pooled and per source, with 95% intervals. If the shared group scored clearly higher, the
recorded held-out figures would be inflated by what training saw of those documents.

    python benchmarks/heldout_documents.py --corpus data/corpus --running-text data/ud/manifest.json [--head DIR]

``--running-text`` is the manifest the corpus was built from (it maps passages to documents).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from sections import run_recorded

from bertviz_lab import load
from bertviz_lab.mlm.corpus import read_manifest
from bertviz_lab.mlm.evaluate import evaluate
from bertviz_lab.mlm.evaluate_nsp import evaluate_nsp
from bertviz_lab.mlm.running_text import origin_label, read_documents, read_origin, read_passages_jsonl


def grouped_heldout(corpus: Path, manifests: list[Path]) -> dict[str, dict[str, list[list[str]]]]:
    """{source: {"whole": [passage, ...], "shared": [...]}}: held-out passages by whether any passage
    of their document is in train_docs.jsonl."""
    trained = {(p.origin, p.document) for p in read_passages_jsonl(corpus / "train_docs.jsonl")}
    groups: dict[str, dict[str, list[list[str]]]] = {}
    for item in (source for manifest in manifests for source in read_manifest(manifest)):
        name = origin_label(Path(item.path), item.format)
        documents = {}
        for passage in read_origin(Path(item.path), item.format):
            documents[tuple(passage.sentences)] = (passage.origin, passage.document)
        held = read_documents(corpus / f"heldout-{name}.txt")
        missing = [h[0] for h in held if tuple(h) not in documents]
        if missing:
            raise SystemExit(f"{name}: {len(missing)} held-out passages are not passages of {item.path} "
                             f"(e.g. {missing[0]!r}); was the corpus built from this manifest with --heldout-unit passage?")
        groups[name] = {"whole": [], "shared": []}
        for passage in held:
            groups[name]["shared" if documents[tuple(passage)] in trained else "whole"].append(passage)
    return groups


def measure(lab, passages: list[list[str]]) -> dict:
    mlm = evaluate(lab, [s for p in passages for s in p], progress=False)
    row = {"passages": len(passages), "sentences": sum(map(len, passages)), "mlm_n": mlm["n"],
           "top1": mlm["top1"], "top1_ci": mlm["top1_ci"], "top5": mlm["top5"],
           "content_top1": mlm["content_words"]["top1"]}
    if len(passages) > 1:
        nsp = evaluate_nsp(lab, passages, progress=False)
        row.update({"nsp": nsp["accuracy"], "nsp_ci": nsp["ci"], "nsp_n": nsp["n"]})
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--running-text", type=Path, action="append", required=True, metavar="MANIFEST")
    parser.add_argument("--head", type=Path, default=None, metavar="DIR", help="a trained head (default: the shipped one)")
    args = parser.parse_args()
    lab = load("default", device="cpu", mlm_head=args.head) if args.head else load("default", device="cpu")
    groups = grouped_heldout(args.corpus, args.running_text)
    rows = []
    for kind in ("whole", "shared"):
        pooled = [p for g in groups.values() for p in g[kind]]
        rows.append({"source": "pooled", "group": kind, **measure(lab, pooled)})
        rows += [{"source": name, "group": kind, **measure(lab, g[kind])} for name, g in groups.items() if g[kind]]
    print(f"head: {args.head or 'shipped'}; held-out passages none of whose document's passages was trained on "
          "(whole) or whose document has trained passages (shared)\n")
    print("| source | group | passages | sentences | MLM top-1 [95% CI] (n) | top-5 | content top-1 | NSP [95% CI] (n) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        nsp = f"{r['nsp']:.3f} [{r['nsp_ci'][0]:.3f}, {r['nsp_ci'][1]:.3f}] ({r['nsp_n']})" if "nsp" in r else ""
        print(f"| {r['source']} | {r['group']} | {r['passages']} | {r['sentences']} | {r['top1']:.3f} "
              f"[{r['top1_ci'][0]:.3f}, {r['top1_ci'][1]:.3f}] ({r['mlm_n']}) | {r['top5']:.3f} | "
              f"{r['content_top1']:.3f} | {nsp} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    run_recorded("heldout-documents", "Held-out passages that share their document with training", __doc__, main)
