"""Rogan-Gladen: a pass rate corrected for the check's measured TPR and TNR.

theta = (p + TNR - 1) / (TPR + TNR - 1), clipped to [0, 1] (Rogan & Gladen 1978,
Am. J. Epidemiol. 107(1):71-76). Its interval comes from the delta method over the
three independent binomial estimates: Var = [p(1-p)/N + theta^2 TPR(1-TPR)/n_pass +
(1-theta)^2 TNR(1-TNR)/n_fail] / J^2, J = TPR + TNR - 1. Undefined (None) when
J <= 0: a check no better than chance says nothing about the true rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.calibration.deps import scipy_stats


@dataclass(frozen=True)
class CorrectedRate:
    """A measured pass rate beside the corrected one and its interval."""

    measured: float
    value: float | None
    ci: tuple[float, float] | None


def rogan_gladen(
    pass_rate: float,
    n_scored: int,
    tpr: float,
    tnr: float,
    n_pass: int,
    n_fail: int,
    confidence: float = 0.95,
) -> CorrectedRate:
    """Correct ``pass_rate`` (over ``n_scored`` items) for the check's TPR and TNR.

    ``n_pass`` and ``n_fail`` are the human-pass and human-fail counts TPR and TNR were
    measured on.
    """
    j = tpr + tnr - 1.0
    if j <= 1e-9 or n_scored <= 0:
        return CorrectedRate(pass_rate, None, None)
    theta = min(1.0, max(0.0, (pass_rate + tnr - 1.0) / j))
    var = pass_rate * (1 - pass_rate) / n_scored
    if n_pass:
        var += theta**2 * tpr * (1 - tpr) / n_pass
    if n_fail:
        var += (1 - theta) ** 2 * tnr * (1 - tnr) / n_fail
    z = float(scipy_stats().norm.ppf(0.5 + confidence / 2))
    half = z * math.sqrt(var) / j
    return CorrectedRate(pass_rate, theta, (max(0.0, theta - half), min(1.0, theta + half)))
