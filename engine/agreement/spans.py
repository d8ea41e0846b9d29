"""Agreement over spans: the labelled spans a check scored online, as report items.

The span side of :mod:`engine.agreement.report`: labels on spans (``target_kind`` ``"span"``)
are paired with the check's span scores (``scored`` is a verdict, ``error`` is left out
and counted, as a run row's error is), the latest one where several rules scored a span
with the same check version.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from engine.calibration.report import LabelledItem
from engine.storage.label_sql import SPAN, LabelStore
from engine.storage.rule_records import ScoreStatus
from engine.storage.span_label_sql import span_label_queries

#: The dashboard's trace page (engine/web/traces.py), where a span's disagreement links to.
TRACE_PAGE = "/ui/traces/{trace_id}"


def span_link(trace_id: str, span_id: str) -> str:
    """The dashboard page of the trace that holds the span, anchored on it."""
    return TRACE_PAGE.format(trace_id=trace_id) + f"#span-{span_id}"


def _as_run_score(score: float | None, passed: bool | None) -> Any:
    """A span score as a run row holds it: online scoring stores a bool check's True as
    1.0 with ``passed`` set, a run keeps True; made alike so one report takes both."""
    if passed is not None and score == float(passed):
        return passed
    return score


def span_items(
    labels: LabelStore,
    tenant_id: str,
    check: str,
    version: int | None,
    label_name: str,
    rule_id: str | None = None,
) -> tuple[int, list[LabelledItem]]:
    """How many spans carry ``label_name`` labels, and the items of those the check
    (``version``; any when None) scored, under any rule or only ``rule_id``."""
    by_span: dict[tuple[str, str], list[tuple[str, Any]]] = defaultdict(list)
    for given in labels.list_labels(tenant_id, name=label_name, kind=SPAN):
        if given.trace_id and given.span_id:
            by_span[(given.trace_id, given.span_id)].append((given.annotator, given.value))
    if not by_span:
        return 0, []
    outcomes = span_label_queries(labels.engine).outcomes(
        tenant_id, list(by_span), check, version, rule_id
    )
    items: list[LabelledItem] = []
    for key in sorted(by_span):
        outcome = outcomes.get(key)
        if outcome is None:
            continue  # the check never scored this span (under that rule)
        ok = outcome.status == ScoreStatus.SCORED.value
        items.append(
            LabelledItem(
                target={"trace_id": key[0], "span_id": key[1]},
                labels=by_span[key],
                score=_as_run_score(outcome.score, outcome.passed) if ok else None,
                passed=outcome.passed if ok else None,
                link=span_link(*key),
            )
        )
    return len(by_span), items
