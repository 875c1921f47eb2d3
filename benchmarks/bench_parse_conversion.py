"""How far the typed-sentence parser's converted arcs agree with gold UD (issue 59): spaCy's small English
pipeline parses the gold words of UD English EWT test (held out: the pipeline is trained on OntoNotes), its
ClearNLP-style tree is converted to UD heads by ``bertviz_lab/syntax/ud_conversion.py``, and the converted and raw
heads are scored against gold (UAS over all words and without punctuation, universal-relation LAS, per gold
relation), each with a 95% percentile-bootstrap interval over sentences (1,000 resamples, seed 0).

With --write-asset the figures go to assets/parser_conversion.json, which the page, the CLI and MCP quote beside a
parser's arcs. With --time it also times what the page does for a typed 20-word sentence (parse, convert, one
forward pass, every head's agreement): median of --repeat on the embedded default, target <= 300 ms.

    python benchmarks/bench_parse_conversion.py --treebank ../shared/data/ud-en-ewt-test.conllu.gz [--time] [--write-asset] [--write]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from sections import run_recorded

from bertviz_lab.syntax.live_parser import clear_parse_words, parser_info
from bertviz_lab.syntax.parser_agreement import CONVERSION_FILE, agreement_records, agreement_summary, interval_text
from bertviz_lab.treebank import read_conllu

TWENTY_WORDS = "The man who lived near the river told the children a long story about his brother during the war ."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--treebank", type=Path, required=True)
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--write-asset", action="store_true")
    args = parser.parse_args()
    gold = read_conllu(args.treebank)
    records = agreement_records(gold, clear_parse_words)
    summary = agreement_summary(records)
    info = parser_info()
    print(f"parser: {info.describe()}; treebank: {args.treebank.name}, {summary['sentences']} sentences, "
          f"{summary['words']} words")
    print(f"{'':34s} {'value [95% interval]':>26s}")
    for key, label in (("raw_uas", "UAS, parser's own heads (ClearNLP)"), ("uas", "UAS, converted to UD"),
                       ("uas_without_punct", "UAS, converted, without punct"),
                       ("las_universal", "LAS (universal relation), conv.")):
        print(f"{label:34s} {interval_text(summary[key]):>26s}")
    print("\nper gold relation (>= 20 words): words, head agreement, head + relation agreement")
    for relation, row in sorted(summary["per_relation"].items(), key=lambda kv: -kv[1]["head"]["words"]):
        print(f"  {relation:12s} {row['head']['words']:6d}  {interval_text(row['head']):>24s}  {interval_text(row['label']):>24s}")
    if args.write_asset:
        CONVERSION_FILE.write_text(json.dumps({"treebank": "UD English EWT test", "file": args.treebank.name,
                                               "parser": info.to_json(), "summary": summary,
                                               "script": "benchmarks/bench_parse_conversion.py"}, indent=1) + "\n",
                                   encoding="utf-8")
        print(f"\nwrote {CONVERSION_FILE.name}")
    if args.time:
        from bertviz_lab.lab import load
        from bertviz_lab.tasks.sentence_syntax import SentenceSyntaxRequest, sentence_syntax

        lab = load("default")
        request = SentenceSyntaxRequest(TWENTY_WORDS)
        for _ in range(3):
            sentence_syntax(request, lab)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            sentence_syntax(request, lab)
            times.append(time.perf_counter() - start)
        print(f"\ntyped 20-word sentence, parse + convert + forward + agreement on {lab.checkpoint_info().checkpoint}: "
              f"median {1000 * statistics.median(times):.1f} ms over {args.repeat} (target <= 300 ms)")


if __name__ == "__main__":
    run_recorded("parse-conversion", "Typed-sentence parser: converted arcs vs gold UD (issue 59)", __doc__.split("\n\n")[0], main)
