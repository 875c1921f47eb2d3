"""Everything the model card states about a trained head, measured in one place: masked-word
accuracy on each source's held-out slice (and the running-text slices pooled: "natural
English"), next-sentence accuracy on the held-out running-text passages, and the teaching set."""
from __future__ import annotations

import json
from pathlib import Path

from ..lab import Lab
from .evaluate import evaluate, wilson_interval
from .evaluate_nsp import evaluate_nsp
from .running_text import read_documents
from .teaching import evaluate_teaching


def held_out_sources(corpus: Path) -> list[dict]:
    record = json.loads((corpus / "corpus.json").read_text())
    return record.get("sources") or [{"name": "wordnet", "heldout_file": "heldout.txt"}]


def heldout_report(lab: Lab, corpus: Path, seed: int = 0) -> dict:
    """``corpus`` is a folder written by build-corpus (or the shipped head folder, which carries the
    same held-out files and corpus.json)."""
    per_source, running_docs = {}, []
    pooled_one = pooled_five = pooled_n = 0
    for source in held_out_sources(corpus):
        path = corpus / source["heldout_file"]
        if not path.is_file():
            continue
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        scores = evaluate(lab, lines, seed=seed, progress=False)
        per_source[source["name"]] = scores
        if source["name"] != "wordnet":
            running_docs += read_documents(path)
            pooled_one += round(scores["top1"] * scores["n"])
            pooled_five += round(scores["top5"] * scores["n"])
            pooled_n += scores["n"]
    report: dict = {"model": lab.name, "mlm": per_source}
    if pooled_n:
        report["natural_english"] = {"top1": pooled_one / pooled_n, "top5": pooled_five / pooled_n, "n": pooled_n,
                                     "top1_ci": wilson_interval(pooled_one, pooled_n),
                                     "top5_ci": wilson_interval(pooled_five, pooled_n)}
    if lab.model.has_nsp_head and len(running_docs) > 1:
        report["nsp"] = evaluate_nsp(lab, running_docs, seed=seed, progress=False)
    teaching = evaluate_teaching(lab)
    report["teaching"] = {k: v for k, v in teaching.items() if k != "model"}
    return report
