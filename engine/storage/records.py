"""Values the repository returns: plain frozen dataclasses, detached from any session."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


def new_id(prefix: str) -> str:
    """A random id with a readable type prefix, e.g. ``run_3f2a...``."""
    return f"{prefix}_{secrets.token_hex(10)}"


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(value: datetime | None) -> datetime | None:
    """``value`` with UTC as its zone when the database returned it without one."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


class RunStatus(StrEnum):
    """Lifecycle of an asynchronous run."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def active(self) -> bool:
        """Whether the run still has work to do."""
        return self in (RunStatus.QUEUED, RunStatus.RUNNING)


@dataclass(frozen=True)
class Tenant:
    id: str
    name: str
    quotas: dict[str, Any]
    created_at: datetime
    #: set while an operator has the tenant disabled (its keys answer 401)
    disabled_at: datetime | None = None


@dataclass(frozen=True)
class ApiKey:
    id: str
    tenant_id: str
    prefix: str
    name: str | None
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True)
class CheckVersion:
    """One immutable version of a tenant's check."""

    id: str
    tenant_id: str
    name: str
    version: int
    kind: str
    description: str | None
    tags: list[str]
    source: str | None
    prompt_template: str | None
    check_type: str | None
    policy: str
    output_data_type: str | None
    requires_scenario_input: bool
    requires_scenario_result: bool
    limits: dict[str, Any] | None
    sha256: str
    author_key_id: str | None
    created_at: datetime
    deleted_at: datetime | None = None
    #: The entry function named at upload (scorer formats; None: found in the file).
    entry: str | None = None
    #: The version's configuration (promptfoo's context["config"], scorer keyword params).
    config: dict[str, Any] | None = None
    #: Where the version comes from: ``pushed`` by a tenant, or ``generated`` by the check
    #: generator and pushed as such (migration 0017).
    origin: str = "pushed"


@dataclass(frozen=True)
class RunCheck:
    """A check as a run resolved it at submission; stored with the run, so it is stable."""

    kind: str  # code | builtin | model
    name: str
    version: int | None = None
    id: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    output_data_type: str | None = None
    #: The version's origin when it is not ``pushed`` (``generated``); None otherwise.
    origin: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "id": self.id,
            "params": self.params,
            "output_data_type": self.output_data_type,
        }
        if self.origin is not None:  # only when generated: other runs' JSON is as it was
            out["origin"] = self.origin
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunCheck:
        return cls(
            kind=data["kind"],
            name=data["name"],
            version=data.get("version"),
            id=data.get("id"),
            params=dict(data.get("params") or {}),
            output_data_type=data.get("output_data_type"),
            origin=data.get("origin"),
        )

    @property
    def label(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Run:
    id: str
    tenant_id: str
    status: RunStatus
    checks: list[RunCheck]
    limits: dict[str, Any] | None
    labels: dict[str, Any]
    row_count: int
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    llm_usage: dict[str, int] | None = None
    #: Results stored so far (kept by every write of results: no count over them).
    results_done: int = 0
    #: The stored summary of a finished run (``engine.runs.summary.RunSummary`` as JSON).
    summary: dict[str, Any] | None = None

    @property
    def total_results(self) -> int:
        return self.row_count * len(self.checks)


@dataclass(frozen=True)
class StoredResult:
    """One stored row result of a run."""

    check_index: int
    row_index: int
    status: str
    score: bool | int | float | None
    explanation: str | None
    error: str | None
    output: str | None
    duration_ms: float
    passed: bool | None = None
    metadata: dict[str, Any] | None = None
    #: The model that served the row's model-gateway calls, where one did.
    model: str | None = None


@dataclass(frozen=True)
class ScoreStats:
    """Aggregates of one check's results in a run (computed from its result blocks)."""

    counts: dict[str, int]
    ok_count: int
    mean: float | None
    min: float | None
    max: float | None
    p50: float | None
    bool_scores: int  # how many ok scores are booleans
    flagged: int = 0  # how many ok results carry a scorer format's own pass flag
    passes: int = 0  # how many of those passed
