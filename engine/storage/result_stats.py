"""A check's aggregates and score histogram from its results as columns (pure).

What the database computed over ``row_results`` in SQL, now over
:class:`~engine.storage.result_blocks.ResultArrays` with numpy, to the same figures: the
ok results with a score are the ones scored; the mean splits at
:data:`~engine.storage.moments.LARGE` as :func:`~engine.storage.moments.mean` does (and
sums exactly, as it does); the median is the middle score or the midpoint of the two; a
histogram's bins are those the SQL bucketed into, by the same float arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from engine.storage import moments
from engine.storage.records import ScoreStats
from engine.storage.result_blocks import KIND_BOOL, ResultArrays

__all__ = ["score_histogram", "score_stats", "scored"]


def scored(arrays: ResultArrays) -> NDArray[np.bool_]:
    """Which results count as scored: status ``ok`` and a score."""
    ok = arrays.code("ok")
    if ok is None:
        return np.zeros(len(arrays), np.bool_)
    found: NDArray[np.bool_] = (arrays.status == ok) & ~np.isnan(arrays.score)
    return found


def score_stats(arrays: ResultArrays) -> ScoreStats:
    """Counts by status and the aggregates of the scored results."""
    tally = np.bincount(arrays.status, minlength=len(arrays.statuses))
    counts = {
        name: int(tally[code]) for code, name in sorted(enumerate(arrays.statuses), key=_name)
    }
    counts = {name: n for name, n in counts.items() if n}
    ok = scored(arrays)
    scores = arrays.score[ok]
    n = len(scores)
    flagged = passes = 0
    for k, extra in arrays.extras.items():
        flag = extra.get("passed")
        if flag is not None and ok[k]:
            flagged += 1
            passes += flag is True
    p50: float | None = None
    if n:
        half = (n - 1) // 2
        if n % 2:
            p50 = float(np.partition(scores, half)[half])
        else:
            middle = np.partition(scores, (half, half + 1))
            p50 = moments.midpoint(float(middle[half]), float(middle[half + 1]))
    return ScoreStats(
        counts=counts,
        ok_count=n,
        mean=_mean(scores),
        min=float(scores.min()) if n else None,
        max=float(scores.max()) if n else None,
        p50=p50,
        bool_scores=int(np.count_nonzero(arrays.kind[ok] == KIND_BOOL)),
        flagged=flagged,
        passes=passes,
    )


def _name(item: tuple[int, str]) -> str:
    return item[1]


#: Whole numbers below this magnitude are floats exactly, and so is every sum of them there.
_EXACT = 2.0**53


def _mean(scores: NDArray[np.float64]) -> float | None:
    """:func:`moments.mean` of the scores, summed exactly without a Python float a score
    passing through a generator."""
    if not len(scores):
        return None
    magnitude = np.abs(scores)
    whole = float(magnitude.max()) < _EXACT and float(magnitude.sum()) < _EXACT
    if whole and bool(np.all(scores == np.trunc(scores))):
        # whole numbers (a bool or int check's) whose magnitudes sum below 2**53: every
        # partial sum is a whole number a float holds exactly, so numpy's sum is fsum's
        return moments.combine(float(scores.sum()) / len(scores), 0.0)
    large = magnitude >= moments.LARGE
    small = math.fsum(scores[~large].tolist())
    scaled = math.fsum((scores[large] * moments.SCALE).tolist())
    return moments.combine(small / len(scores), scaled / len(scores))


def score_histogram(arrays: ResultArrays, bins: int = 20) -> list[tuple[float, int]]:
    """``(lower edge, count)`` of the scored results in ``bins`` equal bins (none: ``[]``;
    one value: one bin holding them all)."""
    scores = arrays.score[scored(arrays)]
    if not len(scores):
        return []
    low, high = float(scores.min()), float(scores.max())
    if high == low:
        return [(low, len(scores))]
    width = (high - low) / bins
    if math.isfinite(width):
        scaled = (scores - low) / width
    else:  # scores past half the largest float, both signs
        width = high / bins - low / bins
        scaled = scores / width - low / width
    bucket = np.minimum(np.floor(scaled), bins - 1).astype(np.int64)
    counts = np.bincount(bucket, minlength=bins).tolist()
    if math.isfinite(high - low):
        return [(low + i * width, counts[i]) for i in range(bins)]
    return [(low * (1 - i / bins) + high * (i / bins), counts[i]) for i in range(bins)]
