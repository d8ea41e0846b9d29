"""A rule's pass rates corrected for its checks' agreement with human labels: per check
version the rule scored with a pass flag, the rate measured over its scored spans beside
the Rogan-Gladen rate (the statistics and the report are :mod:`engine.agreement`'s)."""

from __future__ import annotations

from typing import Any

from engine.agreement import SUMMARY_OPTIONS, corrected_rate
from engine.calibration.report import ReportOptions
from engine.storage import Store
from engine.storage.label_sql import LabelStore
from engine.storage.rule_sql import rule_store
from engine.storage.span_label_sql import span_label_queries


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
