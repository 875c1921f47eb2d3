"""How many bits a layer's word vectors need to send a treebank's dependency relations (MDL probing, Voita & Titov
2020; ``syntax/mdl.py``), beside the same classifier on control labels and on the random-weight model: the one way the
command line and the benchmark ask for it. Test splits are refused for training, as everywhere.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engines import LOCAL, Engine
from ..lab import Lab, null_model
from ..syntax.mdl import Codelength, CodeSettings, code_vectors, codelengths_of
from ..syntax.structure import refuse_test_split
from ..treebank import Sentence, read_conllu

BASELINES = ("control", "random weights")


@dataclass(frozen=True)
class DescriptionLengthRequest:
    train: Path | Sequence[Sentence]
    dev: Path | Sequence[Sentence]
    layers: tuple[int, ...] | None = None  # None: every layer, 0 = embeddings
    baselines: tuple[str, ...] = BASELINES
    max_train_sentences: int | None = None
    max_dev_sentences: int | None = None
    seed: int = 0
    engine: Engine = LOCAL  # where the word vectors are extracted (local or Ray): the same vectors either way

    def __post_init__(self) -> None:
        unknown = [b for b in self.baselines if b not in BASELINES]
        if unknown:
            raise ValueError(f"unknown baseline {', '.join(unknown)}: choose from {', '.join(BASELINES)}")
        for given, flag in ((self.train, "--train"), (self.dev, "--dev")):
            if isinstance(given, (str, Path)):
                refuse_test_split(Path(given), flag)


@dataclass
class DescriptionLength:
    checkpoint: str
    rows: dict[str, list[Codelength]] = field(default_factory=dict)  # "relations", "control", "random weights"

    def to_json(self) -> dict[str, Any]:
        return {"method": "online codelength (Voita & Titov 2020), bits as the paper's formula counts them",
                "model": self.checkpoint, "codelength": {k: [c.to_json() for c in v] for k, v in self.rows.items()}}


def sentences(given: Path | Sequence[Sentence], limit: int | None) -> list[Sentence]:
    return (read_conllu(given) if isinstance(given, (str, Path)) else list(given))[:limit]


def description_length(request: DescriptionLengthRequest, lab: Lab,
                       progress: Callable[[str], None] | None = None) -> DescriptionLength:
    train = sentences(request.train, request.max_train_sentences)
    dev = sentences(request.dev, request.max_dev_sentences)
    out = DescriptionLength(lab.checkpoint_info().describe())
    runs = [("relations", "model", "relations")] + [("control", "model", "control")] * ("control" in request.baselines) + \
        [("random weights", "null", "relations")] * ("random weights" in request.baselines)
    models = {"model": lab, "null": null_model(lab, request.seed)}
    vectors: dict[str, Any] = {}  # each model's word vectors, extracted once for every labelling coded from them
    for name, model, labels in runs:
        if model not in vectors:
            vectors[model] = code_vectors(models[model], train, dev, request.seed, request.engine)
        out.rows[name] = codelengths_of(vectors[model], CodeSettings(labels, request.layers, request.seed), progress)
    return out
