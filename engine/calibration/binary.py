"""A pass/fail check against pass/fail labels: the confusion and what is read from it.

Tables are ``(..., 2, 2)``: rows the human label (fail, pass), columns the check's
outcome (fail, pass); pass is the positive class. TPR = TP / (TP + FN) is how many of
the items people pass the check passes; TNR = TN / (TN + FP) how many they fail it fails.
"""

from __future__ import annotations

import numpy as np

from engine.calibration.kappa import cohen_kappa
from engine.calibration.table import FloatArray


def _cells(tables: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``tn, fp, fn, tp`` of ``(..., 2, 2)`` tables."""
    t = np.asarray(tables, dtype=np.float64)
    return t[..., 0, 0], t[..., 0, 1], t[..., 1, 0], t[..., 1, 1]


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def tpr(tables: FloatArray) -> FloatArray:
    """Sensitivity: of the items people pass, the share the check passes."""
    _, _, fn, tp = _cells(tables)
    return _ratio(tp, tp + fn)


def tnr(tables: FloatArray) -> FloatArray:
    """Specificity: of the items people fail, the share the check fails."""
    tn, fp, _, _ = _cells(tables)
    return _ratio(tn, tn + fp)


def accuracy(tables: FloatArray) -> FloatArray:
    """Share of items where check and people agree (any square table)."""
    t = np.asarray(tables, dtype=np.float64)
    return _ratio(np.trace(t, axis1=-2, axis2=-1), t.sum(axis=(-2, -1)))


def f1(tables: FloatArray) -> FloatArray:
    """F1 of the pass class: 2TP / (2TP + FP + FN)."""
    _, fp, fn, tp = _cells(tables)
    return _ratio(2 * tp, 2 * tp + fp + fn)


def mcc(tables: FloatArray) -> FloatArray:
    """Matthews' correlation: (TP.TN - FP.FN) / sqrt of the four margins' product."""
    tn, fp, fn, tp = _cells(tables)
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return _ratio(tp * tn - fp * fn, den)


def binary_statistics(tables: FloatArray) -> FloatArray:
    """accuracy, f1, mcc, kappa of ``(..., 2, 2)`` tables, stacked on a first axis of 4."""
    return np.stack([accuracy(tables), f1(tables), mcc(tables), cohen_kappa(tables)])


BINARY_NAMES = ("accuracy", "f1", "mcc", "kappa")
