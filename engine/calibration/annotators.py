"""Several people on the same items: Krippendorff's alpha, pairwise kappa, the majority.

alpha = 1 - D_o / D_e over the coincidence matrix (Krippendorff 2011, "Computing
Krippendorff's Alpha-Reliability"); the value comes from the ``krippendorff`` package,
which allows missing labels and any number of annotators. Its interval resamples items
(a unit keeps all its labels) with the seeded bootstrap: each item's share of the
coincidence matrix is computed once, so a resample is one matrix product.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.calibration.deps import krippendorff, scipy_stats
from engine.calibration.intervals import Bootstrap, Figure
from engine.calibration.table import FloatArray

#: The label's type -> krippendorff's level of measurement.
LEVEL = {"bool": "nominal", "category": "nominal", "ordinal": "ordinal", "float": "interval"}


def majority(values: Sequence[Any]) -> tuple[Any, float] | None:
    """The most frequent value and its share; None on a tie for first place."""
    if not values:
        return None
    ranked = Counter(values).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0], ranked[0][1] / len(values)


def _coincidences(units: Sequence[Mapping[str, int]], v: int) -> FloatArray:
    """Each pairable unit's coincidence matrix, ``(units, v, v)``."""
    out = np.zeros((len(units), v, v))
    for i, unit in enumerate(units):
        counts = np.bincount(list(unit.values()), minlength=v).astype(np.float64)
        m = counts.sum()
        if m < 2:
            continue
        out[i] = (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return out


def _distance(totals: FloatArray, values: FloatArray, level: str) -> FloatArray:
    """Krippendorff's squared distances, ``(..., v, v)``, from the value totals ``(..., v)``."""
    v = values.shape[0]
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(v), (*totals.shape[:-1], v, v))
    if level == "interval":
        d = (values[:, None] - values[None, :]) ** 2
        return np.broadcast_to(d, (*totals.shape[:-1], v, v))
    # ordinal: (sum of totals from c to k - (n_c + n_k) / 2)^2, values in rank order
    cum = np.cumsum(totals, axis=-1)
    i, j = np.indices((v, v))
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    between = cum[..., hi] - cum[..., lo] + totals[..., lo]
    return (between - (totals[..., i] + totals[..., j]) / 2) ** 2


def _alpha(o: FloatArray, values: FloatArray, level: str) -> FloatArray:
    totals = o.sum(axis=-1)
    n = totals.sum(axis=-1)
    d = _distance(totals, values, level)
    observed = (o * d).sum(axis=(-2, -1))
    expected = (totals[..., :, None] * totals[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def krippendorff_alpha(
    units: Sequence[Mapping[str, Any]],
    values: Sequence[Any],
    label_type: str,
    spec: Bootstrap,
) -> Figure:
    """alpha over ``units`` (one ``{annotator: value}`` per item), with a bootstrap interval.

    ``values`` are the label's possible values in order (for ordinal, the scale's order;
    for float, numbers).
    """
    level = LEVEL[label_type]
    index = {value: i for i, value in enumerate(values)}
    coded = [{a: index[v] for a, v in unit.items()} for unit in units]
    annotators = sorted({a for unit in units for a in unit})
    reliability = np.full((len(annotators), len(units)), np.nan)
    for col, unit in enumerate(coded):
        for a, v in unit.items():
            reliability[annotators.index(a), col] = v
    numeric = np.asarray(
        [float(v) for v in values] if level == "interval" else range(len(values)), float
    )
    if len(annotators) < 2 or len(units) < 2:
        return Figure.of(None)
    if level == "interval":
        data = np.where(
            np.isnan(reliability), np.nan, numeric[np.nan_to_num(reliability).astype(int)]
        )
        domain = numeric
    else:
        data, domain = reliability, np.arange(len(values), dtype=float)
    try:
        value = krippendorff().alpha(
            reliability_data=data, level_of_measurement=level, value_domain=domain
        )
    except ValueError:  # one value in all the data: no variation to agree about
        return Figure.of(None)
    contrib = _coincidences(coded, len(values)).reshape(len(units), -1)
    v = len(values)

    def statistic(idx: FloatArray, axis: int = -1) -> FloatArray:
        idx = np.moveaxis(np.asarray(idx, dtype=np.int64), axis, -1)
        lead = idx.shape[:-1]
        m = int(np.prod(lead)) if lead else 1
        flat = idx.reshape(m, -1) + (np.arange(m) * len(units))[:, None]
        w = np.bincount(flat.ravel(), minlength=m * len(units)).reshape(m, len(units))
        o = (w @ contrib).reshape(*lead, v, v)
        return _alpha(o, numeric, level)

    method = "BCa" if len(units) <= 2000 else "percentile"
    kwargs: dict[str, Any] = dict(
        vectorized=True,
        n_resamples=spec.n_resamples,
        batch=spec.batch,
        confidence_level=spec.confidence,
    )
    stats = scipy_stats()
    items = np.arange(len(units))
    res = stats.bootstrap(
        (items,), statistic, method=method, rng=np.random.default_rng(spec.seed), **kwargs
    )
    lo, hi = res.confidence_interval.low, res.confidence_interval.high
    if not (np.isfinite(lo) and np.isfinite(hi)):
        res = stats.bootstrap(
            (items,), statistic, method="percentile", rng=np.random.default_rng(spec.seed), **kwargs
        )
        lo, hi = res.confidence_interval.low, res.confidence_interval.high
    return Figure.of(value, lo, hi)
