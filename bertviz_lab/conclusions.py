"""Sentences a tool prints as conclusions, generated from a paired difference and its interval,
never written by hand: "A differs from B" only when the 95% interval of A - B excludes 0."""
from __future__ import annotations

import math


def standing(low: float, high: float) -> str:
    """One word for a table cell: "above", "below", "indistinguishable" (the interval of a - b
    includes 0) or "no interval"."""
    if any(math.isnan(v) for v in (low, high)):
        return "no interval"
    return "above" if low > 0 else "below" if high < 0 else "indistinguishable"


def verdict(low: float, high: float, a: str, b: str) -> str:
    """The conclusion the interval [low, high] of the paired difference ``a - b`` supports."""
    if any(math.isnan(v) for v in (low, high)):
        return f"{a} vs {b}: no interval (too few sentences to compare)"
    if low > 0:
        return f"{a} is above {b}: the 95% interval of the difference [{low:.3f}, {high:.3f}] excludes 0"
    if high < 0:
        return f"{a} is below {b}: the 95% interval of the difference [{low:.3f}, {high:.3f}] excludes 0"
    return f"{a} and {b} are indistinguishable: the 95% interval of the difference [{low:.3f}, {high:.3f}] includes 0"
