"""The agreement gate: ``--min-agreement helpful:kappa=0.6`` (or ``tpr=0.8,tnr=0.8``).

A check passes when the **lower** bound of each named figure's interval is at least its
minimum: a point estimate of 0.9 on 20 labels proves little. Below the minimum number of
labels per class the gate cannot judge, and says which labels are missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.calibration.report import TOO_FEW
from engine.errors import InvalidRequestError

#: Figures a gate may name; ``linear_kappa`` and ``quadratic_kappa`` are weighted kappa's.
GATE_FIGURES = (
    "kappa",
    "tpr",
    "tnr",
    "accuracy",
    "f1",
    "mcc",
    "auc",
    "spearman",
    "kendall_tau_b",
    "linear_kappa",
    "quadratic_kappa",
    "alpha",
)

PASSED = "passed"
BELOW = "below"


@dataclass(frozen=True)
class Requirement:
    """A label name and the smallest lower bound each figure may have."""

    labels: str
    minimums: tuple[tuple[str, float], ...]

    def __str__(self) -> str:
        return f"{self.labels}:" + ",".join(f"{k}={v:g}" for k, v in self.minimums)


def parse_requirement(text: str) -> Requirement:
    """``helpful:kappa=0.6`` or ``helpful:tpr=0.8,tnr=0.8``; the error names the form."""
    form = "use LABELS:FIGURE=MIN[,FIGURE=MIN], e.g. helpful:kappa=0.6 or helpful:tpr=0.8,tnr=0.8"
    labels, sep, rest = text.partition(":")
    if not sep or not labels.strip() or not rest.strip():
        raise InvalidRequestError(f"bad agreement requirement {text!r}: {form}")
    minimums: list[tuple[str, float]] = []
    for part in rest.split(","):
        figure, eq, value = part.strip().partition("=")
        if not eq or figure not in GATE_FIGURES:
            raise InvalidRequestError(
                f"bad agreement requirement {text!r}: {figure!r} is not one of "
                f"{', '.join(GATE_FIGURES)}; {form}"
            )
        try:
            minimum = float(value)
        except ValueError:
            raise InvalidRequestError(
                f"bad agreement requirement {text!r}: {value!r} is not a number; {form}"
            ) from None
        if not -1.0 <= minimum <= 1.0:
            raise InvalidRequestError(f"bad agreement requirement {text!r}: minimums are -1 to 1")
        minimums.append((figure, minimum))
    return Requirement(labels.strip(), tuple(minimums))


def figure_of(report: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The report's figure called ``name`` in a gate (None when the report has none)."""
    if name in ("linear_kappa", "quadratic_kappa"):
        weighted = report.get("weighted_kappa") or {}
        return weighted.get(name.split("_", maxsplit=1)[0])
    if name == "alpha":
        return (report.get("annotators") or {}).get("alpha")
    found = report.get(name)
    return found if isinstance(found, Mapping) and "ci" in found else None


@dataclass(frozen=True)
class GateResult:
    """``passed``, ``below`` or ``too few labels``, and a line saying why."""

    status: str
    message: str


def judge(report: Mapping[str, Any], requirement: Requirement) -> GateResult:
    """Judge one report against ``requirement`` by the intervals' lower bounds."""
    who = f"{report.get('check', 'the check')} against {requirement.labels!r}"
    if report.get("verdict") == TOO_FEW:
        return GateResult(TOO_FEW, f"{who}: {report.get('message', TOO_FEW)}")
    failures: list[str] = []
    for name, minimum in requirement.minimums:
        fig = figure_of(report, name)
        lower = None if fig is None else fig["ci"][0]
        if fig is None or lower is None:
            failures.append(f"{name} is not measured for this check and label")
        elif lower < minimum:
            failures.append(
                f"{name} {fig['value']:.3f} [{lower:.3f}, {fig['ci'][1]:.3f}]: "
                f"its lower bound is below {minimum:g}"
            )
    if failures:
        return GateResult(BELOW, f"{who}: " + "; ".join(failures))
    shown = ", ".join(
        f"{name} lower bound {figure_of(report, name)['ci'][0]:.3f} >= {minimum:g}"  # type: ignore[index]
        for name, minimum in requirement.minimums
    )
    return GateResult(PASSED, f"{who}: {shown}")
