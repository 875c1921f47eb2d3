"""Trees read from the model with no probe (Perturbed Masking, Wu et al. 2020; ``syntax/perturbed_masking.py``):
UAS per layer with Eisner and MST decoding against a treebank's gold heads, beside their right-chain baseline and
the published bert-base figure (the same protocol on other weights), with conclusions from paired intervals.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engines import LOCAL, Engine
from ..lab import Lab
from ..syntax.perturbed_masking import DECODERS, PUBLISHED_UAS, PerturbedMaskingResult, perturbed_masking
from ..treebank import Sentence
from .treebanks import read_treebank
from .validation import whole


@dataclass(frozen=True)
class MaskingTreesRequest:
    treebank: Path | Sequence[Sentence]
    decoders: tuple[str, ...] = DECODERS
    gold_root: bool = True  # their default (--root gold)
    max_sentences: int | None = None
    max_words: int | None = None  # the door's cap on the treebank (None: none)
    resamples: int = 1000
    seed: int = 0
    engine: Engine = LOCAL  # where the sentences run (local or Ray): the same hits either way

    def __post_init__(self) -> None:
        unknown = [d for d in self.decoders if d not in DECODERS]
        if unknown or not self.decoders:
            raise ValueError(f"unknown decoder {', '.join(unknown) or '(none)'}: choose from {', '.join(DECODERS)}")
        whole(self.resamples, "resamples", 10, 100_000)


@dataclass
class MaskingTrees:
    result: PerturbedMaskingResult
    checkpoint: str
    treebank: str
    uas: dict[str, Any] = field(default_factory=dict)
    conclusions: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"method": "perturbed masking (Wu et al. 2020), as github.com/LividWo/Perturbed-Masking computes it",
                "model": self.checkpoint, "treebank": self.treebank, "uas": self.uas, "skipped": self.result.skipped,
                "published": PUBLISHED_UAS, "conclusions": self.conclusions}


def masking_trees(request: MaskingTreesRequest, lab: Lab,
                  progress: Callable[[int, int], None] | None = None) -> MaskingTrees:
    if isinstance(request.treebank, (str, Path)):
        sentences, name = read_treebank(Path(request.treebank), request.max_words), Path(request.treebank).name
    else:
        sentences, name = list(request.treebank), "the sentences given"
    sentences = sentences[:request.max_sentences]
    result = perturbed_masking(lab, sentences, request.decoders, request.gold_root, progress, request.engine)
    uas = result.uas(request.resamples, request.seed)
    last = lab.n_layers  # the published protocol reads the last layer
    conclusions = [result.against_chain(d, last, request.resamples, request.seed) for d in request.decoders]
    return MaskingTrees(result, lab.checkpoint_info().describe(), name, uas, conclusions)
