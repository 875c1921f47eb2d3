"""The README quotes the shipped head, never typed figures: its section ``readme-mlm-figures`` (written by
``python benchmarks/mlm_head.py --write``) must give what the shipped head gives now: the top prediction
for "The capital of France is [MASK]." with its probability, and the teaching set's per-topic counts."""
import re
from pathlib import Path

import pytest

from bertviz_lab.mlm.teaching import FRANCE, evaluate_teaching, topic_label
from bertviz_lab.resources import DEFAULT_MLM_HEAD

ROOT = Path(__file__).resolve().parent.parent
SECTION = re.compile(r"<!-- begin readme-mlm-figures: benchmarks/mlm_head\.py -->(.*?)<!-- end readme-mlm-figures -->",
                     re.S)
ROW = re.compile(r"^\| (.+?) \| (\d+) \| \**(\d+)(?: \(\d+%\))?\** \| \**(\d+)(?: \(\d+%\))?\** \|$", re.M)
PREDICTION = re.compile(r'"' + re.escape(FRANCE) + r'" → \*\*(\S+?)\*\* \(probability (\d\.\d{3});')
REGENERATE = "regenerate it with `python benchmarks/mlm_head.py --write`"


def readme_section() -> str:
    found = SECTION.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md needs exactly one readme-mlm-figures section"
    return found[0]


def quoted_counts(section: str) -> dict[str, tuple[int, int, int]]:
    """The teaching table as the README prints it: label -> (n, top-1 hits, top-5 hits)."""
    return {label: (int(n), int(one), int(five)) for label, n, one, five in ROW.findall(section)}


def test_the_parser_reads_the_table_and_the_prediction_as_printed():
    section = ('"The capital of France is [MASK]." → **paris** (probability 0.049; then great 0.043)\n\n'
               "| topic | n | accepted at top 1 | accepted in top 5 |\n|---|---:|---:|---:|\n"
               "| capitals | 5 | 2 | 5 |\n| **all** | 42 | **16 (38%)** | **34 (81%)** |\n")
    assert quoted_counts(section) == {"capitals": (5, 2, 5), "**all**": (42, 16, 34)}
    assert PREDICTION.search(section).groups() == ("paris", "0.049")


@pytest.mark.skipif(not (DEFAULT_MLM_HEAD / "head.safetensors").is_file(), reason="no trained head shipped")
def test_the_readme_quotes_what_the_shipped_head_gives(default_lab):
    section = readme_section()
    assert default_lab.checkpoint_info().sha256[:12] in section, f"the section names other weights; {REGENERATE}"
    top = default_lab.analyze(FRANCE, top_k=1).mlm[0].predictions[0]
    quoted = PREDICTION.search(section)
    assert quoted, f"the README's section has no prediction for {FRANCE!r}; {REGENERATE}"
    word, probability = quoted.group(1), float(quoted.group(2))
    assert word == top.token, f"the README says {word}, the head says {top.token}; {REGENERATE}"
    assert abs(top.probability - probability) <= 0.0006, (top.probability, probability, REGENERATE)

    teaching = evaluate_teaching(default_lab)
    measured = {topic_label(t): (r["n"], r["top1_hits"], r["top5_hits"]) for t, r in teaching["topics"].items()}
    measured["**all**"] = (teaching["n"], teaching["top1_hits"], teaching["top5_hits"])
    assert quoted_counts(section) == measured, REGENERATE
