"""The tables a syntax run publishes: every head's score with its interval (head_scores), the
best head per relation beside its held-out accuracy, the offset baseline and the null model
(best_heads), tree decoding (uuas), and the paired difference of two checkpoints (compare).
Every table names the weights it came from."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..conclusions import standing, verdict
from ..lab import CheckpointInfo
from ..naming import head_name
from .directions import CLARK_DIRECTIONS, normalize_direction
from .predictors import OFFSETS
from .scoring import ALL, DIRECTIONS, ROOT, TREE, ArcTable, TreebankScores, check_scored
from .statistics import (
    Estimate,
    Resampler,
    best_of,
    estimate,
    head_estimates,
    offset_baseline,
    percentile_interval,
    relation_hits,
    relations_by_count,
    split_sentences,
)

OFFSET_NOTE = ("baseline_offset: the fixed relative position that best predicts each word's head, in words: "
               "+1 = the next word (to the right), -1 = the previous word (to the left).")
HELD_OUT_NOTE = ("The in-sample best head is the maximum over every head and both directions, so it is "
                 "optimistic, and so is p_value_in_sample (head and baseline chosen and compared on the same "
                 "sentences); the held-out columns choose the head and the baseline offset on one half of the "
                 "sentences and compare them on the other half (heldout_difference with its paired interval, "
                 "heldout_p_value, heldout_verdict).")


@dataclass
class Settings:
    resamples: int = 1000
    seed: int = 0
    select_fraction: float = 0.5
    min_arcs: int = 50
    null_seeds: int = 5  # random-weight models the null row is taken over (seeds seed .. seed + null_seeds - 1)
    uuas_punct: str = "include"  # "exclude": arcs whose dependent is punctuation (UD punct) are not counted

    def null_seed_list(self) -> list[int]:
        return [self.seed + i for i in range(self.null_seeds)]


@dataclass
class SyntaxSummary:
    checkpoint: CheckpointInfo
    sentences_used: int
    sentences_skipped: int  # longer than the token limit
    layers: int
    heads: int
    head_scores: pd.DataFrame
    best_heads: pd.DataFrame
    uuas: pd.DataFrame
    null_checkpoints: list[CheckpointInfo] = field(default_factory=list)  # one per null-model seed
    settings: Settings = field(default_factory=Settings)
    general_stats: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "attention"
    sentences_skipped_empty_words: int = 0  # had a word the tokenizer turns into no piece
    words_without_pieces: int = 0  # such words, over those sentences
    arcs: ArcTable | None = field(default=None, repr=False)  # the scored words, for per-sentence records

    def sentence_records(self) -> pd.DataFrame:
        """Per scored sentence, relation, direction and head: the words it got right and the relation's words
        in that sentence (``sentence_head_records``); empty without the arc table."""
        return sentence_head_records(self.arcs) if self.arcs is not None else pd.DataFrame(columns=SENTENCE_COLUMNS)

    @property
    def null_checkpoint(self) -> CheckpointInfo | None:
        """The first null model (seed ``settings.seed``); ``null_checkpoints`` has one per seed."""
        return self.null_checkpoints[0] if self.null_checkpoints else None

    def accuracy_map(self, relation: str, direction: str) -> np.ndarray:
        """(layers, heads) accuracy of every head for one relation and direction (a paper's name of a
        direction is read as the project's; one that per-head scoring does not compute is a ValueError)."""
        direction = normalize_direction(direction, CLARK_DIRECTIONS)
        rows = self.head_scores[(self.head_scores.relation == relation) & (self.head_scores.direction == direction)]
        if not len(rows):
            raise KeyError(f"no {relation} arcs in this treebank")
        return rows.sort_values(["layer", "head"]).accuracy.to_numpy().reshape(self.layers, self.heads)

    def uuas_map(self) -> np.ndarray:
        rows = self.uuas[self.uuas.predictor == "head"].sort_values(["layer", "head"])
        return rows.uuas.to_numpy(dtype=float).reshape(self.layers, self.heads)


def _named(frame: pd.DataFrame, info: CheckpointInfo, source: str) -> pd.DataFrame:
    frame.insert(0, "source", source)
    frame.insert(0, "model_sha256", info.sha256)
    frame.insert(0, "model", info.describe())
    return frame


def _heads(layers: int, heads: int) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(np.arange(1, layers + 1), heads), np.tile(np.arange(1, heads + 1), layers)


def head_score_rows(arcs: ArcTable, relation: str, ests: dict[str, Estimate]) -> list[pd.DataFrame]:
    layer, head = _heads(arcs.layers, arcs.heads)
    frames = []
    for direction, est in ests.items():
        lo, hi = est.interval()
        frames.append(pd.DataFrame({"layer": layer, "head": head, "relation": relation, "direction": direction,
                                    "correct": est.correct.astype(int), "total": est.total,
                                    "accuracy": est.accuracy, "ci_low": lo, "ci_high": hi}))
    return frames


def _best(arcs: ArcTable, ests: dict[str, Estimate]) -> tuple[str, int, str]:
    direction, k = best_of(ests)
    return direction, k, head_name(*divmod(k, arcs.heads))


HELDOUT_EMPTY = {"heldout_head": "", "heldout_direction": "", "heldout_accuracy": np.nan, "heldout_ci_low": np.nan,
                 "heldout_ci_high": np.nan, "heldout_baseline_offset": np.nan, "heldout_baseline_accuracy": np.nan,
                 "heldout_difference": np.nan, "heldout_difference_ci_low": np.nan,
                 "heldout_difference_ci_high": np.nan, "heldout_p_value": np.nan, "heldout_verdict": ""}


def heldout_row(arcs: ArcTable, relation: str, chosen: ArcTable, reported: ArcTable, report: Resampler) -> dict:
    """Choose the best head *and* the best offset baseline on the selection sentences, then score
    both on the report sentences: the head's accuracy, and head minus baseline with a paired
    bootstrap (the same resampled report sentences for both), its interval, the p-value
    (k + 1) / (B + 1) of "the head does not beat the baseline", and the verdict the interval gives.
    Unlike ``p_value`` (both chosen and compared on all sentences), nothing here is chosen on the
    sentences it is tested on. ``chosen`` and ``reported`` are the arcs of the two halves (cut once
    per summary, not once per relation)."""
    if not chosen.mask(relation).any() or not reported.mask(relation).any():
        return dict(HELDOUT_EMPTY)
    no_draws = Resampler.over(chosen.sentence, 0, 0)
    direction, k, name = _best(arcs, head_estimates(chosen, relation, no_draws))
    offset, _ = offset_baseline(chosen, relation, no_draws)
    sentences, hits = relation_hits(reported, relation, direction)
    est = estimate(sentences, hits[:, [k]], report)
    mask = reported.mask(relation)
    base = estimate(reported.sentence[mask], reported.offset_hits[mask][:, [OFFSETS.index(offset)]], report)
    lo, hi = est.interval()
    difference = est.draws[:, 0] - base.draws[:, 0]  # (resamples,) paired
    difference = difference[~np.isnan(difference)]
    d_lo, d_hi = percentile_interval(difference[:, None], (1,))
    p_value = (np.sum(~(difference > 0)) + 1) / (len(difference) + 1) if len(difference) else np.nan
    head, baseline = f"head {name} ({direction})", f"offset {offset:+d}"
    return {"heldout_head": name, "heldout_direction": direction, "heldout_accuracy": float(est.accuracy[0]),
            "heldout_ci_low": float(lo[0]), "heldout_ci_high": float(hi[0]), "heldout_baseline_offset": offset,
            "heldout_baseline_accuracy": float(base.accuracy[0]),
            "heldout_difference": float(est.accuracy[0] - base.accuracy[0]),
            "heldout_difference_ci_low": float(d_lo[0]), "heldout_difference_ci_high": float(d_hi[0]),
            "heldout_p_value": float(p_value), "heldout_verdict": verdict(float(d_lo[0]), float(d_hi[0]), head, baseline)}


NO_NULL = {"null_best_head": "", "null_accuracy": np.nan, "null_ci_low": np.nan, "null_ci_high": np.nan,
           "null_seeds": 0, "null_seed_min": np.nan, "null_seed_max": np.nan}


def null_row(nulls: Sequence[TreebankScores], relation: str, settings: Settings) -> dict:
    """The best head of random-weight models, over seeds and sentences: for each seed the best of all
    heads (the floor that picking the best of many heads reaches by chance); ``null_accuracy`` is the
    mean over seeds, the interval comes from bootstrap replicates that each resample the sentences
    and draw one seed, so it holds seed-to-seed and sentence-to-sentence spread; ``null_seed_min`` and
    ``null_seed_max`` show the seeds' own spread. ``null_best_head`` is the first seed's best head."""
    nulls = [n for n in nulls if relation in (ALL, *n.arcs.relations)]
    if not nulls:
        return dict(NO_NULL)
    best, draws, names = [], [], []
    for null in nulls:  # the same sentences, so the same resampled sentence sets for every seed
        resampler = Resampler.over(null.arcs.sentence, settings.resamples, settings.seed)
        ests = head_estimates(null.arcs, relation, resampler)
        direction, k, name = _best(null.arcs, ests)
        best.append(float(ests[direction].accuracy[k]))
        draws.append(ests[direction].draws[:, k])  # (resamples,)
        names.append(f"{name} {direction}")
    seed_of_draw = np.random.default_rng(settings.seed).integers(len(nulls), size=settings.resamples)
    mixed = np.stack(draws, 1)[np.arange(settings.resamples), seed_of_draw]  # (resamples,)
    lo, hi = percentile_interval(mixed[:, None], (1,))
    return {"null_best_head": names[0], "null_accuracy": float(np.mean(best)), "null_ci_low": float(lo[0]),
            "null_ci_high": float(hi[0]), "null_seeds": len(nulls), "null_seed_min": min(best),
            "null_seed_max": max(best)}


@dataclass(frozen=True)
class ScoredRun:
    """What every relation's best-heads row is measured against, the same for all relations of one run:
    the checkpoint's arcs and their resampler, the held-out split (selection arcs, report arcs, report
    resampler), the head with the best tree, the null models' scores and the settings."""

    arcs: ArcTable
    resampler: Resampler
    split: tuple[ArcTable, ArcTable, Resampler]
    tree_head: int
    nulls: Sequence[TreebankScores]
    settings: Settings


def best_row(run: ScoredRun, relation: str, ests: dict[str, Estimate]) -> dict:
    """One relation's row of best_heads: the best head in-sample and held out, the offset baseline,
    the null models' best head, tree and chain recall."""
    arcs, resampler, tree_head = run.arcs, run.resampler, run.tree_head
    direction, k, name = _best(arcs, ests)
    lo, hi = ests[direction].interval()
    offset, base = offset_baseline(arcs, relation, resampler)
    base_lo, base_hi = base.interval()
    beats = ests[direction].draws[:, k] - base.draws[:, 0]
    p_value = (np.sum(~(beats > 0)) + 1) / (len(beats) + 1)
    tree = estimate(*relation_hits(arcs, relation, TREE), resampler)
    mask = arcs.mask(relation) & ~arcs.is_root
    return {"relation": relation, "best_head": name, "direction": direction,
            "accuracy": float(ests[direction].accuracy[k]), "ci_low": float(lo[k]), "ci_high": float(hi[k]),
            **heldout_row(arcs, relation, *run.split),
            "baseline_offset": offset, "baseline_accuracy": float(base.accuracy[0]),
            "baseline_ci_low": float(base_lo[0]), "baseline_ci_high": float(base_hi[0]),
            "p_value_in_sample": float(p_value),
            **null_row(run.nulls, relation, run.settings),
            "tree_head": head_name(*divmod(tree_head, arcs.heads)), "tree_recall": float(tree.accuracy[tree_head]),
            "chain_recall": float(arcs.chain_hits[mask].mean()) if mask.any() else np.nan,
            "count": int(ests[DIRECTIONS[0]].total)}


PUNCT = "punct"
UUAS_PUNCT = ("include", "exclude")


def uuas_arcs(arcs: ArcTable, punct: str = "include") -> np.ndarray:
    """The arcs UUAS counts: every non-root word's arc, or, with ``punct="exclude"``, those whose
    dependent is not punctuation (UD relation ``punct``). The trees stay spanned over every word;
    only which gold arcs are counted changes."""
    if punct not in UUAS_PUNCT:
        raise ValueError(f"uuas punctuation must be one of {', '.join(UUAS_PUNCT)} (got {punct!r})")
    mask = ~arcs.is_root
    if punct == "exclude" and PUNCT in arcs.relations:
        mask &= arcs.relation != arcs.relations.index(PUNCT)
    return mask


def uuas_table(arcs: ArcTable, resampler: Resampler, punct: str = "include") -> tuple[pd.DataFrame, int]:
    """UUAS of every head's spanning tree and of the right-branching chain, each row saying whether
    punctuation arcs were counted; plus the best head's index."""
    mask = uuas_arcs(arcs, punct)
    tree = estimate(arcs.sentence[mask], arcs.hits[TREE][mask].reshape(int(mask.sum()), -1), resampler)
    lo, hi = tree.interval()
    layer, head = _heads(arcs.layers, arcs.heads)
    frame = pd.DataFrame({"predictor": "head", "layer": layer, "head": head, "correct": tree.correct.astype(int),
                          "total": tree.total, "uuas": tree.accuracy, "ci_low": lo, "ci_high": hi})
    chain = estimate(arcs.sentence[mask], arcs.chain_hits[mask][:, None], resampler)
    c_lo, c_hi = chain.interval()
    frame.loc[len(frame)] = ["right-branching", 0, 0, int(chain.correct[0]), chain.total, float(chain.accuracy[0]),
                             float(c_lo[0]), float(c_hi[0])]
    frame["punctuation"] = f"{punct}d"
    return frame, int(np.argmax(tree.accuracy)) if tree.total else 0


SENTENCE_COLUMNS = ["sentence", "relation", "direction", "layer", "head", "correct", "total"]


def sentence_head_records(arcs: ArcTable) -> pd.DataFrame:
    """One row per (sentence, relation, direction, layer, head), layers and heads 1-based: how many of the
    relation's words in that sentence the head got right (``correct``) of how many there are (``total``); a
    root word counts as a miss, as in every accuracy. Sentences x relations x directions x heads rows: over a
    million for a treebank, hence Parquet (``export.parquet_bytes``)."""
    n_relations = len(arcs.relations)
    key = arcs.sentence.astype(np.int64) * n_relations + arcs.relation  # (arcs,) one group per sentence and relation
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    total = np.diff(np.r_[starts, len(ordered)])  # (groups,)
    groups, layers, heads = len(starts), arcs.layers, arcs.heads
    frames = []
    for direction in CLARK_DIRECTIONS:
        correct = np.add.reduceat(arcs.hits[direction][order].astype(np.int32), starts, axis=0)  # (groups, L, H)
        frames.append(pd.DataFrame({
            "sentence": np.repeat(ordered[starts] // n_relations, layers * heads),
            "relation": pd.Categorical.from_codes(np.repeat(ordered[starts] % n_relations, layers * heads),
                                                  arcs.relations),
            "direction": direction,
            "layer": np.tile(np.repeat(np.arange(1, layers + 1), heads), groups),
            "head": np.tile(np.arange(1, heads + 1), groups * layers),
            "correct": correct.reshape(-1), "total": np.repeat(total, layers * heads)}))
    return pd.concat(frames, ignore_index=True)[SENTENCE_COLUMNS]


def summarise(scores: TreebankScores, null: TreebankScores | Sequence[TreebankScores] | None = None,
              settings: Settings | None = None) -> SyntaxSummary:
    """Every table of a syntax run, from one checkpoint's scores (and the null models', one per seed);
    an InputError when nothing could be scored (no sentence kept, or only one-word sentences)."""
    check_scored(scores)
    nulls = [] if null is None else [null] if isinstance(null, TreebankScores) else list(null)
    settings = settings or Settings()
    arcs = scores.arcs
    resampler = Resampler.over(arcs.sentence, settings.resamples, settings.seed)
    select, report = split_sentences(arcs.sentence, settings.select_fraction, settings.seed)
    split = (arcs.of_sentences(select), arcs.of_sentences(report), Resampler.over(report, settings.resamples,
                                                                                     settings.seed + 1))
    uuas, tree_head = uuas_table(arcs, resampler, settings.uuas_punct)
    run = ScoredRun(arcs, resampler, split, tree_head, nulls, settings)
    frames, rows = [], []
    listed = set(relations_by_count(arcs, settings.min_arcs))
    for relation in relations_by_count(arcs) + ([ROOT] if ROOT in arcs.relations else []):
        ests = head_estimates(arcs, relation, resampler)
        frames.extend(head_score_rows(arcs, relation, ests))
        if relation in listed:
            rows.append(best_row(run, relation, ests))
    best = pd.DataFrame(rows)
    info = scores.checkpoint
    return SyntaxSummary(info, scores.sentences_used, scores.sentences_skipped, arcs.layers, arcs.heads,
                         _named(pd.concat(frames, ignore_index=True), info, scores.source),
                         _named(best, info, scores.source), _named(uuas, info, scores.source),
                         [n.checkpoint for n in nulls], settings, scores.general_stats(), scores.source,
                         scores.sentences_skipped_empty_words, scores.words_without_pieces, arcs)


def compare_checkpoints(a: TreebankScores, b: TreebankScores, settings: Settings | None = None) -> pd.DataFrame:
    """Per head, relation and direction: accuracy of B minus A on the sentences both scored, with a
    paired bootstrap interval (the same resampled sentences for both checkpoints)."""
    settings = settings or Settings()
    common = np.intersect1d(a.arcs.sentence, b.arcs.sentence)
    arcs_a, arcs_b = a.arcs.of_sentences(common), b.arcs.of_sentences(common)
    resampler = Resampler.over(common, settings.resamples, settings.seed)
    layer, head = _heads(arcs_a.layers, arcs_a.heads)
    frames = []
    for relation in relations_by_count(arcs_a, settings.min_arcs):
        if relation != ALL and relation not in arcs_b.relations:
            continue
        ests_a, ests_b = head_estimates(arcs_a, relation, resampler), head_estimates(arcs_b, relation, resampler)
        for direction in DIRECTIONS:
            ea, eb = ests_a[direction], ests_b[direction]
            low, high = percentile_interval(eb.draws - ea.draws, ea.correct.shape)
            frames.append(pd.DataFrame({
                "relation": relation, "direction": direction, "layer": layer, "head": head, "total": ea.total,
                "accuracy_a": ea.accuracy, "accuracy_b": eb.accuracy, "difference": eb.accuracy - ea.accuracy,
                "ci_low": low, "ci_high": high}))
    frame = pd.concat(frames, ignore_index=True)
    frame["b_vs_a"] = [standing(lo, hi) for lo, hi in zip(frame.ci_low, frame.ci_high)]  # from the paired interval
    frame.insert(0, "model_b", b.checkpoint.describe())
    frame.insert(0, "model_a", a.checkpoint.describe())
    return frame
