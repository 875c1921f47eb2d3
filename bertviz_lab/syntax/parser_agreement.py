"""How far a parser's converted arcs can be trusted: its UD heads against a gold treebank's, per
word, pooled as UAS (and per gold relation) with percentile-bootstrap intervals over sentences.

The page shows this number where it draws a parser's arcs, so that "the parser says" carries its
own error bar; ``benchmarks/bench_parse_conversion.py`` measures it on UD English EWT test (held
out: spaCy's English pipelines are trained on OntoNotes, not EWT) and writes
``assets/parser_conversion.json``. The parser's own ClearNLP heads are scored too: the gap between
the two is what the conversion rules buy.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..resources import ASSETS
from ..treebank import Sentence
from .statistics import Resampler, estimate
from .ud_conversion import ClearParse, to_ud

CONVERSION_FILE = ASSETS / "parser_conversion.json"


def universal(relation: str) -> str:
    return relation.split(":")[0]


def agreement_records(gold: Iterable[Sentence], clear_parse: Callable[[Sequence[str]], ClearParse]) -> pd.DataFrame:
    """One row per gold word: its gold head and relation, the converted parse's, and the parser's raw head."""
    rows = []
    for index, sentence in enumerate(gold):
        raw = clear_parse(sentence.words)
        converted = to_ud(raw)
        for i in range(len(sentence.words)):
            rows.append({"sentence": index, "gold_head": sentence.heads[i], "gold_relation": universal(sentence.relations[i]),
                         "parsed_head": converted.heads[i], "parsed_relation": universal(converted.relations[i]),
                         "raw_head": raw.heads[i]})
    return pd.DataFrame(rows)


def _share(records: pd.DataFrame, hits: np.ndarray, resampler: Resampler) -> dict:
    est = estimate(records.sentence.to_numpy(), hits.reshape(len(records), -1), resampler)
    low, high = est.interval()
    return {"value": float(est.accuracy[0]), "low": float(low[0]), "high": float(high[0]), "words": est.total}


def agreement_summary(records: pd.DataFrame, resamples: int = 1000, seed: int = 0, min_words: int = 20) -> dict:
    """UAS of the converted parse (all words, and without punctuation), the raw parse's UAS, labelled
    agreement on the universal relation, and per gold relation with at least ``min_words`` words."""
    resampler = Resampler.over(records.sentence.to_numpy(), resamples, seed)
    head_ok = (records.parsed_head == records.gold_head).to_numpy()
    label_ok = head_ok & (records.parsed_relation == records.gold_relation).to_numpy()
    raw_ok = (records.raw_head == records.gold_head).to_numpy()
    content = (records.gold_relation != "punct").to_numpy()
    out = {"sentences": int(records.sentence.nunique()), "words": len(records),
           "uas": _share(records, head_ok, resampler), "las_universal": _share(records, label_ok, resampler),
           "uas_without_punct": _share(records[content], head_ok[content], resampler),
           "raw_uas": _share(records, raw_ok, resampler), "per_relation": {}}
    counts = records.gold_relation.value_counts()
    for relation in counts[counts >= min_words].index:
        keep = (records.gold_relation == relation).to_numpy()
        out["per_relation"][relation] = {"head": _share(records[keep], head_ok[keep], resampler),
                                         "label": _share(records[keep], label_ok[keep], resampler)}
    return out


def interval_text(share: dict) -> str:
    return f"{share['value']:.3f} [{share['low']:.3f}, {share['high']:.3f}]"


def shipped_agreement(path: Path = CONVERSION_FILE) -> dict | None:
    """The measured agreement shipped with the lab (None when it has not been measured)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def agreement_note(measured: dict | None = None) -> str:
    """One line for beside a parser's arcs: what the converted parse's agreement with gold UD is."""
    measured = shipped_agreement() if measured is None else measured
    if not measured:
        return "The conversion's agreement with gold UD trees has not been measured on this install."
    m = measured["summary"]
    return (f"Checked against gold: on {m['sentences']:,} held-out sentences of {measured['treebank']}, the converted "
            f"parse gives {m['words']:,} words the gold head {interval_text(m['uas'])} of the time (UAS; 95% "
            f"bootstrap interval over sentences), the gold head and relation {interval_text(m['las_universal'])}.")
