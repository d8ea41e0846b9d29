"""Cohen's kappa, unweighted and weighted, on square tables of counts (numpy only).

kappa = (p_o - p_e) / (1 - p_e); weighted kappa = 1 - sum(w * O) / sum(w * E), with
E = row totals x column totals / n and weights |i - j| / (k - 1) (linear) or
(i - j)^2 / (k - 1)^2 (quadratic). Unweighted kappa is the weighted one with 0/1 weights.
Every function takes ``(..., k, k)`` tables and returns ``(...)``: a bootstrap passes
thousands of tables at once.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from engine.calibration.table import FloatArray

Weights = Literal["linear", "quadratic"] | None


def weight_matrix(k: int, weights: Weights) -> FloatArray:
    """The disagreement weights of a ``k x k`` table (0 on the diagonal)."""
    i, j = np.indices((k, k))
    if weights is None:
        return np.asarray(i != j, dtype=np.float64)
    span = max(k - 1, 1)
    if weights == "linear":
        return np.asarray(np.abs(i - j) / span, dtype=np.float64)
    return np.asarray(((i - j) / span) ** 2, dtype=np.float64)


def cohen_kappa(tables: FloatArray, weights: Weights = None) -> FloatArray:
    """Cohen's kappa of ``(..., k, k)`` tables, rows one rater, columns the other.

    NaN where it is undefined: both raters put every item in the same single class
    (expected disagreement 0).
    """
    tables = np.asarray(tables, dtype=np.float64)
    k = tables.shape[-1]
    n = tables.sum(axis=(-2, -1))
    rows = tables.sum(axis=-1)
    cols = tables.sum(axis=-2)
    expected = rows[..., :, None] * cols[..., None, :] / np.where(n > 0, n, 1)[..., None, None]
    w = weight_matrix(k, weights)
    observed_d = (w * tables).sum(axis=(-2, -1))
    expected_d = (w * expected).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected_d > 0, 1.0 - observed_d / expected_d, np.nan)
