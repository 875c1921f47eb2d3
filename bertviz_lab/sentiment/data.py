"""SST-2 as GLUE distributes it: a tab-separated file with a header naming a text column
(``sentence``, or ``content``/``text`` in some public copies) and a ``label`` column (0 negative,
1 positive), in either order. Rows are read without quoting, as GLUE writes them (sentences hold
quote characters such as ``` `` ```)."""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

TEXT_COLUMNS = ("sentence", "content", "text")
LABELS = ("negative", "positive")  # SST-2's label ids 0 and 1


@dataclass(frozen=True)
class Labelled:
    sentences: list[str]
    labels: list[int]
    sha256: str  # of the file's bytes, so a run records exactly which copy it read


def read_sst2(path: str | Path) -> Labelled:
    """Every (sentence, label) row of ``path``; an error names the first row that is neither."""
    raw = Path(path).read_bytes()
    rows = list(csv.reader(raw.decode("utf-8-sig").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        raise ValueError(f"{path} is empty")
    header = [c.strip().lower() for c in rows[0]]
    text = next((c for c in TEXT_COLUMNS if c in header), None)
    if text is None or "label" not in header:
        raise ValueError(f"{path}: the header needs a text column ({', '.join(TEXT_COLUMNS)}) and 'label'; "
                         f"it has {', '.join(header)}")
    t, lab = header.index(text), header.index("label")
    sentences, labels = [], []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) <= max(t, lab) or row[lab].strip() not in ("0", "1"):
            raise ValueError(f"{path}, line {number}: expected a sentence and a label 0 or 1, got {row!r}")
        sentences.append(row[t].strip())
        labels.append(int(row[lab]))
    return Labelled(sentences, labels, hashlib.sha256(raw).hexdigest())
