"""Rules as the API and the CLI take them: the request bodies, pinning check versions, and
the refusal of a check whose required agreement with human labels is not met."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.agreement import required
from engine.catalog import CheckRef
from engine.catalog.spec import NAME_PATTERN
from engine.errors import InvalidRequestError
from engine.json_limits import FreeJSON
from engine.names import BUILTIN_PREFIX
from engine.online.filters import FilterError, check_filter
from engine.runs.service import RunService
from engine.storage import Store
from engine.storage.label_sql import LabelStore
from engine.tenancy.auth import Principal

__all__ = ["MAX_CHECKS", "RulePatch", "RuleSpec", "pin", "refuse_unmet", "score_ref"]

MAX_CHECKS = 20

_FILTER_DESCRIPTION = (
    "Field names to match, ANDed: a value to equal, or an object of operators "
    "(`eq`, `ne`, `in`, `exists`, `regex`). Span fields (`name`, `service.name`, `model`, "
    "`status`, `kind`), then any span attribute, then any key of the row's metadata."
)


def _checked_filter(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        return check_filter(value)
    except FilterError as exc:
        raise ValueError(str(exc)) from None


class RuleSpec(BaseModel):
    """A rule to create (the body of ``POST /v1/rules``)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "support-answers",
                    "checks": ["mentions_expected", "builtin:not_empty"],
                    "filter": {"service.name": "support-bot", "model": {"regex": "^gpt-4o"}},
                    "sample_rate": 0.1,
                    "daily_token_budget": 200000,  # nosec B105: a token budget
                }
            ]
        },
    )

    name: str = Field(pattern=NAME_PATTERN, description="Unique within the tenant.")
    checks: list[str | CheckRef] = Field(
        min_length=1,
        max_length=MAX_CHECKS,
        description="Check references (`name`, `name@N`, `builtin:NAME`, or objects); "
        "their versions are pinned now.",
    )
    filter: dict[str, FreeJSON] = Field(default_factory=dict, description=_FILTER_DESCRIPTION)
    sample_rate: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Share of traces scored, decided from the trace id as OpenTelemetry's "
        "TraceIdRatioBased sampler decides.",
    )
    enabled: bool = True
    daily_token_budget: int | None = Field(
        default=None,
        ge=0,
        description="LLM tokens the rule's checks may spend through the gateway per UTC "
        "day; past it spans are `skipped: budget` (backfillable). Null: no budget.",
    )

    _filter = field_validator("filter")(_checked_filter)


class RulePatch(BaseModel):
    """A change to a rule (``PATCH /v1/rules/{name}``): any field left out is kept. A
    change to its checks, filter, sample rate or budget makes a new rule version."""

    model_config = ConfigDict(extra="forbid")

    checks: list[str | CheckRef] | None = Field(default=None, min_length=1, max_length=MAX_CHECKS)
    filter: dict[str, FreeJSON] | None = Field(default=None, description=_FILTER_DESCRIPTION)
    sample_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    enabled: bool | None = None
    daily_token_budget: int | None = Field(default=None, ge=0)

    _filter = field_validator("filter")(_checked_filter)


def pin(runs: RunService, principal: Principal, refs: Sequence[Any]) -> list[dict[str, Any]]:
    """The checks ``refs`` name, each resolved to the version current now (run-check JSON)."""
    if not refs:
        raise InvalidRequestError("checks: name at least one check")
    return [c.to_run_check().to_json() for c in runs.resolve_checks(principal, list(refs))]


def score_ref(check: dict[str, Any]) -> CheckRef | str:
    """The reference that scores exactly the pinned ``check``: its version's id, or the
    built-in by name with its parameters."""
    params = dict(check.get("params") or {})
    if check.get("id"):
        return CheckRef(id=str(check["id"]), params=params)
    return CheckRef(name=f"{BUILTIN_PREFIX}{check['name']}", params=params)


def refuse_unmet(
    store: Store, labels: LabelStore, tenant_id: str, pinned: Sequence[dict[str, Any]]
) -> None:
    """A 409 naming the check, the figure and the verdict when a pinned version carries a
    required agreement with human labels that the labels do not meet now."""
    refs = [CheckRef(id=str(c["id"])) for c in pinned if c.get("id")]
    if refs:
        required.refuse_unmet(store, labels, tenant_id, refs)
