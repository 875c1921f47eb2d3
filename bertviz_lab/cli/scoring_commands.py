"""Commands that check heads and layers against a treebank: ``score-heads`` (every head's accuracy
per relation, Clark et al. 2019) and
``structural-probe`` (Hewitt & Manning's probes beside attention trees and head ensembles)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..attention.sources import source_names
from .options import (
    WorkBar,
    add_engine_options,
    add_model_options,
    command,
    count,
    emit,
    engine_from_args,
    lab_from_args,
    open_share,
    positive_int,
    seed,
)

EXAMPLES = {
    "score-heads": ["bertviz-lab score-heads --out results/sample",
                    "bertviz-lab score-heads --conllu en_ewt-ud-dev.conllu --conllu de_gsd-ud-dev.conllu --out results/ud"],
    "structural-probe": ["bertviz-lab structural-probe --train en_ewt-ud-train.conllu --treebank en_ewt-ud-dev.conllu "
                         "--out results/structure",
                         "bertviz-lab structural-probe --probes results/structure/probes.safetensors --treebank "
                         "en_ewt-ud-dev.conllu --out results/structure-again"],
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    add_score_heads(sub)
    add_structure(sub)


# ---- score-heads ---------------------------------------------------------------------------
def add_score_heads(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "score-heads", "score every head against a dependency treebank (Clark et al. 2019)",
                EXAMPLES["score-heads"])
    p.add_argument("--conllu", type=Path, nargs="+", action="extend", default=None,
                   help="CoNLL-U treebanks: files or folders of *.conllu, several after one flag or the flag "
                        "repeated (default: the sample treebank shipped with bertviz-lab); several, or several "
                        "--model, make one job (see --engine)")
    p.add_argument("--out", required=True, type=Path,
                   help="folder for head_scores.csv, best_heads.csv (one row per relation and measure: its columns "
                        "are listed in report.html), uuas.csv, report.html (one treebank and "
                        "model); for a job: scores.csv, best_heads.csv, agreement.csv, report.html and pairs/ "
                        "(finished pairs are skipped when the job runs again)")
    add_engine_options(p, "batches of sentences, scored on the workers (only counts come back)")
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument("--max-sentences", type=positive_int, default=None)
    p.add_argument("--max-length", type=positive_int, default=None, help="skip sentences longer than this (tokens)")
    p.add_argument("--full-relations", action="store_true", help="keep relation subtypes (nmod:poss, ...)")
    p.add_argument("--resamples", type=count, default=1000, help="bootstrap resamples over sentences (0 = no intervals)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap, the held-out split and the null model")
    p.add_argument("--select-fraction", type=open_share, default=0.5,
                   help="share of sentences the held-out best head is chosen on (the rest report it)")
    p.add_argument("--min-arcs", type=int, default=None,
                   help="relations listed in best_heads.csv need this many arcs (default: 50, or 10 on the shipped "
                        "sample treebank, too small for 50)")
    p.add_argument("--no-null-model", action="store_true", help="skip the random-weights null model")
    p.add_argument("--uuas-punct", choices=("include", "exclude"), default="include",
                   help="count arcs whose dependent is punctuation (UD punct) in UUAS, or leave them out "
                        "(stated in uuas.csv and the report)")
    p.add_argument("--null-seeds", type=positive_int, default=5,
                   help="random-weight models (seeds --seed, --seed + 1, ...) the null row's mean and interval "
                        "are taken over")
    p.add_argument("--source", choices=source_names(), default="attention",
                   help="the attention source heads are scored on: softmax attention, norm-based weights "
                        "(Kobayashi et al. 2020) or another source of the registry")
    p.add_argument("--compare-model", default=None,
                   help="also score this checkpoint and write compare_scores.csv (its accuracy minus --model's)")
    p.add_argument("--no-ensembles", action="store_true",
                   help="leave out the head ensembles per relation (Limisiewicz et al. 2020) in best_heads.csv "
                        "(they need a second pass; one treebank and model only)")
    add_model_options(p, needs_mlm_head=False, repeatable=True, what="the weights to score")
    p.set_defaults(func=run_score_heads)


def score_request(args: argparse.Namespace):
    """score-heads' options as the task's request (every default and check lives in tasks/score_heads.py)."""
    from ..syntax.summary import Settings
    from ..tasks.score_heads import ScoreHeadsRequest

    settings = Settings(args.resamples, args.seed, args.select_fraction, null_seeds=args.null_seeds,
                        uuas_punct=args.uuas_punct)
    return ScoreHeadsRequest(tuple(args.conllu or ()), tuple(args.model or ()), compare_checkpoint=args.compare_model,
                             source=args.source, settings=settings, min_arcs=args.min_arcs,
                             null=not args.no_null_model,
                             ensembles=not args.no_ensembles, batch_size=args.batch_size, max_length=args.max_length,
                             max_sentences=args.max_sentences, full_relations=args.full_relations, engine=args.engine,
                             ray_address=args.ray_address, workers=args.workers,
                             device="cpu" if args.device == "auto" else args.device, allow_pickle=args.allow_pickle)


def passes_work(passes: list[str]) -> Callable[[int], str]:
    """What the estimate line says a syntax run's work is, for its total in sentence passes."""
    def describe(total: int) -> str:
        sentences = total // max(len(passes), 1)
        return (f"{sentences:,} sentences x {len(passes)} passes ({', '.join(passes)}) = {total:,} sentence "
                "passes")
    return describe


class PassCost:
    """The work of a syntax run's first k sentence passes, for the estimate: a sentence costs its tokens (measured:
    a batch's time over its tokens varies 22 % between batches, over its sentences 44 %), in the order the passes
    take them (shortest first), every pass the same. The checkpoint is the one ``load`` loaded, read when the
    estimate is made (after the warm-up)."""

    def __init__(self, load: Callable[[str], Any], sentences: list, request) -> None:
        self.load, self.sentences, self.request = load, sentences, request
        self.lab: Any = None
        self.cumulative: list[int] | None = None

    def loader(self, model: str) -> Any:
        lab = self.load(model)
        self.lab = self.lab or lab  # the first checkpoint loaded is the one scored
        return lab

    def __call__(self, k: int) -> float:
        from itertools import accumulate

        from ..syntax.scoring import plan_batches

        if self.cumulative is None:
            if self.lab is None:
                return float(k)
            r = self.request
            plan = plan_batches(self.lab, self.sentences, r.batch_size, r.max_length, r.max_sentences)
            self.cumulative = [0, *accumulate(len(enc.ids) for batch in plan.batches for _, _, enc in batch)]
        per_pass, total = len(self.cumulative) - 1, self.cumulative[-1]
        if per_pass < 1:
            return float(k)
        return float((k // per_pass) * total + self.cumulative[k % per_pass])


def run_score_heads(args: argparse.Namespace) -> int:
    from ..export import check_writable
    from ..figures.syntax import ANSWER_NOTE, relation_answers
    from ..reports.syntax_report import write_outputs
    from ..syntax.run import syntax_passes
    from ..tasks.score_heads import read_sentences, score_heads

    request = score_request(args)
    if request.is_job:
        job = request.job(args.out)
        for treebank in job.treebanks:
            job.sentences(treebank)  # a bad file fails before any model loads; each is parsed once per job
        check_writable(args.out)
        return run_score_heads_job(args, job)
    sentences, name = read_sentences(request)  # a bad file fails first
    check_writable(args.out)
    settings = request.chosen_settings()
    passes = syntax_passes(settings.null_seed_list() if request.null else [], request.compare_checkpoint is not None,
                           request.ensembles and request.source == "attention")
    cost = PassCost(lambda model: lab_from_args(args, model), sentences, request)
    with WorkBar("score-heads", "sentence", passes_work(passes), "batch", cost=cost) as bar:
        scored = score_heads(request, cost.loader, sentences, steps=bar)
    scored.files = write_outputs(scored.summary, args.out, title=f"Syntax scores: {name}", compare=scored.run.compare)
    record = scored.to_json()
    print(f"scored {record['sentences']} sentences with {record['model']}, skipped {record['skipped']} as too long "
          f"and {record['skipped_empty_words']} for {record['words_without_pieces']} words that become no word piece",
          file=sys.stderr)  # what was left out, beside the progress bar, whatever the output
    record.pop("best_heads")  # in best_heads.csv
    return emit(args, record, [f"model: {record['model']}", f"{record['sentences']} sentences scored", "",
                               ANSWER_NOTE, "", relation_answers(record["relations"]).to_string(index=False), "",
                               f"wrote {', '.join(map(str, scored.files.values()))}"])


def run_score_heads_job(args: argparse.Namespace, job) -> int:
    """Several treebanks and/or checkpoints, locally or on Ray; resumable with the same --out."""
    from ..reports.syntax_report import job_report_html
    from ..syntax.run import syntax_passes
    from ..tasks.score_heads import score_heads_job

    passes = syntax_passes(job.settings.null_seed_list() if job.null else [], False, False)
    bars: list[WorkBar] = []

    def progress_for(name: str) -> WorkBar:
        bars.append(WorkBar(name, "sentence", passes_work(passes), "batch"))
        return bars[-1]

    try:
        scored = score_heads_job(job, lambda model: lab_from_args(args, model), say=WorkBar.note,
                                 progress_for=progress_for, report=job_report_html)
    finally:
        for bar in bars:
            bar.close()
    record = scored.to_json()
    return emit(args, record, [f"{record['pairs']} (checkpoint, treebank) pairs scored ({args.engine}) with "
                               f"{', '.join(record['models'])}", f"wrote {', '.join(map(str, scored.files.values()))}"])


# ---- structural-probe ----------------------------------------------------------------------
def add_structure(sub: argparse._SubParsersAction) -> None:
    p = command(sub, "structural-probe",
                "structural probes (Hewitt & Manning 2019) per layer beside attention trees and head ensembles "
                "(Limisiewicz et al. 2020), on the same sentences with intervals", EXAMPLES["structural-probe"])
    p.add_argument("--train", type=Path, default=None, metavar="CONLLU",
                   help="a treebank's train split to train the probes on (never a test split)")
    p.add_argument("--probes", type=Path, default=None,
                   help="probes.safetensors from an earlier run on the same weights, instead of training "
                        "(with neither flag: the probes bertviz-lab ships for these weights, minilm-original's)")
    p.add_argument("--stop", type=Path, default=None, metavar="CONLLU",
                   help="sentences to stop training on (default: a seeded 10%% of --train)")
    p.add_argument("--treebank", required=True, type=Path, metavar="CONLLU", help="the treebank to report on")
    p.add_argument("--out", required=True, type=Path,
                   help="folder for probe_scores.csv, structure.csv, ensembles.csv, training_curves.csv, selectivity.csv, "
                        "probes.safetensors and report.html")
    p.add_argument("--kinds", nargs="+", choices=("distance", "depth"), default=["distance", "depth"])
    p.add_argument("--no-null-model", action="store_true", help="skip the probe on random weights")
    p.add_argument("--no-control", action="store_true",
                   help="skip the control task (Hewitt & Liang 2019) the probes' selectivity is measured against")
    p.add_argument("--epochs", type=positive_int, default=40, help="at most this many epochs (early stopping ends most sooner)")
    p.add_argument("--max-train-sentences", type=positive_int, default=None)
    p.add_argument("--max-sentences", type=positive_int, default=None, help="evaluate on the first N sentences")
    p.add_argument("--min-arcs", type=int, default=50, help="relations with this many arcs get a head ensemble")
    p.add_argument("--resamples", type=positive_int, default=1000)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--perturbed-masking", action="store_true",
                   help="also Perturbed Masking's parameter-free trees per layer (Wu et al. 2020) in the comparison")
    add_model_options(p, needs_mlm_head=False)
    add_engine_options(p, "batches of sentences (their word vectors)")
    p.set_defaults(func=run_structure)


def run_structure(args: argparse.Namespace) -> int:
    from ..reports.structure_report import write_structure
    from ..syntax.structure import StructureSettings, structure_work
    from ..tasks.structural_probes import StructureRequest, probes_for, structure, treebanks_of

    settings = StructureSettings(resamples=args.resamples, seed=args.seed, kinds=tuple(args.kinds),
                                 null=not args.no_null_model, epochs=args.epochs,
                                 perturbed_masking=args.perturbed_masking, control=not args.no_control,
                                 engine=engine_from_args(args))
    request = StructureRequest(args.treebank, args.train, args.probes, args.stop, settings, args.min_arcs,
                               args.max_sentences, args.max_train_sentences)
    treebanks = treebanks_of(request)  # a bad file fails before the model loads
    lab = lab_from_args(args)
    trained, _ = probes_for(request, lab)
    parts = structure_work(treebanks, settings, trained)
    with WorkBar("structural-probe", "sentence", parts_work(parts), "batch") as bar:
        done = structure(request, lab, treebanks, progress=WorkBar.note, steps=bar)
    done.files = write_structure(done.result, args.out,
                                 title=f"Syntax in {lab.checkpoint_info().name}: {args.treebank.name}")
    record = done.to_json()
    return emit(args, record, structure_summary(record))


def parts_work(parts: list[tuple[str, int]]) -> Callable[[int], str]:
    """What the estimate line says a structural-probe run's work is: its parts in sentence passes
    (training parts are at most: early stopping ends most probes sooner)."""
    training = any("epochs" in name for name, _ in parts)

    def describe(total: int) -> str:
        listed = "; ".join(f"{name}: {size:,}" for name, size in parts)
        return f"{'up to ' if training else ''}{total:,} sentence passes ({listed})"
    return describe


def structure_summary(record: dict) -> Iterator[str]:
    yield f"model: {record['model']}; probes: {record['probes']}"
    yield from record["conclusions"]
    yield f"wrote {', '.join(record['files'].values())}"
