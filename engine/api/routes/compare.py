"""``GET /v1/runs/{a}/compare/{b}``: two runs compared with paired-bootstrap intervals."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from engine.http.deps import PrincipalDep, StoreDep
from engine.http.problems import responses
from engine.runs.compare import CheckComparison, Interval, compare_runs

router = APIRouter(prefix="/v1/runs", tags=["runs"])


class IntervalOut(BaseModel):
    delta: float = Field(description="B minus A.", examples=[-0.04])
    low: float = Field(description="Lower end of the 95% paired-bootstrap interval.")
    high: float = Field(description="Upper end of the 95% paired-bootstrap interval.")
    significant: bool = Field(description="Whether 0 lies outside the interval.")

    @classmethod
    def of(cls, value: Interval | None) -> IntervalOut | None:
        if value is None:
            return None
        return cls(delta=value.delta, low=value.low, high=value.high, significant=value.significant)


class ChangedRowOut(BaseModel):
    key: str = Field(description="The row id, or `row N` (of run A) when matched by input.")
    row_a: int
    row_b: int
    status_a: str
    status_b: str
    score_a: bool | int | float | None
    score_b: bool | int | float | None
    kind: str = Field(description="pass_to_fail, fail_to_pass, status or score.")
    passed_a: bool | None = Field(
        default=None, description="The check's pass flag in A (its own, else a bool score)."
    )
    passed_b: bool | None = Field(default=None, description="The same in B.")


class CheckComparisonOut(BaseModel):
    check: str
    matched: int
    scored: int = Field(description="Matched rows with an ok score in both runs.")
    mean_a: float | None
    mean_b: float | None
    mean_delta: IntervalOut | None
    pass_rate_a: float | None
    pass_rate_b: float | None
    pass_rate_delta: IntervalOut | None
    changed_total: int
    changed: list[ChangedRowOut] = Field(description="Pass -> fail first; at most 200.")

    @classmethod
    def of(cls, c: CheckComparison) -> CheckComparisonOut:
        data: dict[str, Any] = {
            "check": c.check,
            "matched": c.matched,
            "scored": c.scored,
            "mean_a": c.mean_a,
            "mean_b": c.mean_b,
            "mean_delta": IntervalOut.of(c.mean_delta),
            "pass_rate_a": c.pass_rate_a,
            "pass_rate_b": c.pass_rate_b,
            "pass_rate_delta": IntervalOut.of(c.pass_rate_delta),
            "changed_total": c.changed_total,
            "changed": [ChangedRowOut(**vars(r)) for r in c.changed],
        }
        return cls(**data)


class ComparisonOut(BaseModel):
    run_a: str
    run_b: str
    matched_by: str = Field(description="`id` when both runs carry row ids, else `input`.")
    matched: int
    only_a: int
    only_b: int
    checks: list[CheckComparisonOut]


@router.get(
    "/{run_a}/compare/{run_b}",
    response_model=ComparisonOut,
    summary="Compare two runs",
    description="Rows matched by row id (or by input); per check shared by name, the mean and "
    "pass-rate deltas (B - A) with a 95% paired-bootstrap interval and whether the change is "
    "significant, and the rows whose result changed (pass -> fail first).",
    responses=responses(401, 404, 422),
)
def compare(run_a: str, run_b: str, store: StoreDep, principal: PrincipalDep) -> ComparisonOut:
    result = compare_runs(store, principal.tenant_id, run_a, run_b)
    return ComparisonOut(
        run_a=result.run_a,
        run_b=result.run_b,
        matched_by=result.matched_by,
        matched=result.matched,
        only_a=result.only_a,
        only_b=result.only_b,
        checks=[CheckComparisonOut.of(c) for c in result.checks],
    )
