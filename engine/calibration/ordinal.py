"""A scored check against ordinal (or float) labels: rank correlations and mean error.

All from ``(..., k, u)`` tables (rows the human levels in order, columns the check's
distinct values in order), so ties are handled the textbook way: midranks for Spearman's
rho (Pearson's r on midranks, as ``scipy.stats.spearmanr``) and tau-b for Kendall's tau
(Kendall 1945: (P - Q) / sqrt((n0 - n1)(n0 - n2)), as ``scipy.stats.kendalltau``), the
right one on Likert data full of ties.
"""

from __future__ import annotations

import numpy as np

from engine.calibration.table import FloatArray


def _midranks(margin: FloatArray) -> FloatArray:
    return np.cumsum(margin, axis=-1) - margin + (margin + 1.0) / 2.0


def spearman(tables: FloatArray) -> FloatArray:
    """Spearman's rho of ``(..., k, u)`` tables; NaN when either side has one value only."""
    t = np.asarray(tables, dtype=np.float64)
    n = t.sum(axis=(-2, -1))
    rows, cols = t.sum(axis=-1), t.sum(axis=-2)
    mid = ((n + 1.0) / 2.0)[..., None]
    r = _midranks(rows) - mid
    s = _midranks(cols) - mid
    cov = np.einsum("...i,...ij,...j->...", r, t, s)
    var_r = (rows * r * r).sum(axis=-1)
    var_s = (cols * s * s).sum(axis=-1)
    den = np.sqrt(var_r * var_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, cov / np.where(den > 0, den, 1), np.nan)


def _shift(a: FloatArray, di: int, dj: int) -> FloatArray:
    """``a[i + di, j + dj]`` with zeros outside the table."""
    out = np.zeros_like(a)
    k, u = a.shape[-2:]
    src_i = slice(max(di, 0), k + min(di, 0))
    dst_i = slice(max(-di, 0), k - max(di, 0))
    src_j = slice(max(dj, 0), u + min(dj, 0))
    dst_j = slice(max(-dj, 0), u - max(dj, 0))
    out[..., dst_i, dst_j] = a[..., src_i, src_j]
    return out


def kendall_tau_b(tables: FloatArray) -> FloatArray:
    """Kendall's tau-b of ``(..., k, u)`` tables; NaN when either side has one value only."""
    t = np.asarray(tables, dtype=np.float64)
    n = t.sum(axis=(-2, -1))
    # at_least[i, j]: items at rows >= i and columns >= j; up_to_j[i, j]: rows >= i, cols <= j
    at_least = np.flip(np.flip(t, (-2, -1)).cumsum(axis=-2).cumsum(axis=-1), (-2, -1))
    up_to_j = np.flip(np.flip(t, -2).cumsum(axis=-2), -2).cumsum(axis=-1)
    concordant = (t * _shift(at_least, 1, 1)).sum(axis=(-2, -1))
    discordant = (t * _shift(up_to_j, 1, -1)).sum(axis=(-2, -1))
    rows, cols = t.sum(axis=-1), t.sum(axis=-2)
    n0 = n * (n - 1) / 2
    n1 = (rows * (rows - 1) / 2).sum(axis=-1)
    n2 = (cols * (cols - 1) / 2).sum(axis=-1)
    den = np.sqrt((n0 - n1) * (n0 - n2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (concordant - discordant) / np.where(den > 0, den, 1), np.nan)


def mean_absolute_error(tables: FloatArray, human: FloatArray, check: FloatArray) -> FloatArray:
    """Mean |human - check| of ``(..., k, u)`` tables, given the rows' and columns' values."""
    t = np.asarray(tables, dtype=np.float64)
    distance = np.abs(np.asarray(human, float)[:, None] - np.asarray(check, float)[None, :])
    n = t.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, (t * distance).sum(axis=(-2, -1)) / np.where(n > 0, n, 1), np.nan)
