"""Does the model encode syntax? Three answers side by side, on the same sentences, with intervals:
a structural probe on each layer's representations (``structural_probe.py``), trees decoded from
the best single head of each layer and from the best small ensemble of its heads
(``ensembles.py``), and the right-branching baseline; plus head ensembles per relation for the
best-heads table.

Every choice (which head, which ensemble, which layer a conclusion is about) is made on one seeded
half of the evaluated sentences and reported on the other half, the same split the per-head held-out columns use; the probe is
trained on a *train* split and reported on that same other half. Intervals are percentile
bootstraps over those sentences (``statistics.py``); differences are paired.

Layers: the probe's layer L reads the output of block L (0 = embeddings); an attention tree at
layer L comes from the heads *inside* block L, which attend over the output of block L - 1.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from ..conclusions import verdict
from ..engines import LOCAL, Engine
from ..lab import CheckpointInfo, InputError, Lab, null_model
from ..resources import SHIPPED_PROBES
from ..treebank import Sentence
from .control_tasks import CONTROL, control_edges, control_sentence
from .directions import DEP_HEAD, HEAD_ROW
from .ensembles import (
    TreeGold,
    WordMaps,
    arc_rows,
    best_first,
    ensemble_name,
    greedy_ensemble,
    tree_counts,
    word_maps,
)
from .statistics import Estimate, Resampler, estimate, percentile_interval, split_sentences
from .structural_probe import (
    KINDS,
    ProbeData,
    ProbeTraining,
    SentenceMetrics,
    Steps,
    TrainedProbe,
    WorkParts,
    predict,
    right_branching,
    sentence_metrics,
    train_probes,
    word_features,
)
from .trees import punctuation, spanning_edges, uses_ptb_tags

Progress = Callable[[str], None]
METRICS = {"distance": ("uuas", "spearman"), "depth": ("root_accuracy", "spearman")}


@dataclass
class StructureSettings:
    resamples: int = 1000
    seed: int = 0
    select_fraction: float = 0.5
    stop_fraction: float = 0.1  # of the train sentences, set aside to stop training on
    kinds: tuple[str, ...] = KINDS
    null: bool = True  # also train the probe on the random-weight model (distance, every layer)
    epochs: int = 40
    batch_size: int = 32  # sentences per forward pass of the encoder
    perturbed_masking: bool = False  # also the parameter-free trees of Perturbed Masking (Wu et al. 2020) per layer
    control: bool = True  # also the distance probe on Hewitt & Liang's control task, for selectivity (control_tasks.py)
    engine: Engine = LOCAL  # where the word vectors are extracted (local or Ray): the same vectors either way


def stop_split(sentences: Sequence[Sentence], fraction: float, seed: int) -> tuple[list[Sentence], list[Sentence]]:
    """(train, stop) : a seeded ``fraction`` of the train split to stop training on."""
    order = np.random.default_rng(seed).permutation(len(sentences))
    cut = max(1, int(round(fraction * len(sentences))))
    return [sentences[i] for i in sorted(order[cut:])], [sentences[i] for i in sorted(order[:cut])]


def bootstrap(counts: dict[str, np.ndarray], ids: np.ndarray, resampler: Resampler) -> dict[str, tuple]:
    """Point value and 95% interval of a ratio of per-sentence sums, over the resampler's sentences."""
    keep, weights = resampler.restricted(ids)
    position = np.searchsorted(ids, keep)
    num, den = counts["num"][position], counts["den"][position]
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (weights @ num) / (weights @ den)
    lo, hi = percentile_interval(draws[:, None], (1,))
    return {"value": float(num.sum() / den.sum()) if den.sum() else np.nan, "ci": (float(lo[0]), float(hi[0])),
            "draws": draws}


def metric_rows(metrics: SentenceMetrics, kind: str, resampler: Resampler, ids: np.ndarray) -> dict:
    """The kind's two figures on the sentences ``ids`` (sorted, a subset of the resampler's), with intervals."""
    keep, weights = resampler.restricted(ids)
    position = np.searchsorted(ids, keep)
    sub = SentenceMetrics(*(getattr(metrics, f)[position] for f in SentenceMetrics.__dataclass_fields__))
    point, draws = sub.figures(), sub.figures(weights)
    row = {}
    for name in METRICS[kind]:
        lo, hi = percentile_interval(draws[name][:, None], (1,))
        row.update({name: float(point[name][0]), f"{name}_ci_low": float(lo[0]), f"{name}_ci_high": float(hi[0])})
    return row


@dataclass
class StructureResult:
    checkpoint: CheckpointInfo
    train_treebank: str
    eval_treebank: str
    probes: dict[str, dict[int, TrainedProbe]]  # "model/kind" -> layer -> probe
    probe_table: pd.DataFrame  # every probe on every evaluated sentence, with intervals
    comparison: pd.DataFrame  # per layer and method: UUAS on the report half, with intervals
    ensembles: pd.DataFrame  # per relation: ensemble vs best single head, held out
    sentences: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    selectivity: pd.DataFrame = field(default_factory=pd.DataFrame)  # per layer: probe - control UUAS, interval
    ensemble_selectivity: dict = field(default_factory=dict)  # the head-ensemble classifier's, on every arc

    conclusions: list[str] = field(default_factory=list)

    def trained_items(self):
        return self.probes.items()


def probe_table(lab_name: str, probes: dict[int, TrainedProbe], data: ProbeData, resampler: Resampler,
                ids: np.ndarray) -> tuple[list[dict], dict[int, SentenceMetrics]]:
    rows, metrics = [], {}
    for layer, probe in probes.items():
        metrics[layer] = sentence_metrics(probe.kind, predict(probe, data), data.sentences)
        rows.append({"model": lab_name, "kind": probe.kind, "layer": layer, "sentences": len(ids),
                     **metric_rows(metrics[layer], probe.kind, resampler, ids), "epochs": probe.epochs,
                     "best_epoch": probe.best_epoch, "stop_loss": round(probe.stop_loss, 5),
                     "train_seconds": probe.seconds})
    return rows, metrics


def attention_layers(maps: WordMaps, gold: TreeGold, select: np.ndarray, report: np.ndarray, resampler: Resampler,
                     progress: Progress | None = None) -> tuple[list[dict], dict[str, dict]]:
    """Per layer: the head whose tree scores best on ``select`` and the greedy ensemble of the layer's
    heads, both reported on ``report``; rows plus each one's per-sentence counts for paired draws."""
    where = {int(i): k for k, i in enumerate(maps.indices)}
    sel_pos, rep_pos = [where[int(i)] for i in select], [where[int(i)] for i in report]
    rows, counts = [], {}

    def pooled(heads: Sequence[int]) -> float:
        correct, total = tree_counts(maps, gold, heads, np.array(sel_pos))
        return float(correct.sum() / max(total.sum(), 1))

    for layer in range(maps.layers):
        flat = [layer * maps.heads + h for h in range(maps.heads)]
        singles = np.array([pooled([k]) for k in flat])
        ensemble, chosen_value = greedy_ensemble(lambda heads, flat=flat: pooled([flat[h] for h in heads]), singles,
                                                 candidates=len(flat))
        top = int(best_first(singles)[0])
        for method, heads, on_select in (("best head tree", [flat[top]], float(singles[top])),
                                         ("head ensemble tree", [flat[h] for h in ensemble], chosen_value)):
            correct, total = tree_counts(maps, gold, heads, np.array(rep_pos))
            c = {"num": correct, "den": total}
            result = bootstrap(c, report, resampler)
            counts[f"{method}/{layer + 1}"] = result
            rows.append({"layer": layer + 1, "method": method, "uuas": result["value"],
                         "ci_low": result["ci"][0], "ci_high": result["ci"][1],
                         "heads": ensemble_name(heads, maps.heads), "sentences": len(report),
                         "select_uuas": on_select, "_draws": result["draws"]})
        if progress is not None:
            progress(f"attention trees: layer {layer + 1}/{maps.layers}")
    return rows, counts


def relation_ensembles(maps: WordMaps, relations: Sequence[str], select: np.ndarray, report: np.ndarray,
                       resampler: Resampler) -> pd.DataFrame:
    """Per relation: the greedy ensemble (<= 4 heads) and the best single head, each with its direction
    chosen on ``select``, their accuracies on ``report`` with intervals, and the paired difference."""
    rows = []
    n_heads = maps.layers * maps.heads
    for relation in relations:
        chosen = {}
        for direction in (DEP_HEAD, HEAD_ROW):  # Limisiewicz et al.'s d2p and p2d
            rows_sel = arc_rows(maps, relation, direction, select)
            singles = rows_sel.single_accuracies(n_heads)
            ensemble, value = greedy_ensemble(rows_sel.accuracy, singles)
            chosen[direction] = (ensemble, value, int(best_first(singles)[0]), float(singles.max()))
        e_dir = max(chosen, key=lambda d: chosen[d][1])
        s_dir = max(chosen, key=lambda d: chosen[d][3])
        ens, single = chosen[e_dir][0], chosen[s_dir][2]
        ids_e, hits_e = arc_rows(maps, relation, e_dir, report).hits(ens)
        ids_s, hits_s = arc_rows(maps, relation, s_dir, report).hits([single])
        if not len(hits_e):
            continue
        est_e, est_s = estimate(ids_e, hits_e[:, None], resampler), estimate(ids_s, hits_s[:, None], resampler)
        lo, hi = est_e.interval()
        s_lo, s_hi = est_s.interval()
        d_lo, d_hi = percentile_interval((est_e.draws - est_s.draws), (1,))
        name_e, name_s = ensemble_name(ens, maps.heads), ensemble_name([single], maps.heads)
        rows.append({"relation": relation, "ensemble_heads": name_e, "ensemble_direction": e_dir,
                     "ensemble_accuracy": float(est_e.accuracy[0]), "ensemble_ci_low": float(lo[0]),
                     "ensemble_ci_high": float(hi[0]), "single_head": name_s, "single_direction": s_dir,
                     "single_accuracy": float(est_s.accuracy[0]), "single_ci_low": float(s_lo[0]),
                     "single_ci_high": float(s_hi[0]),
                     "ensemble_gain": float(est_e.accuracy[0] - est_s.accuracy[0]),
                     "ensemble_gain_ci_low": float(d_lo[0]), "ensemble_gain_ci_high": float(d_hi[0]),
                     "ensemble_verdict": verdict(float(d_lo[0]), float(d_hi[0]), f"ensemble {name_e} ({e_dir})",
                                                 f"head {name_s} ({s_dir})"),
                     "ensemble_arcs": int(est_e.total)})
    return pd.DataFrame(rows)


def ensemble_choice(maps: WordMaps, halves: Halves) -> tuple[str, Estimate]:
    """The head-ensemble classifier on every arc ("all"): its direction and heads chosen on the selection half as
    ``relation_ensembles`` chooses them, its accuracy on the report half (with the resampler's draws)."""
    n_heads = maps.layers * maps.heads
    chosen = {}
    for direction in (DEP_HEAD, HEAD_ROW):
        rows_sel = arc_rows(maps, "all", direction, halves.select)
        chosen[direction] = greedy_ensemble(rows_sel.accuracy, rows_sel.single_accuracies(n_heads))
    direction = max(chosen, key=lambda d: chosen[d][1])
    heads = chosen[direction][0]
    ids, hits = arc_rows(maps, "all", direction, halves.report).hits(heads)
    return f"{ensemble_name(heads, maps.heads)} ({direction})", estimate(ids, hits[:, None], halves.resampler)


def ensemble_selectivity(maps: WordMaps, halves: Halves, seed: int) -> dict:
    """Selectivity of the head-ensemble classifier (Hewitt & Liang 2019): the same greedy choice of up to 4 heads
    made for the gold parents and, separately, for the control task's parents (its arcs between two words: an
    attention map never points a word at itself, so self-attachments are left out), each reported on the report
    half; the difference with its paired 95% interval (the same resampled sentences)."""
    control = WordMaps(maps.maps, [control_sentence(x, seed) for x in maps.sentences], maps.indices, maps.layers,
                       maps.heads)
    (gold_name, gold), (control_name, ctrl) = ensemble_choice(maps, halves), ensemble_choice(control, halves)
    diff = gold.draws[:, 0] - ctrl.draws[:, 0]
    lo, hi = percentile_interval(diff[~np.isnan(diff)][:, None], (1,))
    value = float(gold.accuracy[0] - ctrl.accuracy[0])
    return {"gold_ensemble": gold_name, "gold_accuracy": float(gold.accuracy[0]), "control_ensemble": control_name,
            "control_accuracy": float(ctrl.accuracy[0]), "selectivity": value, "ci_low": float(lo[0]),
            "ci_high": float(hi[0]),
            "verdict": verdict(float(lo[0]), float(hi[0]), f"the head-ensemble classifier's accuracy on gold parents "
                               f"({gold_name})", f"its accuracy on the control task ({control_name})")}


ENSEMBLE_NOTE = ("ensemble_*: up to 4 heads per relation chosen greedily on the selection half (Limisiewicz et al. "
                 "2020), their mean word-level attention ([CLS]/[SEP] left out, rows renormalised) scored on the "
                 "report half beside the best single head chosen the same way (single_*); ensemble_gain is the "
                 "paired difference with its 95% bootstrap interval. Directions: dep->head = the dependent's row "
                 "points at its parent (their d2p, Clark's dep->head); head-row->dep = the parent's row points at "
                 "the dependent (their p2d, not Clark's head->dep, which reads the dependent's column). "
                 "These columns count arcs between two words (root words left out), unlike 'all' in the "
                 "per-head columns, which counts root words as misses.")


@dataclass(frozen=True)
class Halves:
    """The seeded split every choice is made on (``select``) and every figure reported on (``report``), with the
    bootstrap over the report half's sentences."""

    select: np.ndarray
    report: np.ndarray
    resampler: Resampler


def perturbed_masking_rows(lab: Lab, evaluate: Sequence[Sentence], common: np.ndarray, halves: Halves,
                           steps: Steps | None) -> list[dict]:
    """Per layer, the UUAS of Perturbed Masking's tree (their default: Eisner with the gold root) on the report
    half with intervals, and on the selection half (``perturbed_masking.py``)."""
    from .perturbed_masking import PERTURBED_MASKING, undirected_counts

    counts = undirected_counts(lab, [evaluate[i] for i in common], progress=steps)  # (sentences, layers, 2)
    select, report, resampler = halves.select, halves.report, halves.resampler
    rows = []
    rep, sel = np.searchsorted(common, report), np.searchsorted(common, select)
    for layer in range(counts.shape[1]):
        result = bootstrap({"num": counts[rep, layer, 0], "den": counts[rep, layer, 1]}, report, resampler)
        on_select = float(counts[sel, layer, 0].sum() / max(counts[sel, layer, 1].sum(), 1))
        rows.append({"layer": layer + 1, "method": PERTURBED_MASKING, "uuas": result["value"], "ci_low": result["ci"][0],
                     "ci_high": result["ci"][1], "heads": "", "sentences": len(report), "select_uuas": on_select,
                     "_draws": result["draws"]})
    return rows


def probe_uuas_rows(method: str, metrics: dict[int, SentenceMetrics], data_ids: np.ndarray, report: np.ndarray,
                    resampler: Resampler, select: np.ndarray) -> list[dict]:
    """UUAS on the report half with intervals, and on the selection half (what conclusions choose a layer by)."""
    position, chosen = np.searchsorted(data_ids, report), np.searchsorted(data_ids, select)
    rows = []
    for layer, m in metrics.items():
        result = bootstrap({"num": m.uuas_correct[position], "den": m.uuas_total[position]}, report, resampler)
        on_select = float(m.uuas_correct[chosen].sum() / max(m.uuas_total[chosen].sum(), 1))
        rows.append({"layer": layer, "method": method, "uuas": result["value"], "ci_low": result["ci"][0],
                     "ci_high": result["ci"][1], "heads": "", "sentences": len(report), "select_uuas": on_select,
                     "_draws": result["draws"]})
    return rows


def trained_kinds(s: StructureSettings) -> list[tuple[str, tuple[str, ...]]]:
    """The probes trained: each kind on the model, and (``s.null``) distance on the random-weight model."""
    controls = [(control_of(name), ("distance",)) for name in ("model", "null") if s.control and (name != "null" or s.null)]
    return [("model", s.kinds)] + ([("null", ("distance",))] if s.null else []) + controls


def control_of(model: str) -> str:
    """The name of the control-task probes trained on ``model``'s word vectors: control, null-control."""
    return CONTROL if model == "model" else f"{model}-{CONTROL}"


def work_part(what: str, model: str = "model") -> str:
    """A part's name in ``structure_work``: what is done, and ", random weights" for the null model's."""
    return what + (", random weights" if model.startswith("null") else "") + (", control task" if model.endswith(CONTROL)
                                                                                else "")


def training_split(treebanks: StructureTreebanks, s: StructureSettings) -> tuple[list[Sentence], list[Sentence]]:
    """(sentences to train on, sentences to stop on): the stop file's, or a seeded part of the train split."""
    if treebanks.stop:
        return list(treebanks.train), list(treebanks.stop)
    return stop_split(treebanks.train, s.stop_fraction, s.seed)


def structure_work(treebanks: StructureTreebanks, s: StructureSettings, trained: dict | None = None
                   ) -> list[tuple[str, int]]:
    """Every part of a structural-probe run in sentence passes, in the order it runs: word vectors of
    the training and stopping sentences and up to ``s.epochs`` epochs over them per probe (when the
    probes are not given), then the evaluated sentences' word vectors (and the random-weight
    model's) and attention maps. What ``run_structure``'s ``steps`` counts and the command line's
    estimate names."""
    parts, evaluated = [], len(treebanks.evaluate)
    if trained is None:
        train, stop = (len(part) for part in training_split(treebanks, s))
        for name, kinds in trained_kinds(s):
            if not name.endswith(CONTROL):  # a control task reads its model's word vectors again
                parts += [(work_part("word vectors of training sentences", name), train),
                          (work_part("word vectors of stopping sentences", name), stop)]
            parts += [(work_part(f"{kind} probes, up to {s.epochs} epochs", name), s.epochs * (train + stop))
                      for kind in kinds]
    null = s.null if trained is None else any(key.startswith("null/") for key in trained)
    parts += [(work_part("word vectors of evaluated sentences"), evaluated)]
    parts += [(work_part("word vectors of evaluated sentences", "null"), evaluated)] if null else []
    parts += [(work_part("perturbed masking of evaluated sentences"), evaluated)] if s.perturbed_masking else []
    return parts + [(work_part("attention maps of evaluated sentences"), evaluated)]


def train_all(lab: Lab, train: Sequence[Sentence], stop: Sequence[Sentence], s: StructureSettings,
              say: Progress, parts: WorkParts | None = None
              ) -> tuple[dict[str, dict[int, TrainedProbe]], dict[str, float]]:
    """Every probe: each kind on every layer of the model, and (``s.null``) the distance probe on
    every layer of the random-weight model; ``parts`` counts the sentence passes (``structure_work``)."""
    parts = parts or WorkParts([], None)
    seconds: dict[str, float] = {}
    models = [("model", lab, s.kinds)] + ([("null", null_model(lab, s.seed), ("distance",))] if s.null else [])
    probes = {}
    for name, model, kinds in models:
        started = time.time()
        say(f"{name}: word vectors of {len(train)} training and {len(stop)} stopping sentences")
        data = {}
        for part, sentences in (("training", train), ("stopping", stop)):
            data[part] = word_features(model, sentences, s.batch_size, engine=s.engine,
                                       progress=parts.of(work_part(f"word vectors of {part} sentences", name)))
            parts.finish(work_part(f"word vectors of {part} sentences", name))
        seconds[f"{name}/features"] = round(time.time() - started, 1)
        jobs = [(name, kind, data) for kind in kinds]
        if s.control:  # the same word vectors, the control task's parents as the tree
            jobs.append((control_of(name), "distance", {k: as_control(v, s.seed) for k, v in data.items()}))
        for owner, kind, sets in jobs:
            started = time.time()
            part = work_part(f"{kind} probes, up to {s.epochs} epochs", owner)
            epochs = parts.counting(part, s.epochs, say)  # train_probes says each epoch once, at its end
            probes[f"{owner}/{kind}"] = train_probes(sets["training"], sets["stopping"], range(lab.n_layers + 1), kind,
                                                     ProbeTraining(seed=s.seed, epochs=s.epochs), progress=epochs)
            parts.finish(part)
            seconds[f"{owner}/{kind}"] = round(time.time() - started, 1)
    return probes, seconds


def as_control(data: ProbeData, seed: int) -> ProbeData:
    """The same word vectors with each sentence's control-task parents as its tree (Hewitt & Liang 2019)."""
    return ProbeData(data.features, [control_sentence(x, seed) for x in data.sentences], data.indices, data.skipped)


def control_counts(probe: TrainedProbe, data: ProbeData, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, (control edges the probe's minimum spanning tree has, control edges): UUAS on the control
    task, over the same non-punctuation words as the probe's UUAS on gold trees."""
    ptb = uses_ptb_tags(data.sentences)
    correct, total = np.zeros(len(data.sentences)), np.zeros(len(data.sentences))
    for i, (predicted, sentence) in enumerate(zip(predict(probe, data), data.sentences)):
        keep = ~punctuation(sentence, ptb)
        gold = control_edges(sentence, keep, seed)
        correct[i], total[i] = len(gold & spanning_edges(predicted, keep)), len(gold)
    return correct, total


def selectivity_rows(controls: dict[int, TrainedProbe], data: ProbeData, metrics: dict[int, SentenceMetrics],
                     halves: Halves, seed: int, model: str = "model") -> tuple[list[dict], list[dict]]:
    """Per layer, the distance probe's UUAS on the control task (comparison rows) and its selectivity: UUAS on gold
    trees minus UUAS on the control task, with the paired 95% interval over the report half's sentences."""
    ids = np.array(data.indices, dtype=np.int64)
    select, report, resampler = halves.select, halves.report, halves.resampler
    rep, sel = np.searchsorted(ids, report), np.searchsorted(ids, select)
    rows, selective = [], []
    for layer, control in controls.items():
        correct, total = control_counts(control, data, seed)
        ctrl = bootstrap({"num": correct[rep], "den": total[rep]}, report, resampler)
        m = metrics[layer]
        ling = bootstrap({"num": m.uuas_correct[rep], "den": m.uuas_total[rep]}, report, resampler)
        method = "structural probe, control task" + (", random weights" if model == "null" else "")
        rows.append({"layer": layer, "method": method, "uuas": ctrl["value"],
                     "ci_low": ctrl["ci"][0], "ci_high": ctrl["ci"][1], "heads": "", "sentences": len(report),
                     "select_uuas": float(correct[sel].sum() / max(total[sel].sum(), 1)), "_draws": ctrl["draws"]})
        diff = ling["draws"] - ctrl["draws"]
        lo, hi = percentile_interval(diff[~np.isnan(diff)][:, None], (1,))
        weights = "random weights" if model == "null" else "the model"
        selective.append({"model": weights, "layer": layer, "probe_uuas": ling["value"], "control_uuas": ctrl["value"],
                          "selectivity": ling["value"] - ctrl["value"], "ci_low": float(lo[0]), "ci_high": float(hi[0]),
                          "verdict": verdict(float(lo[0]), float(hi[0]), f"the structural probe's UUAS at layer {layer} "
                                             f"on gold trees{' (random weights)' if model == 'null' else ''}",
                                             "its UUAS on the control task")})
    return rows, selective


@dataclass(frozen=True)
class StructureTreebanks:
    """The sentences of a structural-probe run and the names its report gives them: the evaluated
    treebank, the train split (empty when the probes come trained) and, optionally, the sentences to
    stop training on (None: a seeded part of ``train``, ``StructureSettings.stop_fraction``)."""

    evaluate: Sequence[Sentence]
    train: Sequence[Sentence] = ()
    stop: Sequence[Sentence] | None = None
    names: tuple[str, str] = ("", "")  # (train, evaluated) as the result and its report name them


def run_structure(lab: Lab, treebanks: StructureTreebanks, settings: StructureSettings | None = None,
                  trained: dict[str, dict[int, TrainedProbe]] | None = None, relations: Sequence[str] = (),
                  progress: Progress | None = None, steps: Steps | None = None) -> StructureResult:
    """Train (or take ``trained``) probes, then score probes, attention trees and ensembles on
    ``treebanks.evaluate``; ``relations``: the relations whose head ensembles are tabled.
    ``progress`` is told each stage in words (the app), ``steps(done, total)`` the sentence passes
    of ``structure_work`` (the command line's bar)."""
    s = settings or StructureSettings()
    say = progress or (lambda message: None)
    parts = WorkParts(structure_work(treebanks, s, trained), steps)
    seconds: dict[str, float] = {}
    evaluate, names = treebanks.evaluate, treebanks.names
    if trained is None:
        trained, seconds = train_all(lab, *training_split(treebanks, s), s, say, parts)
    say(f"scoring {len(evaluate)} sentences")
    evals = {"model": word_features(lab, evaluate, s.batch_size, engine=s.engine,
                                    progress=parts.of(work_part("word vectors of evaluated sentences")))}
    if any(k.startswith("null/") for k in trained):
        evals["null"] = word_features(null_model(lab, s.seed), evaluate, s.batch_size, engine=s.engine,
                                      progress=parts.of(work_part("word vectors of evaluated sentences", "null")))
    data = evals["model"]
    if not data.sentences:
        raise InputError("no sentence of the evaluated treebank could be scored (each needs two words or more "
                         "and must fit the model)")
    maps = word_maps(lab, evaluate, s.batch_size, progress=parts.of(work_part("attention maps of evaluated sentences")))
    parts.finish(work_part("attention maps of evaluated sentences"))
    ids = np.array(data.indices, dtype=np.int64)
    common = np.intersect1d(ids, maps.indices)
    select, report = split_sentences(common, s.select_fraction, s.seed)
    every, held = Resampler.over(ids, s.resamples, s.seed), Resampler.over(report, s.resamples, s.seed + 1)
    rows, comparison, selective, model_metrics = [], [], [], {}
    for key, probes in trained.items():
        model, kind = key.split("/")
        if model.endswith(CONTROL):
            continue  # scored against its model's probes below, on the same sentences
        model_ids = np.array(evals[model].indices, dtype=np.int64)  # the same sentences unless tokenizers differ
        table, metrics = probe_table(model, probes, evals[model], every, model_ids)
        rows += table
        if kind == "distance":
            method = "structural probe" if model == "model" else "structural probe, random weights"
            comparison += probe_uuas_rows(method, metrics, model_ids, report, held, select)
            model_metrics[model] = (metrics, model_ids)
    for model, (metrics, model_ids) in model_metrics.items():
        if f"{control_of(model)}/distance" in trained and np.array_equal(model_ids, ids):
            control_rows, rows_of = selectivity_rows(trained[f"{control_of(model)}/distance"], evals[model], metrics,
                                                     Halves(select, report, held), s.seed, model)
            comparison += control_rows
            selective += rows_of
    for kind in dict.fromkeys(k.split("/")[1] for k in trained):  # in the order trained, every run alike
        base = sentence_metrics(kind, right_branching(kind, data.sentences), data.sentences)
        rows.append({"model": "right-branching", "kind": kind, "layer": np.nan, "sentences": len(ids),
                     **metric_rows(base, kind, every, ids)})
        if kind == "distance":
            comparison += probe_uuas_rows("right-branching", {0: base}, ids, report, held, select)
    comparison += attention_layers(maps, TreeGold.of(maps), select, report, held, say)[0]
    if s.perturbed_masking:
        say(f"perturbed masking on {len(common)} sentences")
        part = work_part("perturbed masking of evaluated sentences")
        comparison += perturbed_masking_rows(lab, evaluate, common, Halves(select, report, held), parts.of(part))
        parts.finish(part)
    draws = {(r["method"], int(r["layer"])): r.pop("_draws") for r in comparison}
    result = StructureResult(lab.checkpoint_info(), names[0], names[1], trained, pd.DataFrame(rows),
                             pd.DataFrame(comparison), relation_ensembles(maps, relations, select, held.sentences, held),
                             {"evaluated": len(ids), "skipped": data.skipped, "selection": len(select),
                              "report": len(report)}, seconds, pd.DataFrame(selective))
    if s.control:
        result.ensemble_selectivity = ensemble_selectivity(maps, Halves(select, report, held), s.seed)
    result.conclusions = conclusions(result.comparison, draws, result.selectivity)
    if result.ensemble_selectivity:
        result.conclusions.append(result.ensemble_selectivity["verdict"] + " (selectivity, Hewitt & Liang 2019)")
    return result


def conclusions(comparison: pd.DataFrame, draws: dict[tuple[str, int], np.ndarray],
                selectivity: pd.DataFrame | None = None) -> list[str]:
    """Sentences generated from paired bootstrap intervals (the same resampled held-out sentences for
    every method): the probe's best layer against right-branching and against the attention trees
    of that layer, and the best attention tree against right-branching."""
    out = []

    def paired(a: tuple[str, int], b: tuple[str, int], name_a: str, name_b: str) -> str:
        diff = draws[a] - draws[b]
        lo, hi = percentile_interval(diff[~np.isnan(diff)][:, None], (1,))
        return verdict(float(lo[0]), float(hi[0]), name_a, name_b)

    def best(method: str) -> tuple[str, int] | None:
        """The method's layer with the highest UUAS on the selection half (never on the reported half)."""
        rows = comparison[comparison.method == method]
        return None if not len(rows) else (method, int(rows.loc[rows.select_uuas.idxmax(), "layer"]))

    probe, base = best("structural probe"), ("right-branching", 0)
    if base not in draws:
        return out
    if probe is not None:
        layer = probe[1]
        out.append(paired(probe, base, f"the structural probe at layer {layer} (its best layer on the selection half)",
                          "right-branching"))
        own = selectivity[selectivity.model == "the model"] if selectivity is not None and len(selectivity) else None
        if own is not None and layer in set(own.layer):
            out.append(own[own.layer == layer].verdict.iloc[0]
                       + " (selectivity, Hewitt & Liang 2019: what the probe finds beyond what it can memorise)")
        for method in ("head ensemble tree", "best head tree"):
            if (method, layer) in draws:
                out.append(paired(probe, (method, layer), f"the structural probe at layer {layer}",
                                  f"the {method.replace(' tree', '')}'s tree at layer {layer}"))
    for method in ("head ensemble tree", "best head tree"):
        top = best(method)
        if top is not None:
            out.append(paired(top, base, f"the {method.replace(' tree', '')}'s tree at layer {top[1]} (best layer on the "
                              "selection half)", "right-branching"))
    masking = best("perturbed masking tree")
    if masking is not None:
        out.append(paired(masking, base, f"the perturbed-masking tree at layer {masking[1]} (best layer on the "
                          "selection half; no trained parameters)", "right-branching"))
        if probe is not None and (masking[0], probe[1]) in draws:
            out.append(paired(probe, (masking[0], probe[1]), f"the structural probe at layer {probe[1]}",
                              f"the perturbed-masking tree at layer {probe[1]}"))
    return out


def save_probes(path: Path, result: StructureResult) -> Path:
    """The trained probes as safetensors, with the weights' hash and how they were trained."""
    tensors = {f"{key}/layer{layer}": torch.from_numpy(np.ascontiguousarray(p.proj, dtype=np.float32)).half()
               for key, probes in result.trained_items() for layer, p in probes.items()}
    meta = {"model_sha256": result.checkpoint.sha256, "model": result.checkpoint.describe(),
            "train_treebank": result.train_treebank,
            "probes": json.dumps({f"{key}/layer{layer}": {"epochs": p.epochs, "best_epoch": p.best_epoch,
                                                           "stop_loss": p.stop_loss, "curve": p.curve}
                                  for key, probes in result.trained_items() for layer, p in probes.items()})}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=meta)
    return path


PROBE_NAME = re.compile(r"[^/]+/(distance|depth)/layer(\d{1,3})")  # save_probes' "name/kind/layerN"


def load_probes(path: Path, lab: Lab) -> dict[str, dict[int, TrainedProbe]]:
    """Probes saved by ``save_probes``; refused unless they were trained on exactly these weights. A file that is
    not one (another format, a folder, a forged header, tensors of other shapes) is one sentence (issue 56)."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path} is not a file: give the probes.safetensors a structural-probe run wrote")
    try:
        with safe_open(str(path), "pt") as handle:
            meta = handle.metadata() or {}
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError):
        raise InputError(f"{path} is not a readable safetensors file of probes (its header or tensors cannot be "
                         "read)") from None
    if meta.get("model_sha256") != lab.checkpoint_info().sha256:
        raise InputError(f"{path}: these probes were trained on other weights ({meta.get('model', 'unknown')}); "
                         f"this model is {lab.checkpoint_info().describe()}")
    try:
        info = json.loads(meta.get("probes", "{}"))
        if not isinstance(info, dict):
            raise ValueError
    except ValueError:
        raise InputError(f"{path}: its record of how the probes were trained is not the JSON object "
                         "structural-probe writes") from None
    widths = {lab.model.config.hidden_size, lab.model.config.embedding_dim}
    out: dict[str, dict[int, TrainedProbe]] = {}
    for name, tensor in tensors.items():
        found = PROBE_NAME.fullmatch(name)
        if found is None or tensor.ndim != 2 or tensor.shape[0] not in widths or not torch.isfinite(tensor).all():
            raise InputError(f"{path}: {name!r} is not a probe of this model (a name 'NAME/distance|depth/layerN' "
                             f"and a finite matrix of {max(widths)} rows)")
        key, layer = name.rsplit("/layer", 1)
        i = info.get(name, {}) if isinstance(info.get(name), dict) else {}
        out.setdefault(key, {})[int(layer)] = TrainedProbe(found.group(1), int(layer), tensor.float().numpy(),
                                                           i.get("epochs", 0), i.get("best_epoch", 0),
                                                           i.get("stop_loss", float("nan")), i.get("curve", []))
    if not out:
        raise InputError(f"{path} holds no probe")
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def shipped_probes_file(lab: Lab) -> Path:
    """Where bertviz-lab ships probes for exactly these weights (the file may not exist)."""
    return SHIPPED_PROBES / f"{lab.checkpoint_info().sha256[:12]}.safetensors"


def shipped_probes(lab: Lab) -> dict[str, dict[int, TrainedProbe]] | None:
    """The probes bertviz-lab ships for exactly these weights (``assets/probes/<sha256 prefix>.safetensors``), or None."""
    path = shipped_probes_file(lab)
    if not path.is_file():
        return None
    probes = load_probes(path, lab)
    control = path.with_name(path.stem + "-control.safetensors")  # the control-task probes, for selectivity
    return {**probes, **load_probes(control, lab)} if control.is_file() else probes


def refuse_test_split(path: Path | None, what: str) -> None:
    """Probes are never trained or stopped on a test split: a file named like one is refused."""
    if path is not None and "-test" in Path(path).name:
        raise InputError(f"{what} {Path(path).name} looks like a test split; probes are never trained or stopped "
                         "on one")


def structure_record(result: StructureResult, files: dict[str, Path], probes: str) -> dict:
    """What a structural-probe run says: the weights, where its probes came from, the sentences, the
    time each part took, its conclusions and the files written."""
    return {"model": result.checkpoint.describe(), "probes": probes, "sentences": result.sentences,
            "seconds": result.seconds, "conclusions": list(result.conclusions),
            "files": {k: str(v) for k, v in files.items()}}
