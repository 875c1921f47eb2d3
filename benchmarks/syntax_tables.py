"""Which heads track which dependency relation, per source, on a UD treebank's dev split: for every
relation with >= 50 arcs, the head chosen on a seeded half of the sentences and its accuracy on the
other half (95% bootstrap interval over sentences, 1,000 resamples), with softmax attention and with
the norm of the weighted vectors ‖αf(x)‖ (Kobayashi et al. 2020) as the source, and the UUAS of the
best head's spanning tree next to right-branching (punctuation included). Published MiniLM weights.
Significance against the offset baseline and the null model: the "Best heads in sample and held
out" section, written by benchmarks/conclusions.py.

    python benchmarks/syntax_tables.py --conllu en_ewt-ud-dev.conllu [--write]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sections import markdown_table, run_recorded

from bertviz_lab import load
from bertviz_lab.bert import ORIGINAL_CHECKPOINT
from bertviz_lab.syntax.run import run_syntax
from bertviz_lab.syntax.summary import Settings
from bertviz_lab.treebank import read_conllu

SOURCES = ("attention", "norm")


def heldout(r) -> str:
    return (f"{r.heldout_head} {r.heldout_direction}: {r.heldout_accuracy:.3f} "
            f"[{r.heldout_ci_low:.3f}, {r.heldout_ci_high:.3f}]")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conllu", type=Path, required=True, help="a UD dev split (never a test split)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if "test" in args.conllu.name:
        parser.error("the test split is for final evaluation only; use the dev split")
    lab = load(ORIGINAL_CHECKPOINT, device=args.device)
    sentences = read_conllu(args.conllu)
    summaries = {}
    for source in SOURCES:
        start = time.perf_counter()
        summaries[source] = run_syntax(lab, sentences, Settings(resamples=1000, seed=0, min_arcs=50), null=False,
                                       source=source).summary
        print(f"{source}: {summaries[source].sentences_used} sentences scored in {time.perf_counter() - start:.1f} s")
    first = summaries[SOURCES[0]]
    print(f"\n{args.conllu.name}, {first.checkpoint.describe()}; held-out head: accuracy [95% CI]\n")
    tables = {s: summary.best_heads.set_index("relation") for s, summary in summaries.items()}
    rows = [[relation, int(tables[SOURCES[0]].loc[relation, "count"]),
             *(heldout(tables[s].loc[relation]) for s in SOURCES)] for relation in tables[SOURCES[0]].index]
    print(markdown_table(["relation", "arcs", *SOURCES], rows))
    print()
    for source, summary in summaries.items():
        uuas = summary.uuas
        heads = uuas[uuas.predictor == "head"]
        best = heads.loc[heads.uuas.idxmax()]
        chain = uuas[uuas.predictor == "right-branching"].iloc[0]
        print(f"UUAS ({source}): best head {int(best.layer)}-{int(best['head'])} {best.uuas:.3f} "
              f"[{best.ci_low:.3f}, {best.ci_high:.3f}]; right-branching {chain.uuas:.3f} "
              f"[{chain.ci_low:.3f}, {chain.ci_high:.3f}]")


if __name__ == "__main__":
    run_recorded("syntax-tables", "Heads per relation, attention and norms, held out", __doc__, main)
