"""The position-scheme twins measured side by side on held-out text (issue 58), with 95 % intervals.

For every twin in the twins folder (``assets/twins``, or ``$BERTVIZ_LAB_TWINS``):
- masked-word top-1 / top-5 on held-out running text (the corpus's held-out documents, never trained on: EWT, GUM,
  LinES, Brown) packed as the twins were trained, at the training length and at 2x and 4x it; a learned table that
  cannot reach a position says so;
- word-order sensitivity: the change in masked-word loss when the unmasked words of each block are shuffled;
- attention by distance at the training length: per layer, the share of attention on the previous / next token and
  the mean attention distance, and the count of previous/next-token heads (> 50 %);
- syntax (``--treebank``): Clark et al.'s per-head scores on held-out EWT (the test split, for evaluation only), the
  best head chosen on one half with its interval on the other, the random-weight floor, and the best attention tree's
  UUAS (``tasks/score_heads.py``).
Intervals are percentile bootstraps over blocks (sentences for syntax). Every twin sees the same blocks and masks.

    python benchmarks/bench_twins.py [--blocks 200] [--treebank ../shared/data/ud-en-ewt-test.conllu.gz] [--write]
        [--write-measures]
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

from sections import run_recorded

from bertviz_lab.bert.loading.twin_checkpoints import twin_names, twins_folder, twins_record
from bertviz_lab.lab import load
from bertviz_lab.mlm.running_text import read_documents
from bertviz_lab.mlm.twin_measures import attention_by_distance, masked_accuracy, order_sensitivity
from bertviz_lab.mlm.twins import packed_blocks
from bertviz_lab.resources import DEFAULT_MLM_HEAD

HELD_OUT = ("heldout-ewt.txt", "heldout-gum.txt", "heldout-lines.txt", "heldout-brown.txt")


def held_out_documents() -> list[list[str]]:
    """Whole held-out documents of every running-text source the shipped corpus held out (assets/minilm-mlm)."""
    return [doc for name in HELD_OUT for doc in read_documents(DEFAULT_MLM_HEAD / name)]


def interval(record: dict) -> str:
    if "value" not in record:
        return "-"
    low, high = record["ci"]
    return f"{record['value']:.3f} [{low:.3f}, {high:.3f}]"


def read_treebank_file(treebank: Path, sentences: int) -> list:
    from bertviz_lab.treebank import read_conllu

    with tempfile.TemporaryDirectory() as tmp:
        path = treebank
        if treebank.suffix == ".gz":
            path = Path(tmp) / treebank.stem
            with gzip.open(treebank, "rb") as source, open(path, "wb") as out:
                shutil.copyfileobj(source, out)
        return read_conllu(path)[:sentences]


def syntax_of(lab, parsed: list) -> dict:
    """Clark et al.'s scores on held-out EWT (every head, all relations together): the best head chosen on one half
    and reported on the other with its interval, the random-weight floor (5 seeds), and the best head's attention-tree
    UUAS with its interval (tasks/score_heads.py, as every door runs it)."""
    from bertviz_lab.tasks.score_heads import ScoreHeadsRequest, score_heads

    summary = score_heads(ScoreHeadsRequest(ensembles=False), lambda _: lab, parsed).summary
    row = summary.best_heads.set_index("relation").loc["all"]
    heads = summary.uuas[summary.uuas.predictor == "head"]
    best_tree = heads.loc[heads.uuas.idxmax()]
    chain = summary.uuas[summary.uuas.predictor == "right-branching"].iloc[0]
    return {"sentences": summary.sentences_used,
            "heldout_head": row["heldout_head"], "heldout_direction": row["heldout_direction"],
            "heldout": [round(float(row[c]), 4) for c in ("heldout_accuracy", "heldout_ci_low", "heldout_ci_high")],
            "null": [round(float(row[c]), 4) for c in ("null_accuracy", "null_ci_low", "null_ci_high")],
            "tree_head": f"{int(best_tree.layer)}-{int(best_tree['head'])}",
            "uuas": [round(float(best_tree[c]), 4) for c in ("uuas", "ci_low", "ci_high")],
            "right_branching": round(float(chain.uuas), 4)}


def triple(values: list) -> str:
    return f"{values[0]:.3f} [{values[1]:.3f}, {values[2]:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=200, help="held-out blocks per length")
    parser.add_argument("--treebank", type=Path, default=None, help="held-out UD treebank for the syntax scores")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--write-measures", action="store_true",
                        help="also write measures.json into the twins folder (what the Positions lesson shows)")
    args = parser.parse_args()
    record = twins_record()
    if not record:
        sys.exit(f"no twins in {twins_folder()}: train and export them (python -m bertviz_lab train-twins --help)")
    length = record["recipe"]["length"]
    documents = held_out_documents()
    print(f"twins in {twins_folder()} at step {record['step']}: {record['recipe']['layers']} layers x "
          f"{record['recipe']['hidden']}, trained at {length} WordPieces; held-out documents: {len(documents)}")
    from bertviz_lab.mlm.twin_card import curves_table

    recipe = record["recipe"]
    sizes = {p.name: p.stat().st_size for p in sorted(twins_folder().glob("twin-*.safetensors"))}
    print(f"recipe: {json.dumps({k: v for k, v in recipe.items() if k != 'schemes'})}")
    print(f"shipped: {len(sizes)} twins, {sum(sizes.values()) / 1e6:.1f} MB together (float16, shared words not "
          f"included; target <= 60 MB); legs: " + "; ".join(f"{leg['from_step']}-{leg['to_step']} in {leg['minutes']} "
                                                            "min" for leg in record["legs"] if "from_step" in leg))
    print("\nvalidation loss (masked words, nats) during training:\n")
    print(curves_table(record["history"], list(recipe["schemes"])))
    parsed = read_treebank_file(args.treebank, args.sentences) if args.treebank is not None else None
    measures = {}
    for name in twin_names():
        lab = load(name, device="cpu")
        measured = measures[name] = {"top1": {}, "top5": {}}
        print(f"\n{name}")
        print("| length | top-1 [95% CI] | top-5 [95% CI] | masked words |")
        print("|---|---|---|---|")
        for factor in (1, 2, 4):
            blocks = packed_blocks(lab.tokenizer, documents, length * factor)[:args.blocks]
            acc = masked_accuracy(lab, blocks)
            if "not_measured" in acc:
                print(f"| {length * factor} | {acc['not_measured']} | | |")
                measured["top1"][f"{factor}x"] = measured["top5"][f"{factor}x"] = {"problem": acc["not_measured"]}
            else:
                measured["top1"][f"{factor}x"], measured["top5"][f"{factor}x"] = acc["top1"], acc["top5"]
                print(f"| {length * factor} | {interval(acc['top1'])} | {interval(acc['top5'])} | {acc['top1']['n']} |")
        blocks = packed_blocks(lab.tokenizer, documents, length)[:args.blocks]
        order = measured["order"] = order_sensitivity(lab, blocks)["loss_change"]
        print(f"word order: masked-word loss +{interval(order)} nats when the unmasked words are shuffled "
              f"({order['n']} blocks)")
        distance = measured["distance"] = attention_by_distance(lab, blocks[:min(len(blocks), 50)])
        for row in distance["layers"]:
            print(f"  layer {row['layer']}: previous {interval(row['previous'])}, next {interval(row['next'])}, "
                  f"mean distance {interval(row['distance'])}")
        print(f"  previous-token heads: {', '.join(distance['previous_token_heads']) or 'none'}; next-token heads: "
              f"{', '.join(distance['next_token_heads']) or 'none'}")
        if parsed is not None:
            syntax = measured["syntax"] = syntax_of(lab, parsed)
            print(f"syntax on {syntax['sentences']} held-out sentences of {args.treebank.name} (all relations): best head "
                  f"{syntax['heldout_head']} ({syntax['heldout_direction']}, chosen on one half) "
                  f"{triple(syntax['heldout'])} on the other half; random-weight floor {triple(syntax['null'])}; "
                  f"attention-tree UUAS of head {syntax['tree_head']} {triple(syntax['uuas'])} (right-branching "
                  f"{syntax['right_branching']:.3f})")
    if args.write_measures:
        out = twins_folder() / "measures.json"
        out.write_text(json.dumps({"step": record["step"], "blocks": args.blocks, "twins": measures}, indent=1))
        print(f"\nwrote {out} (the Positions lesson's length demonstration reads it)")


if __name__ == "__main__":
    run_recorded("twins", "The position-scheme twins on held-out text (issue 58)", __doc__, main)
