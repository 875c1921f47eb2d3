"""Choosing which trained head ships, by a rule fixed before the runs it chooses between.

Why a rule at all: the training chain leaves a head at every validation point of every leg; picking
the one that looks best on the figures we then report (the teaching set, the held-out slices) would
make those figures optimistic. So the choice uses development data only, and the rule below was
written (and committed) before the chain's first leg ran.

Development data: the development cloze set ``assets/dev_cloze.tsv`` (written for this, separate
from the teaching set), and the corpus's validation split (``validation.txt`` and
``validation_docs.txt``, set aside from the training splits by ``build-corpus``), never the
held-out slices or the teaching set.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..lab import InputError, Lab
from ..resources import ASSETS
from .evaluate import evaluate
from .evaluate_nsp import evaluate_nsp
from .running_text import read_documents
from .teaching import evaluate_teaching, read_teaching_set

DEV_CLOZE = ASSETS / "dev_cloze.tsv"
WORDNET_SLACK = 0.02  # a candidate may lose at most this much WordNet validation top-1 against the shipped head
TIE = 0.001  # scores closer than this are a tie, which the candidate with fewer training steps wins

RULE = (
    "Candidates: the shipped head and the head at every validation point of every leg of the chain. "
    "Each gets three development figures: C = the development cloze set's (top-1 hits + top-5 hits) / "
    "(2 x sentences) (`assets/dev_cloze.tsv`, 65 sentences); M = masked-word top-1 on the validation "
    "running-text sentences (`validation_docs.txt`, `eval-mlm` protocol, seed 0); N = next-sentence accuracy "
    "on pairs of the validation documents (`eval-nsp` protocol, seed 0). A candidate is eligible if its WordNet "
    f"validation top-1 (the lines of `validation.txt` that are not running text) is at most {WORDNET_SLACK} below "
    "the shipped head's. The eligible candidate with the highest score (C + M + N) / 3 ships; scores within "
    f"{TIE} are a tie, won by the candidate with fewer training steps (the shipped head counts as none). "
    "The teaching set and the held-out slices are reported for the winner, never used to choose.")


@dataclass
class DevFigures:
    """The development figures of one candidate head."""

    name: str
    steps: int  # training steps beyond the shipped head (0 for the shipped head)
    cloze: float  # C
    running_top1: float  # M
    nsp: float  # N
    wordnet_top1: float

    @property
    def score(self) -> float:
        return (self.cloze + self.running_top1 + self.nsp) / 3


def validation_split(corpus: Path) -> tuple[list[str], list[list[str]]]:
    """(WordNet validation lines, validation documents of running text) of a built corpus."""
    documents = read_documents(Path(corpus) / "validation_docs.txt")
    running = {s for doc in documents for s in doc}
    lines = [ln.strip() for ln in (Path(corpus) / "validation.txt").read_text(encoding="utf-8").splitlines()]
    return [ln for ln in lines if ln and ln not in running], documents


def dev_figures(lab: Lab, corpus: Path, name: str, steps: int, cloze: Path = DEV_CLOZE) -> DevFigures:
    wordnet, documents = validation_split(corpus)
    teaching = evaluate_teaching(lab, read_teaching_set(cloze))
    running = [s for doc in documents for s in doc]
    return DevFigures(
        name=name, steps=steps, cloze=(teaching["top1_hits"] + teaching["top5_hits"]) / (2 * teaching["n"]),
        running_top1=evaluate(lab, running, seed=0, progress=False)["top1"],
        nsp=evaluate_nsp(lab, documents, seed=0, progress=False)["accuracy"],
        wordnet_top1=evaluate(lab, wordnet, seed=0, progress=False)["top1"])


def choose(shipped: DevFigures, candidates: list[DevFigures]) -> tuple[DevFigures, str]:
    """The candidate the rule picks, and the sentence that says why (generated from the figures)."""
    floor = shipped.wordnet_top1 - WORDNET_SLACK
    eligible = [shipped] + [c for c in candidates if c.wordnet_top1 >= floor]
    best = max(c.score for c in eligible)
    winner = min((c for c in eligible if c.score >= best - TIE), key=lambda c: c.steps)
    dropped = [c.name for c in candidates if c.wordnet_top1 < floor]
    why = (f"{winner.name} has the highest development score, {winner.score:.3f} (C {winner.cloze:.3f}, "
           f"M {winner.running_top1:.3f}, N {winner.nsp:.3f}), against {shipped.score:.3f} for the shipped head"
           if winner is not shipped else
           f"no candidate beats the shipped head's development score of {shipped.score:.3f} by more than {TIE}")
    if dropped:
        why += f"; not eligible (WordNet validation top-1 below {floor:.3f}): {', '.join(dropped)}"
    return winner, why + "."


def kept_heads(chain: Sequence[Path]) -> list[Path]:
    """Every head a chain kept at a validation point (``RUN/steps/step-N/head.safetensors``), by run and step."""
    found = (f for run in chain for f in (Path(run) / "steps").glob("step-*") if (f / "head.safetensors").is_file())
    folders = sorted(found, key=lambda f: (str(f.parent.parent), int(f.name.split("-")[1])))
    if not folders:
        raise InputError(f"no head kept at a validation point under {', '.join(str(r) for r in chain)} "
                         "(RUN/steps/step-N/head.safetensors)")
    return folders


def shown_name(folder: Path) -> str:
    """A head folder's name as a model card prints it: relative to here when it is below here."""
    where, here = Path(folder).resolve(), Path.cwd().resolve()
    return str(where.relative_to(here)) if where.is_relative_to(here) else str(folder)


def select_head(shipped: Path, chain: Sequence[Path], corpus: Path, load_head: Callable[[Path], Lab],
                publish: Path | None = None, device: str = "cpu") -> dict:
    """Apply the rule to the shipped head and every head the chain kept (``load_head`` loads a head
    folder on the encoder), and with ``publish`` act on the choice: a winning chain head becomes a
    self-contained folder, or the shipped head's card records the chain it was kept over."""
    from .model_card import chain_legs, publish_selected, record_kept

    folders = kept_heads(chain)
    base = dev_figures(load_head(shipped), corpus, shown_name(shipped), 0)
    candidates = [dev_figures(load_head(f), corpus, shown_name(f), int(f.name.split("-")[1])) for f in folders]
    winner, why = choose(base, candidates)
    rows = [{"head": c.name, "steps": c.steps, "cloze": round(c.cloze, 4), "running_top1": round(c.running_top1, 4),
             "nsp": round(c.nsp, 4), "wordnet_top1": round(c.wordnet_top1, 4), "score": round(c.score, 4)}
            for c in [base, *candidates]]
    selection = {"rule": RULE, "winner": winner.name, "why": why, "candidates": rows}
    if publish is not None and winner is not base:
        publish_selected(Path(winner.name), publish, corpus, selection, device=device)
        selection["published"] = str(publish)
    elif publish is not None:  # the shipped head stays: its card records the chain it was kept over
        last = {f.parent.parent: f for f in folders}  # each chain's last kept head (folders are sorted by step)
        legs = [leg for run in chain if Path(run) in last for leg in chain_legs(last[Path(run)])]
        selection["recorded_in"] = str(record_kept(shipped, selection, legs))
    return selection
