"""What an audit record says: the actor, the action, its target and details (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from engine.errors import InvalidRequestError

if TYPE_CHECKING:
    from engine.tenancy.auth import Principal

CHECK_PUSHED = "check.pushed"
CHECK_DELETED = "check.deleted"
RUN_STARTED = "run.started"
RUN_CANCELLED = "run.cancelled"
TENANT_CREATED = "tenant.created"
KEY_CREATED = "key.created"
KEY_REVOKED = "key.revoked"
QUOTAS_CHANGED = "quotas.changed"
TENANT_DISABLED = "tenant.disabled"
TENANT_ENABLED = "tenant.enabled"
TENANT_DELETED = "tenant.deleted"
SCENARIO_SET_CREATED = "scenario_set.created"
MODEL_REGISTERED = "model.registered"
#: The hook for environments: whoever builds one records it with this action.
ENVIRONMENT_BUILT = "environment.built"

ACTIONS = frozenset(
    {
        CHECK_PUSHED,
        CHECK_DELETED,
        RUN_STARTED,
        RUN_CANCELLED,
        TENANT_CREATED,
        KEY_CREATED,
        KEY_REVOKED,
        QUOTAS_CHANGED,
        TENANT_DISABLED,
        TENANT_ENABLED,
        TENANT_DELETED,
        SCENARIO_SET_CREATED,
        MODEL_REGISTERED,
        ENVIRONMENT_BUILT,
    }
)


def valid_action(action: str | None) -> str | None:
    """``action`` if it is one of :data:`ACTIONS` (or None); else InvalidRequestError."""
    if action is not None and action not in ACTIONS:
        raise InvalidRequestError(
            f"action {action[:60]!r} is not one of {', '.join(sorted(ACTIONS))}"
        )
    return action


ActorKind = Literal["tenant", "operator"]
#: Where the change came from: the API, the /v0 Okareo routes, the dashboard, the admin
#: API, the operator's CLI on the database.
Via = Literal["api", "v0", "ui", "admin-api", "cli"]


@dataclass(frozen=True)
class Actor:
    """Who made a change: a tenant's key, or the operator."""

    kind: ActorKind
    via: Via
    key_id: str | None = None

    @classmethod
    def of(cls, principal: Principal, via: Via) -> Actor:
        return cls("tenant", via, principal.key_id)

    @classmethod
    def operator(cls, via: Via) -> Actor:
        return cls("operator", via, None)


@dataclass(frozen=True)
class AuditEvent:
    """One change to record: ``action`` on ``target`` of ``tenant_id`` by ``actor``."""

    action: str
    tenant_id: str | None
    actor: Actor
    target: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown audit action {self.action!r}: one of {sorted(ACTIONS)}")


@dataclass(frozen=True)
class AuditRecord:
    """A stored event: its sequence number (the order of the log) and when it was recorded."""

    seq: int
    at: datetime
    action: str
    tenant_id: str | None
    actor_kind: str
    actor_key_id: str | None
    via: str
    target: str
    detail: dict[str, Any]
