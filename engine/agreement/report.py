"""A check's agreement report against a label: its labelled rows (and the labelled spans it
scored online, :mod:`engine.agreement.spans`) paired with its results, handed to
:func:`engine.calibration.report.agreement_report`.

It finds the runs that applied the check to labelled rows, takes each row's result
(``ok`` results only: an error is no verdict) and gathers every annotator's label on the
row. Labelled spans the check scored join them: all of them when the report names no run,
those of one rule with ``rule``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from engine import catalog
from engine.agreement.spans import span_items
from engine.calibration.report import LabelledItem, LabelSpec, ReportOptions, agreement_report
from engine.errors import InvalidRequestError, NotFoundError
from engine.storage import Run, Store
from engine.storage.label_sql import ROW, LabelStore
from engine.storage.rule_sql import rule_store

#: The dashboard's row page (engine/web/runs.py), where a disagreement links to.
ROW_PAGE = "/ui/runs/{run}/rows/{row}"


def row_link(run_id: str, row: int) -> str:
    """The dashboard page of one run row."""
    return ROW_PAGE.format(run=run_id, row=row)


#: Each labelled row's labels, as ``(annotator, value)``, by ``(run, row)``.
_ByRow = dict[tuple[str, int], list[tuple[str, Any]]]


def _check_indexes(run: Run, name: str, version: int | None) -> list[int]:
    return [
        i
        for i, c in enumerate(run.checks)
        if c.name == name and (version is None or c.version == version)
    ]


def _labels_by_row(
    labels: LabelStore,
    tenant_id: str,
    label_name: str,
    run_id: str | None,
    holdout: tuple[float, int] | None,
) -> _ByRow:
    """The labels on rows (of ``run_id`` only, when named), by row; with ``holdout``, only
    the rows that seeded split holds back."""
    by_row: _ByRow = defaultdict(list)
    for given in labels.list_labels(tenant_id, name=label_name, run_id=run_id, kind=ROW):
        by_row[(given.run_id, given.row)].append((given.annotator, given.value))
    if holdout is None:
        return by_row
    from engine.calibration.holdout import held_out, majorities  # noqa: PLC0415 (lazy)

    votes = ((r, row, v) for (r, row), given in by_row.items() for _, v in given)
    try:
        kept = held_out(majorities(votes), *holdout)
    except ValueError as exc:
        raise InvalidRequestError(str(exc)) from exc
    return defaultdict(list, {k: v for k, v in by_row.items() if k in kept})


def _row_items(
    store: Store, tenant_id: str, name: str, version: int | None, by_row: _ByRow
) -> tuple[bool, list[LabelledItem]]:
    """Whether any labelled row's run applied the check, and each such row's pair: its
    labels and the check's result (``ok`` results only: an error is no verdict)."""
    rows_of: dict[str, list[tuple[int, list[tuple[str, Any]]]]] = defaultdict(list)
    for (run_id, row), given in sorted(by_row.items()):
        rows_of[run_id].append((row, given))
    items: list[LabelledItem] = []
    applied = False
    for run_id, rows in rows_of.items():
        run = store.get_run(tenant_id, run_id)
        indexes = _check_indexes(run, name, version)
        if not indexes:
            continue
        applied = True
        page = store.results_page(run_id, 0, run.row_count, check_index=indexes[0])
        results = {r.row_index: r for r in page if r.status == "ok"}
        for row, given in rows:
            result = results.get(row)
            items.append(
                LabelledItem(
                    target={"run": run_id, "row": row},
                    labels=given,
                    score=None if result is None else result.score,
                    passed=None if result is None else result.passed,
                    link=row_link(run_id, row),
                )
            )
    return applied, items


def _rule_items(
    labels: LabelStore,
    tenant_id: str,
    name: str,
    version: int | None,
    label: str,
    label_name: str,
    rule_id: str,
) -> list[LabelledItem]:
    """The labelled spans the check scored under one rule (a 404 when it scored none)."""
    n_spans, items = span_items(labels, tenant_id, name, version, label_name, rule_id)
    if n_spans and not items:
        raise NotFoundError(
            f"the rule scored no span labelled {label_name!r} with {label}: label "
            "spans it scored, or name the version the rule pins (name@N)"
        )
    return items


def labelled_items(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    check_ref: str,
    label_name: str,
    run_id: str | None = None,
    holdout: tuple[float, int] | None = None,
    rule_id: str | None = None,
) -> tuple[str, LabelSpec, list[LabelledItem]]:
    """The check's label (``name@N``), the label's spec, and each labelled target's pairs:
    the rows of ``run_id``; the spans the check scored under the rule ``rule_id``; or,
    with neither, every labelled row and span the check scored. With ``holdout``
    (fraction, seed), only the rows that split holds back (spans are left out)."""
    name, version = catalog.split_ref(check_ref)
    if version is None:
        latest = store.latest_check(tenant_id, name)
        version = None if latest is None else latest.version
    declared = labels.get_name(tenant_id, label_name)
    spec = LabelSpec(declared.name, declared.type, tuple(declared.levels or ()))
    label = name if version is None else f"{name}@{version}"
    if rule_id is not None:
        return (
            label,
            spec,
            _rule_items(labels, tenant_id, name, version, label, label_name, rule_id),
        )
    by_row = _labels_by_row(labels, tenant_id, label_name, run_id, holdout)
    if run_id is not None:
        store.get_run(tenant_id, run_id)  # 404 when the run is not the tenant's
    applied, items = _row_items(store, tenant_id, name, version, by_row)
    n_spans = 0
    if run_id is None and holdout is None:
        n_spans, on_spans = span_items(labels, tenant_id, name, version, label_name)
        applied = applied or bool(on_spans)
        items.extend(on_spans)
    if (by_row or n_spans) and not applied:
        raise NotFoundError(
            f"no run or rule with labels on {label_name!r} applied {label}: run it on the "
            "labelled rows' runs (or score the labelled spans with a rule) first, or name "
            "the version the runs used (name@N)"
        )
    return label, spec, items


def check_report(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    check_ref: str,
    label_name: str,
    run_id: str | None = None,
    options: ReportOptions | None = None,
    holdout: tuple[float, int] | None = None,
    rule: str | None = None,
) -> dict[str, Any]:
    """The agreement report of ``check_ref`` against ``label_name`` (JSON-ready); with
    ``holdout`` (fraction, seed), on the rows that seeded split holds back only; with
    ``rule`` (a rule's name), on the labelled spans that rule scored only."""
    rule_id = None
    if rule is not None:
        if run_id is not None or holdout is not None:
            raise InvalidRequestError(
                "name a run or a rule, not both: a rule's report is over spans, a run's "
                "over rows (and a hold-out is of rows)"
            )
        rule_id = rule_store(labels.engine).get_rule(tenant_id, rule).id  # 404: not theirs
    label, spec, items = labelled_items(
        store, labels, tenant_id, check_ref, label_name, run_id, holdout, rule_id
    )
    try:
        out = agreement_report(items, spec, options)
    except ValueError as exc:
        raise InvalidRequestError(f"{label} against {label_name!r}: {exc}") from exc
    held = None if holdout is None else {"fraction": holdout[0], "seed": holdout[1]}
    return {"check": label, "run": run_id, "rule": rule, "holdout": held, **out}
