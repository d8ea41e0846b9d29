"""What a built-in check is, and the per-row plumbing every built-in shares.

A :class:`BuiltinCheck` validates its parameters with a pydantic model (bad
parameters raise :class:`~engine.errors.InvalidRequestError` naming the
parameter and the fix) and scores a batch of rows, one :class:`RowResult` per
row, in order. Row-level problems never escape: a missing input is
``skipped``, an exception inside the check is ``error`` for that row only.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from engine.contract import OutputType, Status
from engine.errors import InvalidRequestError
from engine.models import Row, RowResult

P = TypeVar("P", bound=BaseModel)


class NoParams(BaseModel):
    """A built-in that takes no parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SkipRow(Exception):
    """Raised inside a row function: the row lacks an input the check needs (→ ``skipped``)."""


class RowTimedOut(Exception):
    """A built-in gave up on a row after its time budget (e.g. a runaway regex)."""


@dataclass(frozen=True)
class Outcome:
    """A row's score and an optional explanation."""

    score: bool | int | float
    explanation: str | None = None


RowFunction = Callable[[Row, P], Outcome]
BatchFunction = Callable[[Sequence[Row], P], list[RowResult]]


def as_text(value: Any) -> str | None:
    """A row value as text: strings unchanged, None stays None, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def require_text(row: Row, field_name: str) -> str:
    """The row's ``field_name`` as text, or :class:`SkipRow` when it is absent."""
    value = as_text(getattr(row, field_name))
    if value is None:
        raise SkipRow(f"the row has no {field_name}, which the check requires")
    return value


def _error_result(row: Row, exc: BaseException, started: float) -> RowResult:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return RowResult(
        row_id=row.id,
        status=Status.ERROR,
        error=f"{type(exc).__name__}: {exc}\n{''.join(frames)[-1500:]}",
        duration_ms=(time.perf_counter() - started) * 1000,
    )


def score_each(rows: Sequence[Row], params: P, function: RowFunction[P]) -> list[RowResult]:
    """Apply ``function`` to each row; skips and exceptions become that row's status."""
    results: list[RowResult] = []
    for row in rows:
        started = time.perf_counter()
        try:
            outcome = function(row, params)
        except SkipRow as skip:
            results.append(RowResult(row_id=row.id, status=Status.SKIPPED, error=str(skip)))
            continue
        except RowTimedOut as slow:
            results.append(
                RowResult(
                    row_id=row.id,
                    status=Status.TIMEOUT,
                    error=str(slow),
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
            )
            continue
        except Exception as exc:
            results.append(_error_result(row, exc, started))
            continue
        results.append(
            RowResult(
                row_id=row.id,
                status=Status.OK,
                score=outcome.score,
                explanation=outcome.explanation,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        )
    return results


def _describe_errors(name: str, exc: ValidationError, model: type[BaseModel]) -> str:
    accepted = ", ".join(f.alias or n for n, f in model.model_fields.items()) or "none"
    problems = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"]) or "(params)"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown param `{loc}`: remove it (accepted: {accepted})")
        elif error["type"] == "missing":
            problems.append(f"param `{loc}` is required: add it to the check reference's params")
        else:
            problems.append(f"param `{loc}`: {error['msg']}")
    return f"built-in `{name}`: " + "; ".join(problems)


@dataclass(frozen=True)
class BuiltinCheck(Generic[P]):
    """A built-in check as the registry exposes it (see :func:`engine.builtins.build_builtins`)."""

    name: str
    description: str
    output_data_type: OutputType
    params_model: type[P]
    batch: BatchFunction[P]
    kind: str = "builtin"  # "builtin" (deterministic) or "model" (LLM-judged)
    requires: tuple[str, ...] = field(default=())

    @property
    def params_schema(self) -> dict[str, Any]:
        """JSON schema of the parameters (defaults and descriptions included)."""
        return self.params_model.model_json_schema()

    def validate_params(self, params: Mapping[str, Any] | None) -> P:
        """Parsed parameters, or :class:`InvalidRequestError` naming each bad one and the fix."""
        try:
            return self.params_model.model_validate(dict(params or {}))
        except ValidationError as exc:
            raise InvalidRequestError(_describe_errors(self.name, exc, self.params_model)) from exc

    def score(
        self, rows: Sequence[Row], params: Mapping[str, Any] | None = None
    ) -> list[RowResult]:
        """One result per row, in order; raises only :class:`InvalidRequestError` for bad params."""
        parsed = self.validate_params(params)
        results = self.batch(rows, parsed)
        return [r.model_copy(update={"check": self.name}) for r in results]


def per_row(function: RowFunction[P]) -> BatchFunction[P]:
    """A batch function applying ``function`` row by row (see :func:`score_each`)."""

    def batch(rows: Sequence[Row], params: P) -> list[RowResult]:
        return score_each(rows, params, function)

    return batch
