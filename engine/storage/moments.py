"""A mean and a median of float scores that cannot overflow (pure).

A check may score 1.7e308: two of those summed are past the largest float, which made
``statistics.fmean`` raise and PostgreSQL's ``AVG`` fail, and the median's ``(a + b) / 2``
infinite (which JSON cannot carry). Scores are split at :data:`LARGE`: the small ones are
averaged as they are, the large ones scaled down by an exact power of two first, and the
two means added. Scaling by a power of two changes no digit, so scores below
:data:`LARGE` (all that real checks give) get exactly the mean they always had, and a
stored run's figures (:mod:`engine.storage.result_stats`, over its result blocks) and the
in-memory summary split the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Scores at or past this magnitude are summed scaled down by :data:`SCALE`.
LARGE = 2.0**900
#: 2**-64: up to 2**64 scores of the largest float sum without overflow once scaled.
SCALE = 2.0**-64


def mean(values: Sequence[float]) -> float | None:
    """The mean of ``values`` (None for none), for any finite floats without overflow."""
    if not values:
        return None
    small = math.fsum(v for v in values if abs(v) < LARGE)
    large = math.fsum(v * SCALE for v in values if abs(v) >= LARGE)
    return combine(small / len(values), large / len(values))


def combine(small_mean: float, scaled_large_mean: float) -> float:
    """The mean from its two parts (as the database returns them)."""
    return small_mean + scaled_large_mean / SCALE


def midpoint(low: float, high: float) -> float:
    """``(low + high) / 2`` without overflow: the median of an even number of scores."""
    middle = (low + high) / 2
    return middle if math.isfinite(middle) else low / 2 + high / 2


def median(values: Sequence[float]) -> float | None:
    """The median of ``values`` (None for none), as ``statistics.median`` but never infinite."""
    if not values:
        return None
    ordered = sorted(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[half]
    return midpoint(ordered[half - 1], ordered[half])
