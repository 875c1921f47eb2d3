"""Held-out figures against a target, judged by their 95% Wilson interval, not by the point estimate.

Why: "0.35 of 1,000 masked words" is not evidence that a head reaches a 0.35 target, and "0.34" is
not evidence that it misses it. A figure *reaches* its target only when the whole interval lies at or
above it, *misses* it only when the whole interval lies below, and is *undecided* otherwise. The
sentence a report prints is generated here from the counts, never written by hand.
"""
from __future__ import annotations

from dataclasses import dataclass

from .evaluate import wilson_interval


@dataclass(frozen=True)
class Target:
    """A figure a head should reach: at least ``at_least`` (a proportion) of some held-out count."""

    figure: str  # what is counted, as a reader says it ("held-out natural English top-1")
    key: str  # the key of its [hits, n] pair in a head's counts
    at_least: float


ISSUE_32_TARGETS = (
    Target("held-out natural English top-1", "natural_top1", 0.35),
    Target("held-out natural English top-5", "natural_top5", 0.55),
    Target("next-sentence accuracy on the held-out passages", "nsp", 0.88),
    Target("teaching set top-1", "teaching_top1", 0.50),
    Target("teaching set top-5", "teaching_top5", 0.80),
    Target("WordNet held-out top-1", "wordnet_top1", 0.38),
)


def verdict(hits: int, n: int, target: float) -> str:
    """'reached', 'missed' or 'undecided': where the 95% Wilson interval of hits / n lies against target."""
    low, high = wilson_interval(hits, n)
    if low >= target:
        return "reached"
    if high < target:
        return "missed"
    return "undecided"


def target_sentence(head: str, target: Target, hits: int, n: int) -> str:
    """One line: the figure, its interval, and what the interval says about the target."""
    low, high = wilson_interval(hits, n)
    judged = verdict(hits, n, target.at_least)
    said = {"reached": f"reaches the {target.at_least:.2f} target (the whole interval is at or above it)",
            "missed": f"misses the {target.at_least:.2f} target (the whole interval is below it)",
            "undecided": f"is undecided against the {target.at_least:.2f} target (the interval contains it)"}[judged]
    return f"{head}: {target.figure} {hits}/{n} = {hits / n:.3f} [95% CI {low:.3f}, {high:.3f}] {said}"
