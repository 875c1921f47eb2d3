"""Structural probes per layer (Hewitt & Manning 2019) beside attention trees and head ensembles (Limisiewicz et al.
2020), on the same held-out sentences: the one way the command line, the Syntax tab and the notebook ask for it.

Where the probes come from is decided here once: probes trained earlier for these weights (``probes``), probes
trained now on a train split (``train``), or the probes bertviz-lab ships for the published weights; never a test
split to train or stop on.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..lab import InputError, Lab
from ..syntax.ensembles import relations_of
from ..syntax.structure import (
    StructureResult,
    StructureSettings,
    StructureTreebanks,
    load_probes,
    refuse_test_split,
    run_structure,
    shipped_probes,
    shipped_probes_file,
    structure_record,
)
from ..treebank import Sentence
from .treebanks import read_treebank

Treebank = Path | Sequence[Sentence]  # a CoNLL-U file, or sentences already read


@dataclass(frozen=True)
class StructureRequest:
    """What to evaluate (``treebank``), where the probes come from (``train`` xor ``probes``; neither: the shipped
    ones), and how. ``max_words`` is the door's cap on the evaluated treebank (None: none)."""

    treebank: Treebank
    train: Treebank | None = None
    probes: Path | None = None
    stop: Treebank | None = None
    settings: StructureSettings = field(default_factory=StructureSettings)
    min_arcs: int = 50  # relations with this many arcs get a head ensemble
    max_sentences: int | None = None
    max_train_sentences: int | None = None
    max_words: int | None = None
    names: tuple[str, str] = ("", "")  # (train, evaluated) as shown; empty: the files' names

    def __post_init__(self) -> None:
        if self.train is not None and self.probes is not None:
            raise InputError("give --train (a train split to train probes on) or --probes (probes trained earlier), "
                             "not both")
        for given, flag in ((self.train, "--train"), (self.stop, "--stop")):
            if isinstance(given, (str, Path)):
                refuse_test_split(Path(given), flag)


def sentences_of(treebank: Treebank | None, max_words: int | None = None) -> list[Sentence]:
    if treebank is None:
        return []
    return read_treebank(Path(treebank), max_words) if isinstance(treebank, (str, Path)) else list(treebank)


def name_of(treebank: Treebank | None, fallback: str) -> str:
    return Path(treebank).name if isinstance(treebank, (str, Path)) else fallback


def treebanks_of(request: StructureRequest) -> StructureTreebanks:
    """The request's sentences, each file read once."""
    evaluate = sentences_of(request.treebank, request.max_words)[:request.max_sentences]
    train = sentences_of(request.train)[:request.max_train_sentences]
    names = (request.names[0] or (name_of(request.train, "train") if request.train is not None else ""),
             request.names[1] or name_of(request.treebank, "treebank"))
    return StructureTreebanks(evaluate, train, sentences_of(request.stop) if request.stop is not None else None, names)


def probes_for(request: StructureRequest, lab: Lab):
    """(probes to use, or None to train them; where they came from)."""
    if request.probes is not None:
        return load_probes(request.probes, lab), str(request.probes)
    if request.train is not None:
        return None, f"trained on {name_of(request.train, 'the train sentences')}"
    shipped = shipped_probes(lab)
    if shipped is None:
        raise InputError(f"bertviz-lab ships structural probes only for minilm-original, not for {lab.name}: train "
                         "them on a train split (`bertviz-lab structural-probe --train en_ewt-ud-train.conllu "
                         "--treebank FILE --out DIR`, or --train CONLLU) or give probes trained earlier on these "
                         "weights (--probes FILE); probes are tied to the exact weights")
    return shipped, f"shipped: {shipped_probes_file(lab).name}"


@dataclass
class Structure:
    """A finished run: the result the figures draw, where its probes came from, the files the command line wrote."""

    result: StructureResult
    origin: str
    files: dict[str, Path] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return structure_record(self.result, self.files, self.origin)


def structure(request: StructureRequest, lab: Lab, treebanks: StructureTreebanks | None = None,
              progress: Callable[[str], None] | None = None, steps=None) -> Structure:
    """Run the request on ``lab`` (``treebanks``: ``treebanks_of(request)`` when the door read them first, e.g. to
    size its progress bar). ``progress`` is told each stage in words, ``steps(done, total)`` the sentence passes."""
    treebanks = treebanks or treebanks_of(request)
    trained, origin = probes_for(request, lab)
    result = run_structure(lab, treebanks, request.settings, trained=trained,
                           relations=relations_of(treebanks.evaluate, request.min_arcs), progress=progress,
                           steps=steps)
    return Structure(result, origin)
