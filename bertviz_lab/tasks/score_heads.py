"""Score every head against a dependency treebank (Clark et al. 2019): the one way every door asks for it.

One request is either one checkpoint on one treebank (the page, the MCP door, ``score-heads`` with one of each: a
``HeadScores`` record with the summary the views draw) or a job of several checkpoints and/or treebanks, or any run on
Ray (``score-heads`` only: pairs written as they finish, resumable, each treebank parsed once). The defaults are
the same at every door: head ensembles on (softmax attention only), the random-weights null model on, and relations
listed from 50 arcs, or from 10 on the shipped sample treebank, too small for 50.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..attention.sources import get_source
from ..figures.syntax import relation_records
from ..lab import InputError, Lab
from ..syntax.job import Job, checkpoints_to_score, job_record, run_job, treebank_files
from ..syntax.run import Progress, Steps, SyntaxRun, best_heads_long, run_syntax, score_record
from ..syntax.summary import Settings
from ..treebank import SAMPLE_TREEBANK, Sentence
from .treebanks import read_treebank
from .weights import weights_for

LoadLab = Callable[[str], Lab]  # a door's way to a loaded checkpoint: its cache, or load() with its options
SAMPLE_MIN_ARCS = 10  # the shipped sample treebank's relations mostly have fewer than Settings' 50 arcs


@dataclass(frozen=True)
class ScoreHeadsRequest:
    """What to score, on whose weights, and how. ``treebanks`` empty: the shipped sample; ``checkpoints`` empty: the
    published weights of the door's ``loaded`` model (``weights.weights_for``). ``max_words`` is the door's cap on
    one request (None: none, the command line)."""

    treebanks: tuple[Path, ...] = ()
    checkpoints: tuple[str, ...] = ()
    loaded: str | None = None
    compare_checkpoint: str | None = None
    source: str = "attention"
    settings: Settings | None = None  # None: Settings(); its min_arcs replaced by ``min_arcs``
    min_arcs: int | None = None  # relations listed need this many arcs (None: 50, or SAMPLE_MIN_ARCS on the sample)
    null: bool = True
    ensembles: bool = True
    batch_size: int = 32
    max_length: int | None = None
    max_sentences: int | None = None
    max_words: int | None = None
    full_relations: bool = False
    engine: str = "local"  # local or ray
    ray_address: str | None = None
    workers: int = 2
    device: str = "cpu"  # the Ray workers' device
    allow_pickle: bool = False
    shown_names: tuple[str, ...] = ()  # how errors and titles name each treebank (an upload's own name)
    files: list[Path] = field(init=False)  # the CoNLL-U files: each named, every *.conllu of a folder, or the sample

    def __post_init__(self) -> None:
        get_source(self.source)  # an unknown source is one sentence, before anything loads
        object.__setattr__(self, "files", treebank_files(self.treebanks) if self.treebanks else [SAMPLE_TREEBANK])
        if self.engine not in ("local", "ray"):
            raise InputError(f"unknown engine {self.engine!r}; choose local or ray")
        if self.is_job and self.compare_checkpoint:
            raise InputError("--compare-model compares two checkpoints on one treebank; for a job, pass --model twice")

    @property
    def models(self) -> list[str]:
        return checkpoints_to_score(self.checkpoints or [weights_for(False, loaded=self.loaded)])

    @property
    def is_job(self) -> bool:
        return len(self.checkpoints) > 1 or len(self.files) > 1 or self.engine == "ray"

    def chosen_settings(self) -> Settings:
        min_arcs = self.min_arcs
        if min_arcs is None:
            min_arcs = SAMPLE_MIN_ARCS if self.files == [SAMPLE_TREEBANK] else Settings.min_arcs
        return replace(self.settings or Settings(), min_arcs=min_arcs)

    def job(self, out: Path) -> Job:
        return Job(self.models, self.files, out, self.chosen_settings(), engine=self.engine,
                   ray_address=self.ray_address, workers=self.workers, device=self.device, batch_size=self.batch_size,
                   max_length=self.max_length, max_sentences=self.max_sentences, source=self.source, null=self.null,
                   full_relations=self.full_relations, allow_pickle=self.allow_pickle)


@dataclass
class HeadScores:
    """One checkpoint's heads scored on one treebank: the run (summary, optional comparison), its sentences and
    where they came from."""

    run: SyntaxRun
    sentences: list[Sentence]
    treebank: str  # the treebank's name as shown
    files: dict[str, Path] = field(default_factory=dict)  # what the command line wrote

    @property
    def summary(self):
        return self.run.summary

    def to_json(self) -> dict[str, Any]:
        summary = self.run.summary
        return {**score_record(summary, self.files), "treebank": self.treebank, "source": summary.source,
                "sentences_used": summary.sentences_used, "sentences_skipped": summary.sentences_skipped,
                "relations": relation_records(summary.best_heads),
                "best_heads": best_heads_long(summary.best_heads).to_dict(orient="records")}


def read_sentences(request: ScoreHeadsRequest) -> tuple[list[Sentence], str]:
    """The one treebank of a single run, read within the door's limit, and its shown name."""
    path = request.files[0]
    shown = request.shown_names[0] if request.shown_names else None
    return read_treebank(path, request.max_words, request.full_relations, shown_name=shown), shown or path.name


def score_heads(request: ScoreHeadsRequest, load_lab: LoadLab, sentences: Sequence[Sentence] | None = None,
                progress: Progress | None = None, steps: Steps | None = None) -> HeadScores:
    """One checkpoint on one treebank (``sentences`` when the door already read them, e.g. to check a file before
    loading a model). ``progress(fraction, what)`` follows the passes (the page's bar), ``steps(done, total)``
    counts sentence passes (the command line's)."""
    if request.is_job:
        raise InputError("several checkpoints or treebanks, or the Ray engine, make a job: use score_heads_job")
    name = request.shown_names[0] if request.shown_names else request.files[0].name
    if sentences is None:
        sentences, name = read_sentences(request)
    lab = load_lab(request.models[0])
    other = None
    if request.compare_checkpoint and request.compare_checkpoint != request.models[0]:
        other = load_lab(request.compare_checkpoint)
    run = run_syntax(lab, sentences, request.chosen_settings(), null=request.null, compare_lab=other,
                     batch_size=request.batch_size, max_length=request.max_length,
                     max_sentences=request.max_sentences, progress=progress, source=request.source,
                     ensembles=request.ensembles, steps=steps)
    return HeadScores(run, list(sentences), name)


@dataclass
class JobScores:
    """A finished job: its checkpoints, pairs, engine, files, and how many times each treebank was parsed."""

    job: Job
    files: dict[str, Path]

    def to_json(self) -> dict[str, Any]:
        return {**job_record(self.job, self.files), "treebank_parses": self.job.parses}


def score_heads_job(job: Job, load_lab: LoadLab, say: Callable[[str], None] = print,
                    progress_for: Callable[[str], Steps | None] = lambda _: None, report=None) -> JobScores:
    """Every missing (checkpoint, treebank) pair of ``ScoreHeadsRequest.job(out)``, locally or on Ray, resumable
    with the same ``out``; each treebank is parsed once (``Job.sentences``), also when the door read them first."""
    return JobScores(job, run_job(job, load_lab, say=say, progress_for=progress_for, report=report))
