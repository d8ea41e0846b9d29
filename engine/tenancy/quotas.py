"""Per-tenant quotas: defaults from settings, overridden per tenant."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from engine.errors import InvalidRequestError, QuotaExceededError
from engine.settings import Settings


@dataclass(frozen=True)
class Quotas:
    """What one tenant may use at once."""

    concurrent_jobs: int
    rows_per_run: int
    source_bytes: int
    queued_runs: int
    evaluations_per_run: int
    #: Distinct declared environments (PEP 723 requirement sets) among a tenant's checks.
    environments: int = 20
    llm_tokens_per_run: int = 0
    #: 1: distributed mode sends this tenant's work to runsc (gVisor) workers only.
    runsc_only: int = 0
    #: Spans received over OTLP per minute, per API process (0: no limit).
    spans_per_minute: int = 0
    #: Spans stored at once (0: no limit).
    stored_spans: int = 0

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


#: Quotas for which 0 means "off" rather than "nothing may run".
ZERO_ALLOWED: dict[str, int] = {
    "llm_tokens_per_run": 0,
    "runsc_only": 0,
    "spans_per_minute": 0,
    "stored_spans": 0,
}


def default_quotas(settings: Settings) -> Quotas:
    return Quotas(
        concurrent_jobs=settings.quota_concurrent_jobs,
        rows_per_run=settings.quota_rows_per_run,
        source_bytes=settings.quota_source_bytes,
        queued_runs=settings.quota_queued_runs,
        evaluations_per_run=settings.quota_evaluations_per_run,
        environments=settings.quota_environments,
        llm_tokens_per_run=settings.quota_llm_tokens_per_run,
        spans_per_minute=settings.quota_spans_per_minute,
        stored_spans=settings.quota_stored_spans,
    )


def effective_quotas(settings: Settings, overrides: Mapping[str, Any] | None) -> Quotas:
    """The settings' defaults with a tenant's overrides applied."""
    base = default_quotas(settings)
    values = {name: getattr(base, name) for name in Quotas.names()}
    for name, value in (overrides or {}).items():
        if name in values and value is not None:
            values[name] = int(value)
    return Quotas(**values)


def parse_overrides(pairs: Mapping[str, Any]) -> dict[str, int]:
    """Validated quota overrides (``{"rows_per_run": 1000}``)."""
    out: dict[str, int] = {}
    for name, value in pairs.items():
        if name not in Quotas.names():
            raise InvalidRequestError(
                f"unknown quota {name!r}: use one of {', '.join(Quotas.names())}"
            )
        try:
            number = int(value)
        except (TypeError, ValueError) as exc:
            raise InvalidRequestError(f"quota {name} must be an integer, got {value!r}") from exc
        least = ZERO_ALLOWED.get(name, 1)
        if number < least:
            raise InvalidRequestError(f"quota {name} must be at least {least}")
        out[name] = number
    return out


def check_rows(quotas: Quotas, rows: int) -> None:
    if rows > quotas.rows_per_run:
        raise QuotaExceededError(
            f"{rows} rows exceed this tenant's quota of {quotas.rows_per_run} rows per run: "
            "split the data into several runs",
            retry_after_seconds=3600,
        )


def check_references(settings: Settings, count: int) -> None:
    """At most ``max_checks_per_request`` check references (before any is resolved)."""
    if count > settings.max_checks_per_request:
        raise InvalidRequestError(
            f"checks: {count} check references, over the limit of "
            f"{settings.max_checks_per_request} per request (SCOREBOX_MAX_CHECKS_PER_REQUEST): "
            "split them over several requests"
        )


def check_evaluations(quotas: Quotas, rows: int, checks: int) -> None:
    """The work of a run is rows x checks: at most the tenant's ``evaluations_per_run``."""
    if rows * checks > quotas.evaluations_per_run:
        raise QuotaExceededError(
            f"{rows} rows x {checks} checks = {rows * checks} evaluations exceed this tenant's "
            f"quota of {quotas.evaluations_per_run} evaluations per run: split the rows or "
            "the checks into several runs",
            retry_after_seconds=3600,
        )


def check_score_evaluations(settings: Settings, quotas: Quotas, rows: int, checks: int) -> None:
    """``/v1/score`` is synchronous: its rows x checks stay under a smaller cap."""
    cap = min(settings.score_max_evaluations, quotas.evaluations_per_run)
    if rows * checks > cap:
        raise InvalidRequestError(
            f"{rows} rows x {checks} checks = {rows * checks} evaluations, over the "
            f"{cap}-evaluation limit of /v1/score: submit a run (POST /v1/runs) instead"
        )


def check_source(quotas: Quotas, size: int) -> None:
    if size > quotas.source_bytes:
        raise QuotaExceededError(
            f"the check source is {size} bytes, over this tenant's quota of "
            f"{quotas.source_bytes} bytes: make it smaller",
            retry_after_seconds=3600,
        )


def check_queued(quotas: Quotas, active: int) -> None:
    if active >= quotas.queued_runs:
        raise QuotaExceededError(
            f"this tenant already has {active} runs queued or running (quota "
            f"{quotas.queued_runs}): wait for one to finish or cancel one",
            retry_after_seconds=30,
        )
