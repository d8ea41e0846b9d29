"""A float-valued check against pass/fail labels: ROC, AUC, and a threshold to pass at.

Tables are ``(..., 2, u)``: rows the human label (fail, pass), columns the check's
distinct scores in increasing order. The check passes an item when its score is at least
the threshold. The threshold is chosen on a seeded, stratified dev split (Youden's J =
TPR + TNR - 1, the largest) and reported on the test split it never saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.calibration.table import FloatArray


def auc(tables: FloatArray) -> FloatArray:
    """Area under the ROC curve: P(a passed item outscores a failed one), ties count half."""
    t = np.asarray(tables, dtype=np.float64)
    neg, pos = t[..., 0, :], t[..., 1, :]
    below = np.cumsum(neg, axis=-1) - neg
    wins = (pos * (below + 0.5 * neg)).sum(axis=-1)
    den = neg.sum(axis=-1) * pos.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, wins / np.where(den > 0, den, 1), np.nan)


@dataclass(frozen=True)
class SweepPoint:
    """TPR and TNR when the check passes scores at or above ``threshold``."""

    threshold: float
    tpr: float
    tnr: float


def roc_sweep(table: FloatArray, scores: Sequence[float]) -> list[SweepPoint]:
    """One point per distinct score (a ``2 x u`` table and its column scores)."""
    t = np.asarray(table, dtype=np.float64)
    neg, pos = t[0], t[1]
    n_neg, n_pos = neg.sum(), pos.sum()
    passed_pos = np.cumsum(pos[::-1])[::-1]  # positives scoring >= column j
    failed_neg = np.cumsum(neg) - neg  # negatives scoring < column j
    tprs = passed_pos / n_pos if n_pos else np.full(len(scores), np.nan)
    tnrs = failed_neg / n_neg if n_neg else np.full(len(scores), np.nan)
    return [
        SweepPoint(float(s), float(a), float(b)) for s, a, b in zip(scores, tprs, tnrs, strict=True)
    ]


def best_threshold(points: Sequence[SweepPoint]) -> SweepPoint | None:
    """The point of largest Youden J (TPR + TNR - 1); the lowest threshold among equals."""
    usable = [p for p in points if not (np.isnan(p.tpr) or np.isnan(p.tnr))]
    if not usable:
        return None
    return max(usable, key=lambda p: (p.tpr + p.tnr, -p.threshold))


def split_dev(
    labels: npt.NDArray[np.bool_], seed: int, dev_fraction: float = 0.5
) -> npt.NDArray[np.bool_]:
    """A seeded split stratified by label: True for the items of the dev half."""
    rng = np.random.default_rng(seed)
    dev = np.zeros(labels.shape[0], dtype=bool)
    for cls in (False, True):
        idx = np.flatnonzero(labels == cls)
        chosen = rng.permutation(idx)[: round(dev_fraction * idx.size)]
        dev[chosen] = True
    return dev
