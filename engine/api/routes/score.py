"""``POST /v1/score``: score up to 1,000 rows now."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from engine.api.schemas import ResultItem, ScoreRequest, ScoreResponse
from engine.http.deps import PrincipalDep, RunsDep
from engine.http.problems import responses
from engine.runs.service import RunService
from engine.tenancy.auth import Principal

router = APIRouter(tags=["scoring"])


@router.post(
    "/v1/score",
    response_model=ScoreResponse,
    summary="Score rows synchronously",
    description="At most 1,000 rows; runs ahead of this tenant's queued runs on the warm pool, "
    "within its concurrent-jobs quota (429 with Retry-After when no slot frees in time).",
    responses=responses(401, 404, 422, 429, 503),
)
async def score(body: ScoreRequest, runs: RunsDep, principal: PrincipalDep) -> Response:
    # one worker thread for the blocking part, which also encodes the answer: returned as
    # a Response, it is sent as is (response_model documents it; FastAPI would otherwise
    # validate the model it was just built as once more and encode it through dicts, on
    # the event loop)
    return await run_in_threadpool(score_now, body, runs, principal)


def score_now(body: ScoreRequest, runs: RunService, principal: Principal) -> Response:
    """The rows scored, as the route's JSON answer (blocking: waits for a sandbox slot and
    the sandbox's answer)."""
    return Response(scored(body, runs, principal).model_dump_json(), media_type="application/json")


def scored(body: ScoreRequest, runs: RunService, principal: Principal) -> ScoreResponse:
    """The rows scored (blocking: waits for a sandbox slot and the sandbox's answer)."""
    outcome = runs.score(principal, body.checks, body.rows, body.limits)
    items = [
        ResultItem(
            row_index=i,
            row_id=body.rows[i].id,
            check=check.name,
            version=check.version,
            check_id=check.id,
            status=results[i].status.value,
            score=results[i].score,
            explanation=results[i].explanation,
            error=results[i].error,
            output=results[i].output,
            duration_ms=results[i].duration_ms,
            model=results[i].model,
            passed=results[i].passed,
            metadata=results[i].metadata,
        )
        for i in range(len(body.rows))
        for check, results in zip(outcome.checks, outcome.results, strict=True)
    ]
    return ScoreResponse(results=items, summary=outcome.summaries)
