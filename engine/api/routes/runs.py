"""``/v1/runs``: asynchronous, durable runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from fastapi.responses import StreamingResponse

from engine.api.deps import PrincipalDep, RunsDep, StoreDep
from engine.api.problems import responses
from engine.api.schemas import ResultsPage, RunList, RunOut, RunRequest, result_item
from engine.catalog import CheckRef
from engine.errors import InvalidRequestError
from engine.storage import Run, SqlStore

router = APIRouter(prefix="/v1/runs", tags=["runs"])

NDJSON = "application/x-ndjson"


def _accepted(run: Run, response: Response) -> RunOut:
    response.headers["Location"] = f"/v1/runs/{run.id}"
    return RunOut.of(run, 0)


@router.post(
    "",
    response_model=RunOut,
    status_code=202,
    summary="Start a run",
    description="Rows and results are stored; the run continues across restarts. Poll "
    "`GET /v1/runs/{id}`. 429 when the tenant's rows-per-run or queued-runs quota is passed.",
    responses=responses(401, 404, 422, 429),
)
def create_run(
    body: RunRequest, runs: RunsDep, principal: PrincipalDep, response: Response
) -> RunOut:
    run = runs.submit_run(principal, body.checks, body.rows, body.limits, body.labels)
    return _accepted(run, response)


def _parse_checks(raw: str) -> list[str | CheckRef]:
    text = raw.strip()
    if text.startswith("["):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"checks: not JSON: {exc}") from exc
        return [v if isinstance(v, str) else CheckRef.model_validate(v) for v in values]
    return [part.strip() for part in text.split(",") if part.strip()]


def _ndjson_rows(data: bytes) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(data.decode("utf-8", errors="strict").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"rows line {number}: not JSON: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise InvalidRequestError(f"rows line {number}: expected a JSON object")
        rows.append(value)
    return rows


@router.post(
    "/upload",
    response_model=RunOut,
    status_code=202,
    summary="Start a run from an NDJSON file",
    description="Multipart form: `file` (one JSON row per line), `checks` (comma-separated "
    "references, or a JSON list), optional `limits` and `labels` (JSON objects).",
    responses=responses(401, 404, 422, 429),
)
async def upload_run(
    runs: RunsDep,
    principal: PrincipalDep,
    response: Response,
    file: Annotated[UploadFile, File(description="NDJSON rows.")],
    checks: Annotated[str, Form(examples=["mentions_expected,word_count@1"])],
    limits: Annotated[str | None, Form()] = None,
    labels: Annotated[str | None, Form()] = None,
) -> RunOut:
    try:
        rows = _ndjson_rows(await file.read())
        limit_values = json.loads(limits) if limits else None
        label_values = json.loads(labels) if labels else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequestError(f"upload: {exc}") from exc
    run = runs.submit_run(principal, _parse_checks(checks), rows, limit_values, label_values)
    return _accepted(run, response)


@router.get("", response_model=RunList, summary="List recent runs", responses=responses(401))
def list_runs(
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> RunList:
    found = store.list_runs(principal.tenant_id, limit)
    return RunList(runs=[RunOut.of(r, store.count_results(r.id)) for r in found])


@router.get(
    "/{run_id}",
    response_model=RunOut,
    summary="A run's status, progress and per-check summary",
    responses=responses(401, 404),
)
def get_run(run_id: str, runs: RunsDep, principal: PrincipalDep) -> RunOut:
    run, done, summary = runs.get_run(principal, run_id)
    return RunOut.of(run, done, summary)


@router.post(
    "/{run_id}/cancel",
    response_model=RunOut,
    summary="Cancel a run",
    description="Rows already scored are kept; a finished run is returned unchanged.",
    responses=responses(401, 404),
)
def cancel_run(run_id: str, runs: RunsDep, principal: PrincipalDep) -> RunOut:
    run = runs.cancel(principal, run_id)
    _, done, summary = runs.get_run(principal, run.id)
    return RunOut.of(run, done, summary)


def _page(store: SqlStore, run: Run, offset: int, limit: int, check_index: int | None) -> list[Any]:
    stored = store.results_page(run.id, offset, limit, check_index)
    ids = store.load_rows(run.id, [s.row_index for s in stored])
    return [result_item(run, s, ids.get(s.row_index, {}).get("id")) for s in stored]


@router.get(
    "/{run_id}/results",
    response_model=ResultsPage,
    summary="A run's results",
    description="Ordered by row, then check. JSON pages with `offset`/`limit`, or every result "
    "from `offset` on as NDJSON with `Accept: application/x-ndjson`. Filter with `check=NAME`.",
    responses=responses(
        401, 404, ok={200: {"content": {NDJSON: {"example": '{"row_index": 0, "check": "x"}\n'}}}}
    ),
)
def get_results(
    run_id: str,
    request: Request,
    store: StoreDep,
    principal: PrincipalDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    check: Annotated[str | None, Query(description="Only this check (name or name@N).")] = None,
) -> Any:
    run = store.get_run(principal.tenant_id, run_id)
    check_index: int | None = None
    if check is not None:
        matches = [i for i, c in enumerate(run.checks) if check in (c.name, c.label, c.id)]
        if not matches:
            raise InvalidRequestError(f"run {run.id} has no check {check!r}")
        check_index = matches[0]
    if NDJSON in request.headers.get("accept", ""):

        def stream() -> Iterator[bytes]:
            position = offset
            while True:
                items = _page(store, run, position, 2000, check_index)
                if not items:
                    return
                yield b"".join(item.model_dump_json().encode() + b"\n" for item in items)
                position += len(items)

        return StreamingResponse(stream(), media_type=NDJSON)
    items = _page(store, run, offset, limit, check_index)
    next_offset = offset + len(items) if len(items) == limit else None
    return ResultsPage(results=items, next_offset=next_offset)
