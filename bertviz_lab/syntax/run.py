"""One syntax run, as the CLI and the app both do it: score the treebank with the chosen weights,
with the null model, and optionally with a second checkpoint, then summarise."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..bert import DEFAULT_CHECKPOINT, ORIGINAL_CHECKPOINT
from ..lab import Lab, null_model
from ..treebank import Sentence
from .ensembles import word_maps
from .scoring import check_scored, score_treebank
from .statistics import Resampler, split_sentences
from .structure import relation_ensembles
from .summary import Settings, SyntaxSummary, compare_checkpoints, summarise

Progress = Callable[[float, str], None]


def published_checkpoint(checkpoint: str | None) -> str:
    """Attention studied for its own sake runs on published weights: ``default`` (whose layers
    bertviz-lab fine-tuned for masked words) becomes ``minilm-original``; anything else as given."""
    return ORIGINAL_CHECKPOINT if checkpoint in (None, "", DEFAULT_CHECKPOINT) else checkpoint


attention_weights_source = published_checkpoint  # the old name (before issue 42), kept for one release


def with_ensembles(lab: Lab, sentences: Sequence[Sentence], scores, summary: SyntaxSummary, batch_size: int,
                   max_length: int | None) -> pd.DataFrame:
    """best_heads with the ensemble columns joined by relation."""
    settings = summary.settings
    maps = word_maps(lab, sentences, batch_size, max_length)
    select, report = split_sentences(scores.arcs.sentence, settings.select_fraction, settings.seed)
    held = Resampler.over(report, max(settings.resamples, 1), settings.seed + 1)
    table = relation_ensembles(maps, list(summary.best_heads.relation), select, held.sentences, held)
    return summary.best_heads.merge(table, on="relation", how="left") if len(table) else summary.best_heads


@dataclass
class SyntaxRun:
    summary: SyntaxSummary
    compare: pd.DataFrame | None = None  # B minus A per head, when a second checkpoint was scored
    compare_name: str = ""


def run_syntax(lab: Lab, sentences: Sequence[Sentence], settings: Settings | None = None, null: bool = True,
               compare_lab: Lab | None = None, batch_size: int = 32, max_length: int | None = None,
               max_sentences: int | None = None, progress: Progress | None = None,
               source: str = "attention", ensembles: bool = False) -> SyntaxRun:
    """``ensembles`` adds head ensembles per relation (``ensembles.py``) to best_heads, chosen and
    reported on the same halves as the held-out single head (softmax attention only)."""
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
    if ensembles and source == "attention" and len(summary.best_heads):
        summary.best_heads = with_ensembles(lab, sentences[:max_sentences] if max_sentences else sentences, scores,
                                            summary, batch_size, max_length)
    if compare_lab is None:
        return SyntaxRun(summary)
    other = score_treebank(compare_lab, sentences, progress=stage(steps - 1, "second checkpoint"), **kwargs)
    return SyntaxRun(summary, compare_checkpoints(scores, other, settings), other.checkpoint.describe())


def score_record(summary: SyntaxSummary, files: dict[str, Path]) -> dict:
    """What one scored treebank says: sentences used and skipped (and why), the weights by name and
    hash, and the files written."""
    return {"sentences": summary.sentences_used, "skipped": summary.sentences_skipped,
            "skipped_empty_words": summary.sentences_skipped_empty_words,
            "words_without_pieces": summary.words_without_pieces,
            "model": summary.checkpoint.describe(), "model_sha256": summary.checkpoint.sha256,
            **{k: str(v) for k, v in files.items()}}
