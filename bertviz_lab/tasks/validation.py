"""Numbers a request takes from a page, an API call or an agent, checked once: a whole number within its bounds,
or an InputError a person can act on."""
from __future__ import annotations

import math
from typing import Any

from ..lab import InputError


def whole(value: Any, name: str, low: int, high: int) -> int:
    """A whole number from the page or the API, or an InputError a person can act on."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number (got {value!r})") from None
    if not math.isfinite(number) or number != int(number) or not low <= number <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high} (got {value!r})")
    return int(number)


def positions(values: Any) -> list[int]:
    return [whole(v, "a token position", 0, 10_000) for v in (values or [])]
