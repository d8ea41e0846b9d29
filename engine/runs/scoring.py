"""What a run and a ``/v1/score`` request share, and the shape of a request's answer.

:class:`~engine.runs.service.RunService` answers ``/v1/score`` with :func:`outcome`
whichever dispatch scored it; the limits a check runs under come from
:func:`effective_limits` for runs and requests alike (the one lowering).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.catalog import CheckRef, ResolvedCheck
from engine.contract import Status
from engine.errors import InvalidRequestError
from engine.models import Limits, Row, RowResult
from engine.runs.summary import CheckSummary, summarize
from engine.settings import Settings

#: How a request names a check: ``"name"``, ``"name@3"``, a :class:`CheckRef` or its JSON.
Ref = str | CheckRef | dict[str, Any]


def effective_limits(settings: Settings, *overrides: Mapping[str, Any] | None) -> Limits:
    """The configured limits, lowered by each partial override in turn (never raised)."""
    limits = settings.limits
    for override in overrides:
        if override:
            try:
                lowered = Limits.model_validate({**limits.model_dump(), **override})
            except ValueError as exc:
                raise InvalidRequestError(f"limits: {exc}") from exc
            limits = limits.lowered_by(lowered)
    return limits


def chunked(indices: Sequence[int], size: int) -> list[list[int]]:
    return [list(indices[i : i + size]) for i in range(0, len(indices), size)]


@dataclass
class ScoreOutcome:
    """Results of ``/v1/score``: ``results[k][i]`` is check k on row i."""

    checks: list[ResolvedCheck]
    results: list[list[RowResult]]
    summaries: list[CheckSummary]


def outcome(
    resolved: Sequence[ResolvedCheck],
    row_list: Sequence[Row],
    results: Sequence[Sequence[RowResult | None]],
) -> ScoreOutcome:
    """Results in order (a row without one is ``sandbox_error``) and their summaries."""
    final: list[list[RowResult]] = []
    for check, check_results in zip(resolved, results, strict=True):
        final.append(
            [
                r
                if r is not None
                else RowResult(
                    row_id=row_list[i].id,
                    check=check.name,
                    version=check.version,
                    status=Status.SANDBOX_ERROR,
                    error="no result was produced for this row",
                )
                for i, r in enumerate(check_results)
            ]
        )
    summaries = [
        summarize(rs, c.name, c.version, c.id, c.kind)
        for c, rs in zip(resolved, final, strict=True)
    ]
    return ScoreOutcome(list(resolved), final, summaries)
