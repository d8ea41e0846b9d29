"""The audit log: who changed what, and when, for every tenant and the operator.

Every state change by a tenant or the operator is appended to ``audit_events``:
a check pushed or deleted, a run started or cancelled, a tenant created, a key
created or revoked, quotas changed, an environment built (:data:`ENVIRONMENT_BUILT`,
recorded by whoever builds one through :meth:`AuditLog.record`). The table is
append-only: :class:`AuditLog` has no update or delete, and triggers in the database
(SQLite and PostgreSQL, migration 0007) refuse ``UPDATE`` and ``DELETE`` on it.

A tenant reads its own records with ``GET /v1/audit`` (:mod:`engine.api.routes.audit`); the
operator reads everyone's with ``scorebox audit`` (:mod:`engine.cli.audit`). The store is
:class:`engine.audit.store.AuditLog`; :mod:`engine.audit.hooks` has one function per change.
This module imports no database code (``scorebox --help`` stays fast).
"""

from __future__ import annotations

from engine.audit.records import (
    ACTIONS,
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
    Actor,
    AuditEvent,
    AuditRecord,
)

__all__ = [
    "ACTIONS",
    "CHECK_DELETED",
    "CHECK_PUSHED",
    "ENVIRONMENT_BUILT",
    "KEY_CREATED",
    "KEY_REVOKED",
    "MODEL_REGISTERED",
    "QUOTAS_CHANGED",
    "RUN_CANCELLED",
    "RUN_STARTED",
    "SCENARIO_SET_CREATED",
    "TENANT_CREATED",
    "Actor",
    "AuditEvent",
    "AuditRecord",
]
