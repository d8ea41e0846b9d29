"""One function per kind of change: what the routes and the CLI call after a change commits.

The record is written right after the change it describes, in its own transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.audit.records import (
    CHECK_DELETED,
    CHECK_PUSHED,
    ENVIRONMENT_BUILT,
    KEY_CREATED,
    KEY_REVOKED,
    MODEL_REGISTERED,
    QUOTAS_CHANGED,
    RUN_CANCELLED,
    RUN_STARTED,
    SCENARIO_SET_CREATED,
    TENANT_CREATED,
    TENANT_DELETED,
    TENANT_DISABLED,
    TENANT_ENABLED,
    Actor,
    AuditEvent,
    Via,
)
from engine.audit.store import AuditLog

if TYPE_CHECKING:
    from engine.catalog import SaveOutcome
    from engine.storage import Run
    from engine.storage.records import ApiKey, Tenant
    from engine.tenancy.auth import NewKey, Principal


def check_pushed(log: AuditLog, principal: Principal, via: Via, outcome: SaveOutcome) -> None:
    """A new check version (pushing identical content changes nothing and is not recorded)."""
    if not outcome.created:
        return
    check = outcome.check
    log.record(
        AuditEvent(
            CHECK_PUSHED,
            principal.tenant_id,
            Actor.of(principal, via),
            f"{check.name}@{check.version}",
            {"check_id": check.id, "name": check.name, "version": check.version},
        )
    )


def check_deleted(
    log: AuditLog, principal: Principal, via: Via, ref: str, version: int | None, count: int
) -> None:
    if count == 0:
        return
    log.record(
        AuditEvent(
            CHECK_DELETED,
            principal.tenant_id,
            Actor.of(principal, via),
            ref if version is None else f"{ref}@{version}",
            {"versions_deleted": count},
        )
    )


def run_started(log: AuditLog, principal: Principal, via: Via, run: Run) -> None:
    log.record(
        AuditEvent(
            RUN_STARTED,
            principal.tenant_id,
            Actor.of(principal, via),
            run.id,
            {
                "rows": run.row_count,
                "checks": [
                    c.name if c.version is None else f"{c.name}@{c.version}" for c in run.checks
                ],
                "labels": dict(run.labels),
            },
        )
    )


def run_cancelled(log: AuditLog, principal: Principal, via: Via, run: Run) -> None:
    log.record(AuditEvent(RUN_CANCELLED, principal.tenant_id, Actor.of(principal, via), run.id))


def scenario_set_created(
    log: AuditLog, principal: Principal, set_id: str, name: str, rows: int
) -> None:
    log.record(
        AuditEvent(
            SCENARIO_SET_CREATED,
            principal.tenant_id,
            Actor.of(principal, "v0"),
            set_id,
            {"name": name, "rows": rows},
        )
    )


def model_registered(log: AuditLog, principal: Principal, model_id: str, name: str) -> None:
    log.record(
        AuditEvent(
            MODEL_REGISTERED,
            principal.tenant_id,
            Actor.of(principal, "v0"),
            model_id,
            {"name": name},
        )
    )


def tenant_created(log: AuditLog, via: Via, new: NewKey) -> None:
    """A tenant and its first key, made by the operator."""
    tenant = new.tenant
    log.record(
        AuditEvent(
            TENANT_CREATED,
            tenant.id,
            Actor.operator(via),
            tenant.name,
            {"quotas": dict(tenant.quotas)},
        )
    )
    key_created(log, via, new)


def key_created(log: AuditLog, via: Via, new: NewKey) -> None:
    key = new.key
    log.record(
        AuditEvent(
            KEY_CREATED,
            key.tenant_id,
            Actor.operator(via),
            key.id,
            {"prefix": key.prefix, "name": key.name},
        )
    )


def key_revoked(log: AuditLog, via: Via, key: ApiKey) -> None:
    log.record(
        AuditEvent(KEY_REVOKED, key.tenant_id, Actor.operator(via), key.id, {"prefix": key.prefix})
    )


def quotas_changed(log: AuditLog, via: Via, tenant: Tenant, changed: Mapping[str, Any]) -> None:
    log.record(
        AuditEvent(
            QUOTAS_CHANGED,
            tenant.id,
            Actor.operator(via),
            tenant.name,
            {"changed": dict(changed), "quotas": dict(tenant.quotas)},
        )
    )


def tenant_disabled(log: AuditLog, via: Via, tenant: Tenant, disabled: bool) -> None:
    """The operator disabled (its keys answer 401) or enabled a tenant again."""
    action = TENANT_DISABLED if disabled else TENANT_ENABLED
    log.record(AuditEvent(action, tenant.id, Actor.operator(via), tenant.name))


def tenant_deleted(log: AuditLog, via: Via, tenant: Tenant, removed: Mapping[str, int]) -> None:
    """The operator deleted a tenant and everything it held (``removed`` counts it)."""
    log.record(
        AuditEvent(TENANT_DELETED, tenant.id, Actor.operator(via), tenant.name, dict(removed))
    )


def environment_built(
    log: AuditLog, actor: Actor, tenant_id: str | None, environment: str, detail: Mapping[str, Any]
) -> None:
    """The hook for environments: call it once an environment is built (image, packages)."""
    log.record(AuditEvent(ENVIRONMENT_BUILT, tenant_id, actor, environment, detail))
