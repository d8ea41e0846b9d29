"""The audit log's listener on environment builds: one ``environment.built`` record each.

:class:`~engine.environments.build.Environments` tells its listeners of every build
attempt; the API adds this one, so a build a tenant's push or job started is recorded with
that tenant, the environment's key, what it asked for and how it ended, from the
runner's first job on (:func:`audit_environment_builds`, a runner hook).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.audit import hooks
from engine.audit.records import Actor
from engine.audit.store import AuditLog
from engine.environments.build import Environments
from engine.environments.records import BuildOutcome


def environment_audit(log: AuditLog) -> Callable[[BuildOutcome], None]:
    """A listener writing each build attempt to ``log``."""

    def record(outcome: BuildOutcome) -> None:
        actor = Actor("tenant", "api") if outcome.tenant else Actor.operator("api")
        detail: dict[str, object] = {
            "outcome": outcome.outcome,
            "requirements": list(outcome.requirements),
            "seconds": outcome.seconds,
        }
        if outcome.size_bytes is not None:
            detail["size_bytes"] = outcome.size_bytes
        if outcome.resolved:
            detail["resolved"] = dict(outcome.resolved)
        if outcome.error:
            detail["error"] = outcome.error[:500]
        hooks.environment_built(log, actor, outcome.tenant, outcome.key, detail)

    return record


def audit_environment_builds(log: AuditLog) -> Callable[[Any], None]:
    """A runner hook: every environment build of its backend (if it has environments) is
    written to ``log``, from the runner's first job on."""

    def attach(runner: Any) -> None:
        environments = getattr(getattr(runner, "backend", None), "environments", None)
        if isinstance(environments, Environments) and "audit" not in environments.listeners:
            environments.listeners["audit"] = environment_audit(log)

    return attach
