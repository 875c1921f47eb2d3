"""The teaching set: cloze sentences a teacher types first (capitals, everyday objects, verbs of
daily life, agreement, pronouns, word-sense ambiguity, common knowledge), each with the answers a
teacher would accept. It is written by hand and never trained on; it says whether the masked-word
predictions are good enough to teach with, which held-out accuracy on running text does not."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..lab import InputError, Lab
from ..resources import ASSETS
from .evaluate import wilson_interval

TEACHING_SET = ASSETS / "teaching_cloze.tsv"
# The shipped set's topics in words a reader of the README understands (the file keeps short keys)
TOPIC_LABELS = {"capitals": "capitals", "objects": "everyday objects", "daily verbs": "verbs of daily life",
                "agreement": 'agreement ("The keys to the cabinet [MASK] ...")', "pronouns": "pronouns",
                "ambiguity": "bank / river ambiguity", "knowledge": "common knowledge"}
FRANCE = "The capital of France is [MASK]."  # the sentence a teacher types first; the README quotes its answer


def topic_label(topic: str) -> str:
    return TOPIC_LABELS.get(topic, topic)


@dataclass
class ClozeItem:
    topic: str
    sentence: str
    answers: frozenset[str]


def read_teaching_set(path: Path = TEACHING_SET) -> list[ClozeItem]:
    """Tab-separated ``topic, sentence, answers`` (answers split by ``|``); ``#`` lines are comments."""
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.DictReader((ln for ln in handle if not ln.startswith("#")), delimiter="\t"))
    items = []
    for number, row in enumerate(rows, 2):
        sentence = (row.get("sentence") or "").strip()
        if sentence.upper().count("[MASK]") != 1 or not (row.get("answers") or "").strip():
            raise ValueError(f"{path}: row {number} needs one [MASK] and at least one answer")
        items.append(ClozeItem(row["topic"].strip(), sentence,
                               frozenset(a.strip().lower() for a in row["answers"].split("|") if a.strip())))
    return items


def evaluate_teaching(lab: Lab, items: list[ClozeItem] | None = None) -> dict:
    """How many sentences have an accepted answer at top 1 and within the top 5, overall and per
    topic, with each sentence's top 5 (so a teacher sees what the model says)."""
    if not lab.model.has_mlm_head:
        raise ValueError(f"{lab.name} has no MLM head, so the teaching set cannot be scored")
    items = read_teaching_set() if items is None else items
    rows = []
    for item in items:
        result = lab.analyze(item.sentence, top_k=5)
        top = [p.token.lower().lstrip("Ġ▁") for p in result.mlm[0].predictions]
        rows.append({"topic": item.topic, "sentence": item.sentence, "answers": sorted(item.answers), "top5": top,
                     "top1_ok": top[0] in item.answers, "top5_ok": any(t in item.answers for t in top)})

    def summary(chosen: list[dict]) -> dict:
        n, one, five = len(chosen), sum(r["top1_ok"] for r in chosen), sum(r["top5_ok"] for r in chosen)
        return {"top1": one / n if n else 0.0, "top5": five / n if n else 0.0, "top1_hits": one, "top5_hits": five,
                "n": n, "top1_ci": wilson_interval(one, n), "top5_ci": wilson_interval(five, n)}

    topics = list(dict.fromkeys(r["topic"] for r in rows))
    return {**summary(rows), "topics": {t: summary([r for r in rows if r["topic"] == t]) for t in topics},
            "items": rows, "model": lab.name}


def score_teaching_file(lab: Lab, path: Path | None = None) -> dict:
    """``evaluate_teaching`` on the shipped teaching set or on another file of its form, refused with
    one sentence when the file is missing or not a teaching set."""
    path = TEACHING_SET if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        items = read_teaching_set(path)
    except (ValueError, KeyError) as error:
        raise InputError(f"{path}: not a teaching set ({error})") from None
    return evaluate_teaching(lab, items)
