"""Agreement of a stored check with stored labels: the glue between storage and the
calibration core (``engine.calibration``), for the API and the dashboard.

It finds the runs that applied the check to labelled rows, takes each row's result
(``ok`` results only: an error is no verdict), gathers every annotator's label on the
row, and hands the pairs to :func:`engine.calibration.report.agreement_report`. Labelled
spans the check scored online join them (:mod:`engine.span_agreement`): all of them
when the report names no run, those of one rule with ``rule``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine import catalog
from engine.calibration.labels import LabelType, declare, parse_value
from engine.calibration.report import LabelledItem, LabelSpec, ReportOptions, agreement_report
from engine.errors import ConflictError, InvalidRequestError, NotFoundError
from engine.runs.summary import CheckSummary
from engine.span_agreement import span_items
from engine.storage import Run, Store
from engine.storage.label_sql import ROW, Label, LabelName, LabelStore, NewLabel
from engine.storage.rule_sql import rule_store
from engine.storage.span_label_sql import span_label_queries

#: The dashboard's row page (engine/web/runs.py), where a disagreement links to.
ROW_PAGE = "/ui/runs/{run}/rows/{row}"


def row_link(run_id: str, row: int) -> str:
    """The dashboard page of one run row."""
    return ROW_PAGE.format(run=run_id, row=row)


def label_type(name: LabelName) -> LabelType:
    """A stored name's type."""
    return LabelType(name.type, tuple(name.levels or ()))


@dataclass(frozen=True)
class LabelInput:
    """A label as a caller gives it, before its value and target are checked: on a run's
    row (``run``, ``row``) or on a span (``trace_id``, ``span_id``)."""

    name: str
    run: str | None
    row: int | None
    value: Any
    annotator: str
    comment: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


def _spans_found(labels: LabelStore, tenant_id: str, given: Sequence[LabelInput]) -> None:
    """NotFoundError naming the first labelled span the tenant has not stored."""
    keys = [
        (item.trace_id.lower(), item.span_id.lower())
        for item in given
        if item.trace_id is not None and item.span_id is not None
    ]
    if not keys:
        return
    found = span_label_queries(labels.engine).existing(tenant_id, keys)
    for i, key in enumerate(keys):
        if key not in found:
            raise NotFoundError(
                f"labels[{i}]: span {key[1]!r} of trace {key[0]!r} not found: "
                "GET /v1/spans lists the spans received"
            )


def add_labels(
    store: Store, labels: LabelStore, tenant_id: str, given: Sequence[LabelInput]
) -> list[Label]:
    """Check every label (its name is declared, its value fits, its run row or span
    exists) and store them all, or none: the error names the label by its position."""
    types: dict[str, LabelType] = {}
    runs: dict[str, Run] = {}
    checked: list[NewLabel] = []
    _spans_found(labels, tenant_id, given)
    for i, item in enumerate(given):
        where = f"labels[{i}]"
        if item.name not in types:
            types[item.name] = label_type(labels.get_name(tenant_id, item.name))
        if item.trace_id is not None and item.span_id is not None:
            try:
                value = parse_value(types[item.name], item.value, item.name)
            except InvalidRequestError as exc:
                raise InvalidRequestError(f"{where}: {exc}") from exc
            checked.append(
                NewLabel(
                    item.name, None, None, value, item.annotator, item.comment,
                    item.trace_id.lower(), item.span_id.lower(),
                )
            )  # fmt: skip
            continue
        if item.run is None or item.row is None:
            raise InvalidRequestError(
                f'{where}: a target is {{"run", "row"}} or {{"trace_id", "span_id"}}'
            )
        if item.run not in runs:
            runs[item.run] = store.get_run(tenant_id, item.run)
        run = runs[item.run]
        if not 0 <= item.row < run.row_count:
            raise InvalidRequestError(
                f"{where}: run {run.id} has rows 0 to {run.row_count - 1}, not {item.row}"
            )
        try:
            value = parse_value(types[item.name], item.value, item.name)
        except InvalidRequestError as exc:
            raise InvalidRequestError(f"{where}: {exc}") from exc
        checked.append(NewLabel(item.name, run.id, item.row, value, item.annotator, item.comment))
    return labels.add_labels(tenant_id, checked)


def declare_name(
    labels: LabelStore, tenant_id: str, name: str, type_: str, levels: Sequence[Any] | None
) -> tuple[LabelName, bool]:
    """Declare a label name's type (checked); ``True`` when it was created or changed."""
    checked = declare(type_, levels)
    return labels.declare_name(tenant_id, name, checked.type, list(checked.levels) or None)


def _check_indexes(run: Run, name: str, version: int | None) -> list[int]:
    return [
        i
        for i, c in enumerate(run.checks)
        if c.name == name and (version is None or c.version == version)
    ]


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
        n_spans, span_only = span_items(labels, tenant_id, name, version, label_name, rule_id)
        if n_spans and not span_only:
            raise NotFoundError(
                f"the rule scored no span labelled {label_name!r} with {label}: label "
                "spans it scored, or name the version the rule pins (name@N)"
            )
        return label, spec, span_only
    by_row: dict[tuple[str, int], list[tuple[str, Any]]] = defaultdict(list)
    for given_label in labels.list_labels(tenant_id, name=label_name, run_id=run_id, kind=ROW):
        by_row[(given_label.run_id, given_label.row)].append(
            (given_label.annotator, given_label.value)
        )
    if holdout is not None:
        from engine.calibration.holdout import held_out, majorities  # noqa: PLC0415 (lazy)

        votes = ((r, row, v) for (r, row), given in by_row.items() for _, v in given)
        try:
            kept = held_out(majorities(votes), *holdout)
        except ValueError as exc:
            raise InvalidRequestError(str(exc)) from exc
        by_row = defaultdict(list, {k: v for k, v in by_row.items() if k in kept})
    if run_id is not None:
        store.get_run(tenant_id, run_id)  # 404 when the run is not the tenant's
    items: list[LabelledItem] = []
    seen_check = False
    for rid in sorted({r for r, _ in by_row}):
        run = store.get_run(tenant_id, rid)
        indexes = _check_indexes(run, name, version)
        if not indexes:
            continue
        seen_check = True
        results = {
            r.row_index: r
            for r in store.results_page(rid, 0, run.row_count, check_index=indexes[0])
        }
        for (r_id, row), given in sorted(by_row.items()):
            if r_id != rid:
                continue
            result = results.get(row)
            ok = result is not None and result.status == "ok"
            items.append(
                LabelledItem(
                    target={"run": rid, "row": row},
                    labels=given,
                    score=result.score if ok and result is not None else None,
                    passed=result.passed if ok and result is not None else None,
                    link=row_link(rid, row),
                )
            )
    n_spans = 0
    if run_id is None and holdout is None:
        n_spans, on_spans = span_items(labels, tenant_id, name, version, label_name)
        seen_check = seen_check or bool(on_spans)
        items.extend(on_spans)
    if (by_row or n_spans) and not seen_check:
        raise NotFoundError(
            f"no run or rule with labels on {label_name!r} applied {label}: run it on the "
            "labelled rows' runs (or score the labelled spans with a rule) first, or name "
            "the version the runs used (name@N)"
        )
    return label, spec, items


def report(
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
        rep = report(store, labels, tenant_id, check_ref, label_name, None, opts)
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


def set_required(
    store: Store, labels: LabelStore, tenant_id: str, check_ref: str, requirement: str
) -> tuple[str, str]:
    """Require ``requirement`` (``LABELS:FIGURE=MIN[,...]``) of a check version (the latest
    when ``check_ref`` names none); returns ``(name@N, requirement)`` as stored."""
    from engine.calibration.gate import parse_requirement  # noqa: PLC0415 (lazy)

    parsed = parse_requirement(requirement)
    labels.get_name(tenant_id, parsed.labels)  # 404 naming how to declare it
    name, version = catalog.split_ref(check_ref)
    check = store.get_check(tenant_id, name, version)
    labels.set_requirement(tenant_id, check.id, str(parsed))
    return f"{check.name}@{check.version}", str(parsed)


def drop_required(store: Store, labels: LabelStore, tenant_id: str, check_ref: str) -> int:
    """Drop a check version's requirement; how many went."""
    name, version = catalog.split_ref(check_ref)
    check = store.get_check(tenant_id, name, version)
    return labels.delete_requirement(tenant_id, check.id)


def _judge_stored(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    label: str,
    text: str,
    options: ReportOptions | None,
) -> dict[str, Any]:
    """One stored requirement ``text`` of the check version ``label`` (``name@N``) judged
    now: ``{check, requirement, status, message}``."""
    from engine.calibration.gate import judge, parse_requirement  # noqa: PLC0415 (lazy)
    from engine.calibration.report import TOO_FEW  # noqa: PLC0415 (lazy)

    requirement = parse_requirement(text)
    entry: dict[str, Any] = {"check": label, "requirement": text}
    try:
        rep = report(store, labels, tenant_id, label, requirement.labels, None, options)
    except (NotFoundError, InvalidRequestError) as exc:
        entry.update(status=TOO_FEW, message=f"{label} against {requirement.labels!r}: {exc}")
    else:
        result = judge(rep, requirement)
        entry.update(status=result.status, message=result.message)
    return entry


def required_status(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    names: Sequence[str] | None = None,
    options: ReportOptions | None = None,
) -> list[dict[str, Any]]:
    """Each required agreement (of the checks ``names``, as ``name`` or ``name@N``; all when
    None) judged now against the labels: ``passed``, ``below`` or ``too few labels``.

    Judged on every read, so a requirement is re-checked as labels arrive."""
    wanted = None if names is None else {catalog.split_ref(n) for n in names}
    out: list[dict[str, Any]] = []
    for check_id, text in sorted(labels.requirements(tenant_id).items()):
        try:
            check = store.get_check_by_id(tenant_id, check_id)
        except NotFoundError:
            continue
        if wanted is not None and not (
            (check.name, None) in wanted or (check.name, check.version) in wanted
        ):
            continue
        label = f"{check.name}@{check.version}"
        out.append(_judge_stored(store, labels, tenant_id, label, text, options))
    return out


def required_by_id(
    store: Store,
    labels: LabelStore,
    tenant_id: str,
    checks: Sequence[tuple[str, str, int]],
    options: ReportOptions | None = None,
) -> dict[str, dict[str, Any]]:
    """The required agreement of each of ``checks`` (``(id, name, version)``) that carries
    one, judged now, by check id. One query when none does: cheap enough for a list."""
    stored = labels.requirements(tenant_id)
    return {
        check_id: _judge_stored(
            store, labels, tenant_id, f"{name}@{version}", stored[check_id], options
        )
        for check_id, name, version in checks
        if check_id in stored
    }


def _refers_to(
    store: Store, tenant_id: str, ref: Any, check_id: str, name: str, version: int
) -> bool:
    """Whether a run's check reference (a name, ``name@N``, or ``{name, version, id}``)
    names the stored version ``check_id`` (``name@version``)."""
    if isinstance(ref, str):
        ref_name, ref_version, ref_id = *catalog.split_ref(ref), None
    else:
        ref_name, ref_version, ref_id = ref.name, ref.version, ref.id
    if ref_id is not None:
        return bool(ref_id == check_id)
    if ref_name != name:
        return False
    if ref_version is not None:
        return bool(ref_version == version)
    latest = store.latest_check(tenant_id, name)
    return latest is not None and latest.id == check_id


def refuse_unmet(store: Store, labels: LabelStore, tenant_id: str, refs: Sequence[Any]) -> None:
    """Refuse a run (:class:`ConflictError`, naming the check, the figure and the verdict)
    when one of its checks' versions carries a required agreement the labels do not meet
    now. One query when no version of the tenant carries a requirement."""
    from engine.calibration.gate import PASSED  # noqa: PLC0415 (lazy)

    stored = labels.requirements(tenant_id)
    unmet: list[str] = []
    for check_id, text in sorted(stored.items()):
        try:
            check = store.get_check_by_id(tenant_id, check_id)
        except NotFoundError:
            continue
        if not any(
            _refers_to(store, tenant_id, r, check_id, check.name, check.version) for r in refs
        ):
            continue
        label = f"{check.name}@{check.version}"
        judged = _judge_stored(store, labels, tenant_id, label, text, None)
        if judged["status"] != PASSED:
            unmet.append(f"{judged['message']} (required of {label}: {judged['status']})")
    if unmet:
        raise ConflictError(
            "a check does not meet the agreement with human labels its version requires: "
            + "; ".join(unmet)
            + ". Label more rows or fix the check (scorebox check agreement NAME --labels "
            "LABELS shows where it disagrees), drop the requirement (DELETE "
            "/v1/checks/{ref}/required-agreement), or run it anyway with "
            "?ignore_required_agreement=true"
        )
