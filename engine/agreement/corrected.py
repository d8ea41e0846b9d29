"""Pass rates corrected for a check's agreement with human labels: a run's pass/fail checks,
and a rule's check versions over the spans it scored, each measured rate beside the
Rogan-Gladen rate for the check's TPR and TNR (with its interval)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.agreement.report import check_report
from engine.calibration.report import ReportOptions
from engine.errors import InvalidRequestError, NotFoundError
from engine.runs.summary import CheckSummary
from engine.storage import Store
from engine.storage.label_sql import LabelStore
from engine.storage.rule_sql import rule_store
from engine.storage.span_label_sql import span_label_queries


def corrected_rate(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    check_ref: str,
    pass_rate: float,
    scored: int,
    label_name: str,
    opts: ReportOptions,
) -> dict[str, Any]:
    """One check's measured ``pass_rate`` over ``scored`` rows corrected for its TPR and TNR
    on ``label_name``: ``corrected`` (or None) and the ``reason`` it is None."""
    from engine.calibration.prevalence import rogan_gladen  # noqa: PLC0415 (lazy: scipy)

    entry: dict[str, Any] = {"corrected": None, "reason": None}
    try:
        rep = check_report(store, labels, tenant_id, check_ref, label_name, None, opts)
    except (NotFoundError, InvalidRequestError) as exc:
        entry["reason"] = str(exc)
        return entry
    tpr, tnr = rep.get("tpr") or {}, rep.get("tnr") or {}
    matrix = (rep.get("confusion") or {}).get("matrix")
    if tpr.get("value") is None or tnr.get("value") is None or not matrix:
        entry["reason"] = "the agreement report measures no TPR and TNR: " + rep["message"]
        return entry
    n_fail, n_pass = sum(matrix[0]), sum(matrix[1])
    fixed = rogan_gladen(
        pass_rate, scored, tpr["value"], tnr["value"], n_pass, n_fail, opts.confidence
    )
    entry["tpr"], entry["tnr"], entry["verdict"] = tpr, tnr, rep["verdict"]
    if fixed.value is None or fixed.ci is None:
        entry["reason"] = "the check is no better than chance (TPR + TNR <= 1)"
        return entry
    entry["corrected"] = {"value": round(fixed.value, 6), "ci": [round(x, 6) for x in fixed.ci]}
    return entry


def corrected_pass_rates(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    run_id: str,
    label_name: str,
    options: ReportOptions | None = None,
) -> dict[str, Any]:
    """Each pass/fail check of the run: its measured pass rate beside the rate corrected for
    the check's TPR and TNR against ``label_name`` (Rogan-Gladen, with its interval).

    ``corrected`` is None where the check has no agreement report on the label (no
    labelled rows it scored), where the report has too few labels of a class to measure
    TPR and TNR, or where the check is no better than chance (TPR + TNR <= 1).
    """
    from engine.runs.summary import run_summary  # noqa: PLC0415 (lazy)

    run = store.get_run(tenant_id, run_id)
    summary = run_summary(store, run)
    opts = options or ReportOptions()
    out: list[dict[str, Any]] = []
    for check in summary.checks:
        entry: dict[str, Any] = {
            "check": check.check if check.version is None else f"{check.check}@{check.version}",
            "measured": check.pass_rate,
            "scored": check.scored,
            "corrected": None,
            "reason": None,
        }
        out.append(entry)
        if check.pass_rate is None:
            entry["reason"] = "not a pass/fail check"
            continue
        entry.update(
            corrected_rate(
                store, labels, tenant_id, entry["check"], check.pass_rate, check.scored,
                label_name, opts,
            )
        )  # fmt: skip
    return {"run": run_id, "labels": label_name, "checks": out}


#: TPR and TNR are Wilson intervals, not bootstrapped: a run summary's correction needs
#: few resamples (only the report's other figures use them), which keeps it cheap.
SUMMARY_OPTIONS = ReportOptions(n_resamples=200)


def with_corrected(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    checks: Sequence[CheckSummary],
    label_name: str | None = None,
) -> list[CheckSummary]:
    """A run summary's pass/fail checks with ``corrected_pass_rate`` against ``label_name``,
    or, when None, against the label of the check version's required agreement. Checks
    with neither are left as they are: without either, one query and no report."""
    from engine.calibration.gate import parse_requirement  # noqa: PLC0415 (lazy)

    required = labels.requirements(tenant_id) if label_name is None else {}
    out: list[CheckSummary] = []
    for check in checks:
        name = label_name
        if name is None and check.id is not None and check.id in required:
            name = parse_requirement(required[check.id]).labels
        if name is None or check.pass_rate is None:
            out.append(check)
            continue
        ref = check.check if check.version is None else f"{check.check}@{check.version}"
        found = corrected_rate(
            store, labels, tenant_id, ref, check.pass_rate, check.scored, name, SUMMARY_OPTIONS
        )
        fixed = found["corrected"] or {"value": None, "reason": found["reason"]}
        extra = {k: found[k] for k in ("tpr", "tnr", "verdict") if k in found}
        out.append(
            check.model_copy(update={"corrected_pass_rate": {"labels": name, **fixed, **extra}})
        )
    return out


def rule_corrected_pass_rates(
    labels: LabelStore,
    store: Store,
    tenant_id: str,
    rule: str,
    label_name: str,
    options: ReportOptions | None = None,
) -> dict[str, Any]:
    """Each check version a rule scored with a pass flag: its measured pass rate over the
    rule's scored spans beside the rate corrected for the check's TPR and TNR against
    ``label_name`` (the check's report over every labelled row and span it scored, as a
    run's correction reads it). ``corrected`` is None with a ``reason`` as for a run."""
    found = rule_store(labels.engine).get_rule(tenant_id, rule)  # 404: not the tenant's
    opts = options or SUMMARY_OPTIONS
    out: list[dict[str, Any]] = []
    for rate in span_label_queries(labels.engine).rule_pass_rates(tenant_id, found.id):
        ref = rate.check if rate.version is None else f"{rate.check}@{rate.version}"
        measured = rate.passed / rate.scored
        entry: dict[str, Any] = {
            "check": ref,
            "measured": round(measured, 6),
            "scored": rate.scored,
        }
        entry.update(
            corrected_rate(store, labels, tenant_id, ref, measured, rate.scored, label_name, opts)
        )
        out.append(entry)
    return {"rule": found.name, "labels": label_name, "checks": out}
