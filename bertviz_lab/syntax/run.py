"""One syntax run, as the CLI and the app both do it: score the treebank with the chosen weights,
with the null model, and optionally with a second checkpoint, then summarise."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..bert import DEFAULT_CHECKPOINT, ORIGINAL_CHECKPOINT
from ..lab import Lab, null_model
from ..treebank import Sentence
from .ensembles import WordMaps, word_maps
from .scoring import check_scored, score_treebank
from .statistics import Resampler, split_sentences
from .structure import relation_ensembles
from .summary import Settings, SyntaxSummary, compare_checkpoints, summarise

Progress = Callable[[float, str], None]
Steps = Callable[[int, int], None]


def syntax_passes(null_seeds: Sequence[int], compare: bool, ensembles: bool) -> list[str]:
    """Every pass a syntax run makes over the treebank's sentences, named, in order: the checkpoint,
    each null model, the head ensembles' attention maps, the second checkpoint."""
    return (["the checkpoint"] + [f"null model, seed {seed}" for seed in null_seeds]
            + (["head ensembles"] if ensembles else []) + (["second checkpoint"] if compare else []))


class PassCounter:
    """One ``(done, total)`` over all of a run's passes, in sentence passes (each pass takes every
    kept sentence once): the first pass's own total fixes the whole, ``passes x sentences``."""

    def __init__(self, passes: int, steps: Steps | None) -> None:
        self.passes, self.steps, self.sentences = passes, steps, 0

    def of(self, index: int) -> Steps | None:
        """Pass ``index``'s own ``(done, total)`` told as the run's."""
        if self.steps is None:
            return None

        def report(done: int, total: int) -> None:
            self.sentences = self.sentences or total
            self.steps(index * self.sentences + round(done * self.sentences / max(total, 1)),
                       self.passes * self.sentences)
        return report

    def finish(self) -> None:
        """The bar ends at its total, also when a pass had nothing to do (no relation to ensemble)."""
        if self.steps is not None:
            self.steps(self.passes * self.sentences, self.passes * self.sentences)


def published_checkpoint(checkpoint: str | None) -> str:
    """Attention studied for its own sake runs on published weights: ``default`` (whose layers
    bertviz-lab fine-tuned for masked words) becomes ``minilm-original``; anything else as given."""
    return ORIGINAL_CHECKPOINT if checkpoint in (None, "", DEFAULT_CHECKPOINT) else checkpoint




def with_ensembles(maps: WordMaps, scores, summary: SyntaxSummary) -> pd.DataFrame:
    """best_heads with the ensemble columns joined by relation, from the sentences' word maps."""
    settings = summary.settings
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
               source: str = "attention", ensembles: bool = False, steps: Steps | None = None) -> SyntaxRun:
    """``ensembles`` adds head ensembles per relation (``ensembles.py``) to best_heads, chosen and
    reported on the same halves as the held-out single head (softmax attention only).
    ``progress(fraction, what)`` follows the scoring passes (the app's bar); ``steps(done, total)``
    counts sentence passes over every pass ``syntax_passes`` names (the command line's bar)."""
    settings = settings or Settings()
    seeds = settings.null_seed_list() if null else []
    stages = 1 + len(seeds) + int(compare_lab is not None)
    ensembles = ensembles and source == "attention"
    passes = syntax_passes(seeds, compare_lab is not None, ensembles)
    counter = PassCounter(len(passes), steps)

    def stage(i: int, what: str, count: int) -> Steps:
        def report(done: int, total: int) -> None:
            if progress is not None:
                progress((i + done / max(total, 1)) / stages, f"{what}: {done}/{total} sentences")
            if steps is not None:
                counter.of(count)(done, total)
        return report

    kwargs = {"batch_size": batch_size, "max_length": max_length, "max_sentences": max_sentences, "source": source}
    scores = score_treebank(lab, sentences, progress=stage(0, "scoring heads", 0), **kwargs)
    check_scored(scores, lab, max_length)
    null_scores = [score_treebank(null_model(lab, seed), sentences,
                                  progress=stage(1 + i, f"null model, seed {seed}", 1 + i), **kwargs)
                   for i, seed in enumerate(seeds)]
    summary = summarise(scores, null_scores, settings)
    if ensembles and len(summary.best_heads):
        maps = word_maps(lab, sentences[:max_sentences] if max_sentences else sentences, batch_size, max_length,
                         progress=counter.of(passes.index("head ensembles")))
        summary.best_heads = with_ensembles(maps, scores, summary)
    if compare_lab is None:
        counter.finish()
        return SyntaxRun(summary)
    other = score_treebank(compare_lab, sentences, progress=stage(stages - 1, "second checkpoint", len(passes) - 1),
                           **kwargs)
    counter.finish()
    return SyntaxRun(summary, compare_checkpoints(scores, other, settings), other.checkpoint.describe())


def score_record(summary: SyntaxSummary, files: dict[str, Path]) -> dict:
    """What one scored treebank says: sentences used and skipped (and why), the weights by name and
    hash, and the files written."""
    return {"sentences": summary.sentences_used, "skipped": summary.sentences_skipped,
            "skipped_empty_words": summary.sentences_skipped_empty_words,
            "words_without_pieces": summary.words_without_pieces,
            "model": summary.checkpoint.describe(), "model_sha256": summary.checkpoint.sha256,
            **{k: str(v) for k, v in files.items()}}


# ---- best_heads.csv: one row per relation and measure (tidy), not one 50-column row per relation ----
@dataclass(frozen=True)
class Measure:
    """One measure of a relation's best-heads row: the wide row's columns it is read from (None:
    the measure has no such part) and how the report names it."""

    name: str  # the ``measure`` column of best_heads.csv
    label: str  # what the report calls it
    value: str
    predictor: str | None = None  # the head(s), offset or model the value is about
    direction: str | None = None
    ci: tuple[str, str] | None = None  # 95% bootstrap interval
    p_value: str | None = None
    verdict: str | None = None


MEASURES = (
    Measure("best_head", "best head, in sample", "accuracy", "best_head", "direction", ("ci_low", "ci_high"),
            "p_value_in_sample"),
    Measure("baseline", "best fixed offset, in sample", "baseline_accuracy", "baseline_offset", None,
            ("baseline_ci_low", "baseline_ci_high")),
    Measure("heldout_head", "best head, held out (chosen on the other half)", "heldout_accuracy", "heldout_head",
            "heldout_direction", ("heldout_ci_low", "heldout_ci_high")),
    Measure("heldout_baseline", "best fixed offset, held out", "heldout_baseline_accuracy", "heldout_baseline_offset"),
    Measure("heldout_difference", "held-out head minus held-out offset", "heldout_difference", None, None,
            ("heldout_difference_ci_low", "heldout_difference_ci_high"), "heldout_p_value", "heldout_verdict"),
    Measure("null_model", "random weights' best head (mean over seeds)", "null_accuracy", "null_best_head", None,
            ("null_ci_low", "null_ci_high")),
    Measure("null_seeds", "random-weight models (seeds)", "null_seeds"),
    Measure("null_seed_min", "random weights' best head, lowest seed", "null_seed_min"),
    Measure("null_seed_max", "random weights' best head, highest seed", "null_seed_max"),
    Measure("tree_recall", "recall in the tree of the head with the best tree (UUAS)", "tree_recall", "tree_head"),
    Measure("chain_recall", "recall of the right-branching chain", "chain_recall"),
    Measure("ensemble", "head ensemble, held out", "ensemble_accuracy", "ensemble_heads", "ensemble_direction",
            ("ensemble_ci_low", "ensemble_ci_high")),
    Measure("ensemble_single", "single head beside the ensemble, held out", "single_accuracy", "single_head",
            "single_direction", ("single_ci_low", "single_ci_high")),
    Measure("ensemble_gain", "ensemble minus single head", "ensemble_gain", None, None,
            ("ensemble_gain_ci_low", "ensemble_gain_ci_high"), None, "ensemble_verdict"),
    Measure("ensemble_arcs", "arcs the ensemble is scored on (report half, no root)", "ensemble_arcs"),
)
LONG_COLUMNS = ["relation", "arcs", "measure", "predictor", "direction", "value", "ci_low", "ci_high", "p_value",
                "verdict"]
BEST_HEADS_NOTE = (
    "best_heads.csv has one row per relation and measure. Columns: model, model_sha256, source (the weights and "
    "what their heads were scored on; a job adds treebank and language); relation; arcs (the relation's arcs, root "
    "words included for 'all'); measure (which number the row holds: best_head, baseline, heldout_head, "
    "heldout_baseline, heldout_difference, null_model, null_seeds, null_seed_min, null_seed_max, tree_recall, "
    "chain_recall, ensemble, ensemble_single, ensemble_gain, ensemble_arcs); predictor (the layer-head, ensemble "
    "heads, 'offset +k' or the head with the best tree the value is about); direction (dep->head, head->dep, "
    "head-row->dep); value (an accuracy, share of arcs 0-1; a difference of two accuracies for *_difference and "
    "*_gain; a count for null_seeds and ensemble_arcs); ci_low, ci_high (95% bootstrap interval over sentences); "
    "p_value (best_head: share of resamples where the head does not beat the offset; heldout_difference: the same "
    "on the held-out half); verdict (the sentence the paired interval supports).")


def offset_text(offset: Any) -> str:
    """A fixed offset as the tables name it: "offset +1", "offset -2"."""
    return "" if pd.isna(offset) or offset == "" else f"offset {int(offset):+d}"


def best_heads_long(best: pd.DataFrame) -> pd.DataFrame:
    """The wide best-heads table (one row per relation, ``SyntaxSummary.best_heads``) as best_heads.csv
    holds it: one row per relation and measure, every number of the wide row kept once, in
    LONG_COLUMNS after the columns that name the weights (and, in a job, the treebank)."""
    fields = {c for m in MEASURES for c in (m.value, m.predictor, m.direction, m.p_value, m.verdict, *(m.ci or ()))}
    keys = [c for c in best.columns if c not in fields and c not in ("relation", "count")]
    rows = []
    for _, row in best.iterrows():
        for m in (m for m in MEASURES if m.value in best.columns):
            predictor = row.get(m.predictor, "") if m.predictor else ""
            rows.append({**{k: row[k] for k in keys}, "relation": row["relation"], "arcs": row.get("count", np.nan),
                         "measure": m.name,
                         "predictor": offset_text(predictor) if "offset" in (m.predictor or "") else predictor,
                         "direction": row.get(m.direction, "") if m.direction else "", "value": row[m.value],
                         "ci_low": row[m.ci[0]] if m.ci else np.nan, "ci_high": row[m.ci[1]] if m.ci else np.nan,
                         "p_value": row[m.p_value] if m.p_value else np.nan,
                         "verdict": row[m.verdict] if m.verdict else ""})
    return pd.DataFrame(rows, columns=keys + LONG_COLUMNS)


def best_heads_wide(long: pd.DataFrame) -> pd.DataFrame:
    """best_heads.csv's rows back as one row per relation (what the agreement table and the job
    report read): the inverse of ``best_heads_long``."""
    keys = [c for c in long.columns if c not in LONG_COLUMNS]
    if not len(long):
        return pd.DataFrame(columns=keys + ["relation", "count"])
    by_name = {m.name: m for m in MEASURES}
    rows = []
    for _, group in long.groupby(keys + ["relation"], sort=False, dropna=False):
        first = group.iloc[0]
        row = {**{k: first[k] for k in keys}, "relation": first["relation"]}
        for _, r in group.iterrows():
            m = by_name[r["measure"]]
            row[m.value] = r["value"]
            parts = [(m.predictor, r["predictor"]), (m.direction, r["direction"]), (m.p_value, r["p_value"]),
                     (m.verdict, r["verdict"])] + (list(zip(m.ci, (r["ci_low"], r["ci_high"]))) if m.ci else [])
            row.update({column: value for column, value in parts if column})
            if m.predictor and "offset" in m.predictor:
                row[m.predictor] = int(r["predictor"].split()[1]) if isinstance(r["predictor"], str) and r["predictor"] \
                    else np.nan
        rows.append({**row, "count": first["arcs"]})
    return pd.DataFrame(rows)
