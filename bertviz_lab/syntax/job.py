"""Many treebanks x many checkpoints as one job: each (checkpoint, treebank) pair is scored once
(locally or on Ray), written to its own folder atomically, and skipped when the job is run again
with the same ``--out``; then one tidy table, every pair's best heads, the cross-treebank head
agreement and one report are written from the finished pairs.

The agreement view follows the cross-lingual question of Ravishankar et al. (2021), "Attention
Can Reflect Syntactic Structure (If You Let It)": for each relation, each treebank's best head,
and how often the same head wins across treebanks (languages).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..export import parquet_bytes, with_parquet, write_atomically
from ..lab import InputError, Lab, null_model
from ..treebank import read_conllu
from .run import best_heads_long, best_heads_wide
from .scoring import TreebankScores, check_scored, score_treebank
from .summary import Settings, SyntaxSummary, summarise

TIDY_COLUMNS = ["model", "model_hash", "treebank", "language", "relation", "direction", "layer", "head", "correct",
                "total", "accuracy", "ci_low", "ci_high"]
Report = Callable[[pd.DataFrame, pd.DataFrame, pd.DataFrame], str]  # (tidy, best heads, agreement) -> HTML
DONE = "DONE"  # written last in a pair's folder: its presence means the pair is complete


@dataclass
class Job:
    models: list[str]
    treebanks: list[Path]
    out: Path
    settings: Settings = field(default_factory=Settings)
    engine: str = "local"  # local or ray
    ray_address: str | None = None
    workers: int = 2
    device: str = "cpu"
    batch_size: int = 32
    max_length: int | None = None
    max_sentences: int | None = None
    source: str = "attention"
    null: bool = True
    full_relations: bool = False
    allow_pickle: bool = False  # the Ray workers load the checkpoint as the driver did
    parsed: dict[Path, list] = field(default_factory=dict, repr=False)  # each treebank parsed once per job
    parses: int = field(default=0, repr=False)

    def sentences(self, treebank: Path) -> list:
        """``treebank``'s sentences, parsed the first time a job asks (however many checkpoints score it)."""
        if treebank not in self.parsed:
            self.parsed[treebank] = read_conllu(treebank, full_relations=self.full_relations)
            self.parses += 1
        return self.parsed[treebank]


def checkpoints_to_score(given: Sequence[str]) -> list[str]:
    """Every distinct checkpoint as typed, in order: ``default`` stays the fine-tuned checkpoint (it
    was once silently swapped for the published one) and a repeat is scored once."""
    return list(dict.fromkeys(given))


def job_record(job: Job, files: dict[str, Path]) -> dict:
    """What a finished job says: the checkpoints and pairs scored, the engine, the files written."""
    return {"models": list(dict.fromkeys(job.models)), "pairs": complete_pairs(job), "engine": job.engine,
            **{k: str(v) for k, v in files.items()}}


def treebank_files(paths: Sequence[Path]) -> list[Path]:
    """CoNLL-U files named directly, or every *.conllu inside the folders named, sorted; a file
    named twice (also as ``./x`` or by its absolute path) counts once."""
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            found = sorted(path.rglob("*.conllu"))
            if not found:
                raise InputError(f"{path}: no .conllu file in this folder")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or folder")
    return distinct(files)


def distinct(paths: Sequence[Path]) -> list[Path]:
    """Each file once, whatever its spelling (``x``, ``./x``, ``/abs/x``); the first spelling is kept."""
    unique: dict[Path, Path] = {}
    for path in paths:
        unique.setdefault(Path(path).resolve(), Path(path))
    return list(unique.values())


def language_of(path: Path) -> str:
    """The language code UD file names start with (en_ewt-ud-dev.conllu -> en), else 'und'."""
    match = re.match(r"^([a-z]{2,3})_[a-z0-9]+-ud-", path.name)
    return match.group(1) if match else "und"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "x"


def pair_folder(out: Path, model: str, treebank: Path) -> Path:
    """One folder per (checkpoint, treebank file): readable names plus a short hash of the model and
    the treebank's resolved path, because de/dev.conllu and fr/dev.conllu share a stem (and long
    model paths share their first 80 characters)."""
    key = hashlib.sha256(f"{model}\n{Path(treebank).resolve()}".encode()).hexdigest()[:10]
    return out / "pairs" / f"{slug(model)}__{slug(Path(treebank).stem)}__{key}"


def pair_folders(job: Job) -> list[Path]:
    """Every pair's folder, each once, in the job's order (checkpoints, then treebanks)."""
    return list(dict.fromkeys(pair_folder(job.out, m, t) for m in job.models for t in distinct(job.treebanks)))


def complete_pairs(job: Job) -> int:
    """Pairs whose folder is complete (its DONE file written last): what the job really has."""
    return sum((folder / DONE).is_file() for folder in pair_folders(job))


def treebank_labels(treebanks: Sequence[Path]) -> dict[Path, str]:
    """What the tables call each treebank: its file name, or, when two share a file name
    (de/dev.conllu, fr/dev.conllu), its path from their common folder, so the rows of two
    treebanks never look alike."""
    names = [Path(t).name for t in treebanks]
    if len(set(names)) == len(names):
        return {t: Path(t).name for t in treebanks}
    resolved = [Path(t).resolve() for t in treebanks]
    try:
        common = Path(os.path.commonpath([r.parent for r in resolved]))
    except ValueError:  # no common folder (two drives): the whole path tells them apart
        return {t: r.as_posix() for t, r in zip(treebanks, resolved)}
    return {t: r.relative_to(common).as_posix() for t, r in zip(treebanks, resolved)}


def score(job: Job, lab: Lab, sentences, progress=None) -> tuple[TreebankScores, list[TreebankScores]]:
    """One treebank on the local engine: the checkpoint, then its null models (one per seed)."""
    kwargs = {"batch_size": job.batch_size, "max_length": job.max_length, "max_sentences": job.max_sentences,
              "source": job.source}
    seeds = job.settings.null_seed_list() if job.null else []
    models = [lab] + [null_model(lab, seed) for seed in seeds]

    def bar(i: int):  # one bar for all models, as on the Ray engine
        if progress is None:
            return None
        return lambda done, total: progress(i * total + done, len(models) * total)

    scored = [score_treebank(model, sentences, progress=bar(i), **kwargs) for i, model in enumerate(models)]
    return scored[0], scored[1:]


def score_on_ray(job: Job, lab: Lab, treebanks: list[list], progress: Callable[[int, int, int], None]):
    """All of a checkpoint's missing treebanks as one Ray job (its workers start once), null model
    included: (index, scores, null scores) as each treebank completes. The driver scores no sentence."""
    from .ray_engine import RayCluster, RayScoring, score_treebanks_ray

    scoring = RayScoring(batch_size=job.batch_size, max_length=job.max_length, max_sentences=job.max_sentences,
                         source=job.source, null_seeds=tuple(job.settings.null_seed_list()) if job.null else ())
    cluster = RayCluster(address=job.ray_address, workers=job.workers, device=job.device, allow_pickle=job.allow_pickle)
    return score_treebanks_ray(lab, treebanks, scoring, cluster, progress)


def write_pair(folder: Path, summary: SyntaxSummary, treebank: Path, label: str | None = None) -> None:
    """The pair's tables into a fresh folder, renamed into place only when complete. ``label`` is
    the treebank's name in the tables (default: its file name; see ``treebank_labels``)."""
    label = label or treebank.name
    partial = folder.with_name(f".{folder.name}.partial-{uuid.uuid4().hex[:8]}")
    partial.mkdir(parents=True)
    try:
        tidy = summary.head_scores.rename(columns={"model_sha256": "model_hash"})
        tidy.insert(2, "treebank", label)
        tidy.insert(3, "language", language_of(treebank))
        tidy[TIDY_COLUMNS].to_csv(partial / "scores.csv", index=False, float_format="%.6f")
        best = summary.best_heads.copy()
        best.insert(1, "treebank", label)
        best.insert(2, "language", language_of(treebank))
        best_heads_long(best).to_csv(partial / "best_heads.csv", index=False, float_format="%.6f")
        records = parquet_bytes(summary.sentence_records())
        if records is not None:  # per sentence and head: over a million rows for a treebank, Parquet only
            (partial / "sentence_head_scores.parquet").write_bytes(records)
        (partial / DONE).write_text(f"{label}\n{skip_note(summary)}\n")
        if folder.exists():
            shutil.rmtree(folder)  # an incomplete earlier attempt (no DONE)
        os.replace(partial, folder)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def skip_note(scores: TreebankScores | SyntaxSummary) -> str:
    """How many sentences were scored, and how many left out for which reason."""
    return (f"{scores.sentences_used} sentences scored ({scores.sentences_skipped} too long, "
            f"{scores.sentences_skipped_empty_words} with {scores.words_without_pieces} words that become no word piece)")


AGREEMENT_COLUMNS = ["model", "relation", "head", "direction", "treebanks_won", "treebanks", "share", "chosen"]


def agreement(best: pd.DataFrame, min_arcs: int = 0) -> pd.DataFrame:
    """Per model and relation: for each head and direction that is some treebank's best, in how many
    treebanks. The head is the *held-out* best (chosen on one half of the sentences; the in-sample
    best where a treebank had too few sentences to split, said in ``chosen``), a head that wins
    dep->head is not the same finding as one that wins head->dep, and only treebanks where the
    relation has at least ``min_arcs`` arcs count. A share needs two such treebanks (with one, every
    head "agrees"), so with fewer it is empty."""
    rows = []
    usable = best[best["count"] >= min_arcs] if "count" in best else best
    for (model, relation), group in usable.groupby(["model", "relation"], sort=True):
        n = group.treebank.nunique()
        held = group.heldout_head.fillna("").astype(str).str.len() > 0 if "heldout_head" in group else \
            pd.Series(False, index=group.index)
        picks = pd.DataFrame({
            "treebank": group.treebank,
            "head": group.heldout_head.where(held, group.best_head) if "heldout_head" in group else group.best_head,
            "direction": group.heldout_direction.where(held, group.direction) if "heldout_head" in group
            else group.direction,
            "chosen": held.map({True: "held-out", False: "in-sample"})})
        for (head, direction), won in picks.groupby(["head", "direction"]):
            wins = won.treebank.nunique()
            rows.append({"model": model, "relation": relation, "head": head, "direction": direction,
                         "treebanks_won": int(wins), "treebanks": int(n), "share": wins / n if n >= 2 else np.nan,
                         "chosen": ", ".join(sorted(set(won.chosen)))})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def run_job(job: Job, load_lab: Callable[[str], Lab], say: Callable[[str], None] = print,
            progress_for: Callable[[str], Callable[[int, int], None] | None] = lambda _: None,
            report: Report | None = None) -> dict[str, Path]:
    """Score every missing pair (each written as soon as it is complete), then write the combined
    tables and, given ``report`` (``reports.syntax_report.job_report_html``; drawing sits above this layer),
    report.html."""
    job.out.mkdir(parents=True, exist_ok=True)
    treebanks = distinct(job.treebanks)
    labels = treebank_labels(treebanks)
    for model in dict.fromkeys(job.models):
        missing = []
        for treebank in treebanks:
            if (pair_folder(job.out, model, treebank) / DONE).is_file():
                say(f"{model} x {labels[treebank]}: done earlier, skipped")
            else:
                missing.append(treebank)
        if missing:
            score_model(job, model, load_lab(model), missing, say, progress_for)
    return write_combined(job.out, pair_folders(job), report, job.settings.min_arcs)


def score_model(job: Job, model: str, lab: Lab, treebanks: list[Path], say: Callable[[str], None],
                progress_for: Callable[[str], Callable[[int, int], None] | None]) -> None:
    """One checkpoint's missing treebanks, each pair written as it completes; the tables name each
    treebank as the whole job does (``treebank_labels`` over all of its treebanks)."""
    labels = treebank_labels(distinct([*job.treebanks, *treebanks]))
    bars = [progress_for(f"{slug(model)} x {labels[treebank]}") for treebank in treebanks]
    if job.engine == "ray":
        done = score_on_ray(job, lab, [job.sentences(treebank) for treebank in treebanks],
                            lambda t, n, total: bars[t] and bars[t](n, total))
    else:
        done = ((t, *score(job, lab, job.sentences(treebank), bars[t]))
                for t, treebank in enumerate(treebanks))
    with closing(done):  # a failed write ends the Ray job too, instead of leaving it running
        for t, scores, null in done:
            label = labels[treebanks[t]]
            longer = ", or raise --max-length" if scores.sentences_skipped else ""
            check_scored(scores, lab, job.max_length, where=f"{model} x {label}: ",
                         hint=f" (leave this treebank out{longer}; the pairs done so far are kept)")
            write_pair(pair_folder(job.out, model, treebanks[t]), summarise(scores, null, job.settings), treebanks[t],
                       label)
            say(f"{model} x {label}: {skip_note(scores)}")


def write_combined(out: Path, folders: Sequence[Path], report: Report | None = None,
                   min_arcs: int = 0) -> dict[str, Path]:
    """The job's tables from its pairs' folders (and the report, if asked), all renamed into place
    together; best_heads.csv stays one row per relation and measure (``run.best_heads_long``)."""
    tidy = pd.concat([pd.read_csv(f / "scores.csv") for f in folders], ignore_index=True)
    long = pd.concat([pd.read_csv(f / "best_heads.csv") for f in folders], ignore_index=True)
    best = best_heads_wide(long)
    agree = agreement(best, min_arcs)
    contents = with_parquet({
        "scores": ("scores.csv", tidy.to_csv(index=False, float_format="%.6f")),
        "best_heads": ("best_heads.csv", long.to_csv(index=False, float_format="%.6f")),
        "agreement": ("agreement.csv", agree.to_csv(index=False, float_format="%.6f")),
    }, {"scores_parquet": ("scores.parquet", tidy)})
    if report is not None:
        contents["report"] = ("report.html", report(tidy, best, agree))
    return write_atomically(out, contents)
