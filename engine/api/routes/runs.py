"""``/v1/runs``: asynchronous, durable runs."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterator
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError

from engine.agreement.corrected import with_corrected
from engine.agreement.required import refuse_unmet
from engine.api.routes.labels import LabelStoreDep
from engine.api.run_body import checked_errors, sent_rows
from engine.api.schemas import ResultsPage, RunList, RunOut, RunRequest, result_item
from engine.audit import hooks
from engine.catalog import CheckRef
from engine.errors import InvalidRequestError
from engine.http.deps import AuditDep, PrincipalDep, RunsDep, StoreDep
from engine.http.problems import responses
from engine.json_limits import FreeJSON, json_problem
from engine.row_errors import shape_problem
from engine.runs.export import INPUTS, passed, record, to_csv
from engine.runs.gc_pause import paused_gc
from engine.storage import Run, RunStatus, RunStore

router = APIRouter(prefix="/v1/runs", tags=["runs"])

NDJSON = "application/x-ndjson"
#: Results are numbered by 32-bit integers; no run holds more.
MAX_OFFSET = 2**31 - 1
#: The explicit opt-out of a check version's required agreement.
IgnoreAgreement = Annotated[
    bool,
    Query(
        description="Run even when a check's version requires an agreement with human labels "
        "that the labels do not meet now."
    ),
]


class _BulkRoute(APIRoute):
    """A route whose request carries a run's rows: the garbage collector is held off from
    reading the body until the response (engine.runs.gc_pause says why)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def paused(request: Request) -> Response:
            with paused_gc():
                return await handler(request)

        return paused


_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])


class _OrjsonRequest(Request):
    """A request whose JSON body orjson decodes (a run's rows: several times faster than
    ``json``), and ``json`` where orjson refuses it: an integer past 64 bits, ``NaN``, a
    lone surrogate, a body not in UTF-8, or one that is no JSON at all (whose error is
    then json's, as before). Where orjson accepts a body, both decode it alike."""

    async def json(self) -> Any:
        if not hasattr(self, "_decoded"):
            body = await self.body()
            try:
                self._decoded = orjson.loads(body)
            except orjson.JSONDecodeError:
                self._decoded = json.loads(body)
        return self._decoded


class _RunBodyRoute(_BulkRoute):
    """``POST /v1/runs``: a :class:`_BulkRoute` whose body errors name its bad rows too
    (engine.api.run_body says why they need to), its body decoded by orjson."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def worded(request: Request) -> Response:
            try:
                return await handler(_OrjsonRequest(request.scope, request.receive))
            except RequestValidationError as exc:
                raise checked_errors(exc) from None

        return worded


def _bulk_post(
    path: str, route_class: type[APIRoute] = _BulkRoute, **options: Any
) -> Callable[[_Endpoint], _Endpoint]:
    """``router.post`` for a :class:`_BulkRoute` (or ``route_class``)."""

    def register(endpoint: _Endpoint) -> _Endpoint:
        router.add_api_route(
            path, endpoint, methods=["POST"], route_class_override=route_class, **options
        )
        return endpoint

    return register


def _accepted(run: Run, response: Response) -> RunOut:
    response.headers["Location"] = f"/v1/runs/{run.id}"
    return RunOut.of(run, 0)


@_bulk_post(
    "",
    _RunBodyRoute,
    response_model=RunOut,
    status_code=202,
    summary="Start a run",
    description="Rows and results are stored; the run continues across restarts. Poll "
    "`GET /v1/runs/{id}`. 429 when the tenant's rows-per-run or queued-runs quota is passed; "
    "409 when a check's version requires an agreement with human labels that the labels do "
    "not meet now (unless `ignore_required_agreement=true`).",
    responses=responses(401, 404, 409, 422, 429),
)
def create_run(
    body: RunRequest,
    runs: RunsDep,
    principal: PrincipalDep,
    response: Response,
    audit: AuditDep,
    labels_store: LabelStoreDep,
    ignore_required_agreement: IgnoreAgreement = False,
) -> RunOut:
    rows = sent_rows(body)
    if not ignore_required_agreement:
        refuse_unmet(runs.store, labels_store, principal.tenant_id, body.checks)
    run = runs.submit_run(principal, body.checks, rows, body.limits, body.labels)
    hooks.run_started(audit, principal, "api", run)
    return _accepted(run, response)


_ANY_LIST = TypeAdapter(list[Any])
_CHECK_REF = TypeAdapter(CheckRef)
_LIMITS = TypeAdapter(dict[str, Any] | None)
_LABELS = TypeAdapter(dict[str, FreeJSON])


def _form_json(field: str, raw: str, adapter: TypeAdapter[Any]) -> Any:
    """A JSON form field validated against its type; a 422 naming the field otherwise."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidRequestError(f"{field}: not JSON: {exc}") from exc
    problem = json_problem(value, field, max_depth=None)
    if problem is not None:
        raise InvalidRequestError(problem)
    return _form_value(field, value, adapter)


def _form_value(field: str, value: Any, adapter: TypeAdapter[Any]) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in (field, *first["loc"]))
        raise InvalidRequestError(f"{where}: {first['msg']}") from None


def _parse_checks(raw: str) -> list[str | CheckRef]:
    text = raw.strip()
    if text.startswith("["):
        values = _form_json("checks", text, _ANY_LIST)
        out: list[str | CheckRef] = []
        for index, value in enumerate(values):
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, dict):
                out.append(_form_value(f"checks[{index}]", value, _CHECK_REF))
            else:
                raise InvalidRequestError(
                    f"checks[{index}]: expected a check reference, a string (name, name@2, "
                    "an id) or an object {name, version, params}"
                )
        return out
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
        problem = json_problem(value, f"rows line {number}", max_depth=None)
        if problem is not None:
            raise InvalidRequestError(problem)
        # the CLI's wording of a data file's row; a field's value is checked with the run
        shape = shape_problem(value)
        if shape is not None:
            raise InvalidRequestError(f"rows line {number}: {shape}")
        rows.append(value)
    return rows


@_bulk_post(
    "/upload",
    response_model=RunOut,
    status_code=202,
    summary="Start a run from an NDJSON file",
    description="Multipart form: `file` (one JSON row per line), `checks` (comma-separated "
    "references, or a JSON list), optional `limits` and `labels` (JSON objects). 409 as "
    "`POST /v1/runs` when a check misses its required agreement.",
    responses=responses(401, 404, 409, 422, 429),
)
async def upload_run(
    runs: RunsDep,
    principal: PrincipalDep,
    audit: AuditDep,
    response: Response,
    labels_store: LabelStoreDep,
    file: Annotated[UploadFile, File(description="NDJSON rows: one JSON object a line.")],
    checks: Annotated[
        str,
        Form(
            description="Check references: comma-separated names, or a JSON list of names "
            'and `{"name": ..., "params": {...}}` objects.',
            examples=["is_json,levenshtein_distance"],
        ),
    ],
    limits: Annotated[
        str | None,
        Form(
            description="A JSON object lowering the sandbox limits for this run.",
            examples=['{"row_timeout_seconds": 2}'],
        ),
    ] = None,
    labels: Annotated[
        str | None,
        Form(
            description="A JSON object of string labels (filter with GET /v1/runs?label=K=V).",
            examples=['{"suite": "nightly"}'],
        ),
    ] = None,
    ignore_required_agreement: IgnoreAgreement = False,
) -> RunOut:
    try:
        rows = _ndjson_rows(await file.read())
    except (UnicodeDecodeError, RecursionError) as exc:
        raise InvalidRequestError(f"file: {exc}") from exc
    limit_values = _form_json("limits", limits, _LIMITS) if limits else None
    label_values = _form_json("labels", labels, _LABELS) if labels else {}
    refs = _parse_checks(checks)
    if not ignore_required_agreement:
        refuse_unmet(runs.store, labels_store, principal.tenant_id, refs)
    run = runs.submit_run(principal, refs, rows, limit_values, label_values)
    hooks.run_started(audit, principal, "api", run)
    return _accepted(run, response)


@router.get("", response_model=RunList, summary="List recent runs", responses=responses(401))
def list_runs(
    store: StoreDep,
    runs: RunsDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000, description="Runs to skip.")] = 0,
    status: Annotated[RunStatus | None, Query(description="Only runs with this status.")] = None,
    label: Annotated[
        str | None,
        Query(description="Only runs with this label, as KEY=VALUE.", max_length=1000),
    ] = None,
) -> RunList:
    wanted: tuple[str, str] | None = None
    if label is not None:
        key, sep, value = label.partition("=")
        if not sep or not key:
            raise InvalidRequestError(
                f"label {label!r}: expected KEY=VALUE, e.g. label=suite=nightly"
            )
        wanted = (key, value)
    found = store.list_runs(
        principal.tenant_id,
        limit,
        offset,
        None if status is None else status.value,
        wanted,
    )
    return RunList(runs=[RunOut.of(r, r.results_done) for r in found])


@router.get(
    "/{run_id}",
    response_model=RunOut,
    summary="A run's status, progress and per-check summary",
    description="With `labels=NAME`, each pass/fail check's summary carries "
    "`corrected_pass_rate`: its pass rate corrected for the check's TPR and TNR against "
    "those human labels. A finished run's checks whose versions require an agreement carry "
    "it against that requirement's label without asking.",
    responses=responses(401, 404),
)
def get_run(
    run_id: str,
    runs: RunsDep,
    principal: PrincipalDep,
    labels_store: LabelStoreDep,
    labels: Annotated[
        str | None, Query(description="A label name to correct pass rates for", max_length=100)
    ] = None,
) -> RunOut:
    run, done, summary = runs.get_run(principal, run_id)
    if labels is not None or not run.status.active:
        summary = with_corrected(runs.store, labels_store, principal.tenant_id, summary, labels)
    return RunOut.of(run, done, summary)


@router.post(
    "/{run_id}/cancel",
    response_model=RunOut,
    summary="Cancel a run",
    description="Rows already scored are kept; a finished run is returned unchanged.",
    responses=responses(401, 404),
)
def cancel_run(run_id: str, runs: RunsDep, principal: PrincipalDep, audit: AuditDep) -> RunOut:
    was_active = runs.store.get_run(principal.tenant_id, run_id).status.active
    run = runs.cancel(principal, run_id)
    if was_active and run.status is RunStatus.CANCELLED:
        hooks.run_cancelled(audit, principal, "api", run)
    _, done, summary = runs.get_run(principal, run.id)
    return RunOut.of(run, done, summary)


def _page(store: RunStore, run: Run, offset: int, limit: int, check_index: int | None) -> list[Any]:
    stored = store.results_page(run.id, offset, limit, check_index)
    ids = store.load_rows(run.id, [s.row_index for s in stored])
    return [result_item(run, s, ids.get(s.row_index, {}).get("id")) for s in stored]


def _with_inputs(item: Any, row: dict[str, Any] | None) -> dict[str, Any]:
    """A result of the NDJSON export: the ResultItem and its row's inputs, ``passed`` as
    every export has it (the check's own flag, else a bool score), as the CSV."""
    out: dict[str, Any] = item.model_dump(mode="json")
    out["passed"] = passed(out)
    for key in INPUTS:
        out[key] = None if row is None else row.get(key)
    return out


@router.get(
    "/{run_id}/results",
    response_model=ResultsPage,
    summary="A run's results",
    description="Ordered by row, then check. JSON pages with `offset`/`limit`, or every result "
    "from `offset` on as NDJSON with `Accept: application/x-ndjson` (each result with its row's "
    "inputs), or as CSV (one line per row and check, with the row's inputs, the same columns as "
    "`scorebox run results -o x.csv`) with `Accept: text/csv`. Filter with `check=NAME`.",
    responses=responses(
        401, 404, ok={200: {"content": {NDJSON: {"example": '{"row_index": 0, "check": "x"}\n'}}}}
    ),
)
def get_results(
    run_id: str,
    request: Request,
    store: StoreDep,
    principal: PrincipalDep,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
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
    if "text/csv" in request.headers.get("accept", ""):

        def csv_stream() -> Iterator[bytes]:
            position, header = offset, True
            while True:
                items = _page(store, run, position, 2000, check_index)
                if not items:
                    return
                rows = store.load_rows(run.id, sorted({i.row_index for i in items}))
                records = [
                    record(i.row_index, i.model_dump(mode="json"), rows.get(i.row_index))
                    for i in items
                ]
                text = to_csv(records)
                yield (text if header else text.split("\r\n", 1)[1]).encode()
                header = False
                position += len(items)

        return StreamingResponse(
            csv_stream(),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{run.id}.csv"'},
        )
    if NDJSON in request.headers.get("accept", ""):

        def stream() -> Iterator[bytes]:
            position = offset
            while True:
                items = _page(store, run, position, 2000, check_index)
                if not items:
                    return
                rows = store.load_rows(run.id, sorted({i.row_index for i in items}))
                yield "".join(
                    json.dumps(_with_inputs(i, rows.get(i.row_index)), ensure_ascii=False) + "\n"
                    for i in items
                ).encode()
                position += len(items)

        return StreamingResponse(stream(), media_type=NDJSON)
    items = _page(store, run, offset, limit, check_index)
    next_offset = offset + len(items) if len(items) == limit else None
    return ResultsPage(results=items, next_offset=next_offset)
