"""One syntax run, as the CLI and the app both do it: score the treebank with the chosen weights,
with the null model, and optionally with a second checkpoint, then summarise."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from ..bert import DEFAULT_SOURCE, ORIGINAL_SOURCE
from ..lab import Lab, null_model
from ..treebank import Sentence
from .scoring import check_scored, score_treebank
from .summary import Settings, SyntaxSummary, compare_checkpoints, summarise

Progress = Callable[[float, str], None]


def attention_weights_source(source: str | None) -> str:
    """Attention studied for its own sake runs on published weights: ``default`` (whose top layers
    bertviz-lab fine-tuned for masked words) becomes ``minilm-original``; anything else as given."""
    return ORIGINAL_SOURCE if source in (None, "", DEFAULT_SOURCE) else source


@dataclass
class SyntaxRun:
    summary: SyntaxSummary
    compare: pd.DataFrame | None = None  # B minus A per head, when a second checkpoint was scored
    compare_name: str = ""


def run_syntax(lab: Lab, sentences: Sequence[Sentence], settings: Settings | None = None, null: bool = True,
               compare_lab: Lab | None = None, batch_size: int = 32, max_length: int | None = None,
               max_sentences: int | None = None, progress: Progress | None = None,
               source: str = "attention") -> SyntaxRun:
    settings = settings or Settings()
    seeds = settings.null_seed_list() if null else []
    steps = 1 + len(seeds) + int(compare_lab is not None)

    def stage(i: int, what: str):
        if progress is None:
            return None
        return lambda done, total: progress((i + done / max(total, 1)) / steps, f"{what}: {done}/{total} sentences")

    kwargs = {"batch_size": batch_size, "max_length": max_length, "max_sentences": max_sentences, "source": source}
    scores = score_treebank(lab, sentences, progress=stage(0, "scoring heads"), **kwargs)
    check_scored(scores, lab, max_length)
    null_scores = [score_treebank(null_model(lab, seed), sentences, progress=stage(1 + i, f"null model, seed {seed}"),
                                  **kwargs) for i, seed in enumerate(seeds)]
    summary = summarise(scores, null_scores, settings)
    if compare_lab is None:
        return SyntaxRun(summary)
    other = score_treebank(compare_lab, sentences, progress=stage(steps - 1, "second checkpoint"), **kwargs)
    return SyntaxRun(summary, compare_checkpoints(scores, other, settings), other.checkpoint.describe())
