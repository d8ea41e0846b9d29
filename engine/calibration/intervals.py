"""Confidence intervals: Wilson for proportions, a seeded BCa bootstrap for the rest.

Every figure of a report is ``{"value", "ci": [lo, hi]}`` (:class:`Figure`).

The bootstrap resamples labelled pairs with ``scipy.stats.bootstrap`` (seeded, so a
report's ``seed`` reproduces it exactly). The data it resamples are the pairs' cell codes
in the (human x check) table, so every resample is a table built with one ``bincount``
and every statistic is computed on thousands of tables at once. The BCa correction
(Efron & Tibshirani 1993, 14.3 and 15.4; the formulas of scipy's own ``_bca_interval``)
is applied here rather than by scipy because its jackknife only needs one leave-one-out
table per distinct cell, where scipy's makes one per row: n = 10,000 pairs cost 4
jackknife tables instead of 10,000 resamples. A test holds the two equal on small data.
Where BCa is undefined (a degenerate statistic, such as every resample equal) the
interval falls back to the percentile one, and the report lists which figures did.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.calibration.deps import scipy_stats
from engine.calibration.table import FloatArray, PairTable, counts_from_codes

#: Statistics of ``(..., k, u)`` tables, stacked on a first axis: ``(s, ...)``.
TableStatistic = Callable[[FloatArray], FloatArray]

#: Above this many jackknife cells (distinct cells x table size) BCa is too slow: percentile.
MAX_JACKKNIFE_CELLS = 20_000_000


def _clean(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if np.isnan(x) else x


@dataclass(frozen=True)
class Figure:
    """A statistic and its confidence interval (None where undefined)."""

    value: float | None
    ci: tuple[float | None, float | None]

    @classmethod
    def of(cls, value: Any, lo: Any = None, hi: Any = None) -> Figure:
        """A figure with NaN turned into None."""
        return cls(_clean(value), (_clean(lo), _clean(hi)))

    def as_json(self, digits: int = 6) -> dict[str, Any]:
        """``{"value", "ci": [lo, hi]}``, rounded."""

        def r(x: float | None) -> float | None:
            return None if x is None else round(x, digits)

        return {"value": r(self.value), "ci": [r(self.ci[0]), r(self.ci[1])]}


def wilson(successes: int, trials: int, confidence: float = 0.95) -> Figure:
    """The proportion ``successes / trials`` with its Wilson score interval."""
    if trials <= 0:
        return Figure.of(None)
    ci = (
        scipy_stats()
        .binomtest(int(successes), int(trials))
        .proportion_ci(confidence_level=confidence, method="wilson")
    )
    return Figure.of(successes / trials, ci.low, ci.high)


@dataclass(frozen=True)
class Bootstrap:
    """How intervals are resampled: the seed makes a report reproducible."""

    seed: int = 0
    n_resamples: int = 2000
    confidence: float = 0.95
    #: Resamples per vectorised call (memory: batch x n cell codes).
    batch: int = 250


@dataclass(frozen=True)
class BootstrapResult:
    """The figures of one resampled statistic vector; ``fallback`` indexes percentile ones."""

    figures: list[Figure]
    fallback: list[int]


def _bca_bounds(
    theta: FloatArray,
    dist: FloatArray,
    jack: FloatArray,
    weights: FloatArray,
    alpha: float,
) -> tuple[FloatArray, FloatArray]:
    """BCa's adjusted percentiles (``(s,)`` each) from a jackknife grouped by cell."""
    stats = scipy_stats()
    b = dist.shape[-1]
    below = (dist < theta[:, None]).sum(axis=-1) + (dist <= theta[:, None]).sum(axis=-1)
    z0 = stats.norm.ppf(below / (2 * b))
    n = weights.sum()
    mean = (jack * weights).sum(axis=-1, keepdims=True) / n
    u = (n - 1) * (mean - jack)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = ((weights * u**3).sum(axis=-1) / n**3) / (
            6 * ((weights * u**2).sum(axis=-1) / n**2) ** 1.5
        )
    z_alpha = float(stats.norm.ppf(alpha))
    num1 = z0 + z_alpha
    num2 = z0 - z_alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        a1 = stats.norm.cdf(z0 + num1 / (1 - a * num1))
        a2 = stats.norm.cdf(z0 + num2 / (1 - a * num2))
    return np.asarray(a1, dtype=np.float64), np.asarray(a2, dtype=np.float64)


def bootstrap_table(
    table: PairTable, statistic: TableStatistic, spec: Bootstrap
) -> BootstrapResult:
    """Values and BCa intervals of ``statistic`` (a vector of s statistics) on ``table``."""
    stats = scipy_stats()
    shape = table.shape
    codes = table.codes()
    theta = np.atleast_1d(statistic(table.counts()))
    s = theta.shape[0]
    if table.n < 2:
        return BootstrapResult([Figure.of(v) for v in theta], list(range(s)))

    def on_codes(sample: FloatArray, axis: int = -1) -> FloatArray:
        sample = np.moveaxis(np.asarray(sample), axis, -1)
        return np.atleast_1d(statistic(counts_from_codes(sample, shape)))

    # each code is one (human, check) pair, so resampling codes keeps the pairs together
    with warnings.catch_warnings():
        # a statistic undefined in some resamples (NaN) is handled below, figure by figure
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            (codes,),
            on_codes,
            vectorized=True,
            n_resamples=spec.n_resamples,
            batch=spec.batch,
            method="percentile",
            confidence_level=spec.confidence,
            rng=np.random.default_rng(spec.seed),
        )
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64).reshape(s, -1)
    alpha = (1 - spec.confidence) / 2

    cells, counts = np.unique(codes, return_counts=True)
    if cells.size * shape[0] * shape[1] <= MAX_JACKKNIFE_CELLS:
        base = table.counts()
        jack_tables = np.repeat(base[None], cells.size, axis=0)
        rows, cols = np.divmod(cells, shape[1])
        jack_tables[np.arange(cells.size), rows, cols] -= 1
        jack = np.atleast_2d(statistic(jack_tables)).reshape(s, -1)
        lo_q, hi_q = _bca_bounds(theta, dist, jack, counts.astype(np.float64), alpha)
    else:
        lo_q = hi_q = np.full(s, np.nan)

    figures: list[Figure] = []
    fallback: list[int] = []
    for i in range(s):
        row = dist[i]
        bca_ok = np.isfinite(lo_q[i]) and np.isfinite(hi_q[i]) and not np.isnan(row).any()
        if bca_ok and np.isfinite(theta[i]):
            lo, hi = np.quantile(row, [lo_q[i], hi_q[i]])
        else:
            fallback.append(i)
            finite = row[np.isfinite(row)]
            if finite.size == 0 or not np.isfinite(theta[i]):
                figures.append(Figure.of(theta[i]))
                continue
            lo, hi = np.quantile(finite, [alpha, 1 - alpha])
        figures.append(Figure.of(theta[i], lo, hi))
    return BootstrapResult(figures, fallback)
