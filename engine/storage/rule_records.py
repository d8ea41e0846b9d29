"""Records of online scoring, as the rule and score stores hand them out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from engine.online.filters import SpanFields

__all__ = [
    "Backfill",
    "BackfillStatus",
    "Batch",
    "Rule",
    "RuleVersion",
    "RunResult",
    "ScoreStatus",
    "SpanRef",
    "SpanScore",
    "SpanView",
    "check_key",
]


class ScoreStatus(StrEnum):
    """Where one span stands for one rule version and one pinned check.

    ``pending`` waits for a batch, ``queued`` is in a durable run; ``scored`` and ``error``
    are outcomes (``error``: the check did not give a score, the explanation says why);
    the rest are typed skips, counted, never silent.
    """

    PENDING = "pending"
    QUEUED = "queued"
    SCORED = "scored"
    ERROR = "error"
    NO_CONTENT = "no_content"  # the span carries no messages and no output
    BUDGET = "budget"  # the rule's daily LLM token budget was spent: backfillable
    BACKLOG = "backlog"  # the tenant's backlog was full when it arrived: backfillable
    CANCELLED = "cancelled"  # its backfill was cancelled before it was scored

    @property
    def skip(self) -> bool:
        return self in (self.NO_CONTENT, self.BUDGET, self.BACKLOG, self.CANCELLED)


#: Skips a backfill (or a span's content arriving later) puts back in the queue.
RETRYABLE = (ScoreStatus.BUDGET, ScoreStatus.BACKLOG, ScoreStatus.CANCELLED)


def check_key(check: dict[str, Any]) -> str:
    """A pinned check's identity within a rule version: its version id, or for a built-in
    its name and parameters."""
    if check.get("id"):
        return str(check["id"])
    params = check.get("params") or {}
    suffix = "" if not params else ":" + ",".join(f"{k}={params[k]}" for k in sorted(params))
    return f"{check.get('kind', 'builtin')}:{check['name']}{suffix}"[:200]


@dataclass(frozen=True)
class RuleVersion:
    """One version of a rule: the pinned checks (run-check JSON), filter, sampling, budget."""

    id: str
    rule_id: str
    version: int
    checks: list[dict[str, Any]]
    filter: dict[str, Any]
    sample_rate: float
    daily_token_budget: int | None
    created_at: datetime


@dataclass(frozen=True)
class Rule:
    """A rule with its current version."""

    id: str
    tenant_id: str
    name: str
    enabled: bool
    current: RuleVersion
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SpanScore:
    """One score of a span as the API writes it back."""

    trace_id: str
    span_id: str
    rule: str
    rule_version: int
    check: str
    check_version: int | None
    status: str
    score: float | None
    passed: bool | None
    explanation: str | None
    run_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "rule_version": self.rule_version,
            "check": self.check,
            "check_version": self.check_version,
            "status": self.status,
            "score": self.score,
            "passed": self.passed,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class Batch:
    """Spans of one rule version claimed for one durable run under ``token``."""

    token: str
    tenant_id: str
    rule_id: str
    rule_version_id: str
    spans: list[tuple[str, str]]  # (trace id, span id), in row order
    score_ids: dict[tuple[str, str, int], str] = field(default_factory=dict)


class BackfillStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Backfill:
    """A backfill's window, cap, progress and state."""

    id: str
    tenant_id: str
    rule_id: str
    rule_version_id: str
    since_unix_nano: int
    until_unix_nano: int
    row_cap: int
    status: str
    counts: dict[str, int]
    created_at: datetime
    finished_at: datetime | None
    cursor_unix_nano: int | None = None
    cursor_span_pk: str | None = None


@dataclass(frozen=True)
class SpanRef:
    """A span as the queue needs it: ids, start, and whether it has content to score."""

    trace_id: str
    span_id: str
    start_unix_nano: int
    no_content: bool


@dataclass(frozen=True)
class RunResult:
    """One result of a rule's run, as it is written back onto its span."""

    row_index: int
    check_index: int
    status: str  # scored or error
    score: float | None
    passed: bool | None
    explanation: str | None


@dataclass(frozen=True)
class SpanView:
    """A span as rules see it: what the filter reads, and what the queue needs."""

    ref: SpanRef
    fields: SpanFields
