"""The agreement with human labels a check version requires (``LABELS:FIGURE=MIN``): set,
dropped, judged on every read (so it is re-checked as labels arrive), and the refusal of a
run whose checks do not meet it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine import catalog
from engine.agreement.report import check_report
from engine.calibration.report import ReportOptions
from engine.errors import ConflictError, InvalidRequestError, NotFoundError
from engine.storage import Store
from engine.storage.label_sql import LabelStore


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
        rep = check_report(store, labels, tenant_id, label, requirement.labels, None, options)
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
