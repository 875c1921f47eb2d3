"""How the Interventions tab titles and words a result: what produced it (the intervention, the input, the
settings, the weights), what it found, a warning that points where to act, and a cell with its interval."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..sentences import truncation_note
from .tabs import EXPLAIN_COLUMNS


def cut_note(truncated: int) -> str:
    """" (3 lines were longer than 128 tokens and cut ...)." after a set's message, or nothing."""
    note = truncation_note(truncated)
    return f" {note[0].upper()}{note[1:]}." if note else ""

POINTER = " Pick them under **Mask tokens** in the left column."  # views.js scrolls there (bvl.point)
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")


def quoted(text: str, limit: int = 60) -> str:
    """The user's text inside a Markdown title: cut to ``limit`` characters, Markdown and HTML characters
    escaped, so what they typed is shown and never rendered."""
    cut = text if len(text) <= limit else text[:limit - 1] + "…"
    return "“" + MARKDOWN_SPECIAL.sub(r"\\\1", cut) + "”"


def title(what: str, found: str, run_on: tuple[str, str | None] | None = None, settings: str = "",
          weights: str = "") -> str:
    """A result's title: what produced it (the intervention, the input, its settings and weights), then what
    it found."""
    parts = [f"**{what}**"]
    if run_on is not None:
        parts.append("on " + quoted(run_on[0]) + (" + " + quoted(run_on[1]) if run_on[1] else ""))
    parts += [part for part in (settings, f"weights: {weights}" if weights else "") if part]
    return " · ".join(parts) + "\n\n" + found


def warning(error: Exception) -> str:
    """An error as the tab shows it; one that needs picked tokens says where the picker is."""
    text = str(error)
    needs_tokens = text.startswith("choose the tokens") or "pick tokens" in text
    return f"⚠️ {text}." + (POINTER if needs_tokens else "") if needs_tokens else f"⚠️ {text}"


SET_NAMES = {"heldout": "held-out lines", "sample": "sample treebank", "upload": "uploaded file"}


def with_interval(mean: float, low: float, high: float) -> str:
    """One cell: the mean and its 95% interval, so a table of several scores stays narrow."""
    if not np.isfinite(mean):
        return "—"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def faith_table(table: pd.DataFrame) -> pd.DataFrame:
    """The faithfulness rows as the page shows them: one column per score, its unit in the header and its
    interval in the cell."""
    out = pd.DataFrame({"ranking": table["ranking"]})
    for key, low, high in (("aopc", "ci_low", "ci_high"),
                           ("comprehensiveness", "comprehensiveness_ci_low", "comprehensiveness_ci_high"),
                           ("sufficiency", "sufficiency_ci_low", "sufficiency_ci_high")):
        if key in table:
            out[f"{EXPLAIN_COLUMNS[key]} [95% CI]"] = [with_interval(*row) for row in
                                                       table[[key, low, high]].itertuples(index=False)]
    out["n"] = table["n"].astype(int)
    return out


TIES_NOTE = ("Rankings that put this input's tokens in the same order score the same, so they share a row. One input "
             "gives no interval: the faithfulness check over a sentence set (Interventions tab) gives each ranking "
             "its 95% interval.")


def collapsed_ties(table: pd.DataFrame) -> pd.DataFrame:
    """The one-input faithfulness rows with every group of rankings that score exactly alike (they order the
    tokens the same way: 'norm (last layer) = alti') in one row, first where the first of them was."""
    scores = [c for c in table.columns if c != "ranking"]
    groups: dict[tuple, list] = {}  # exact values (NaN and None included): equal scores, equal token orders
    for name, *values in table[["ranking", *scores]].itertuples(index=False):
        groups.setdefault(tuple(map(repr, values)), [[], values])[0].append(str(name))
    return pd.DataFrame([[" = ".join(names), *values] for names, values in groups.values()], columns=table.columns)


def set_settings(sentence_set: str, upload: str | None, n: Any, *more: str) -> str:
    """A set result's settings: which sentences (an upload by its file name), how many, and the rest."""
    which = SET_NAMES.get(sentence_set, "held-out lines")
    if sentence_set == "upload" and upload:
        which += " " + quoted(Path(upload).name, 40)
    count = int(n) if isinstance(n, (int, float)) else n
    return ", ".join((f"{which}, up to {count} sentences", *more))
