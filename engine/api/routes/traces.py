"""OTLP/HTTP ``POST /v1/traces`` and ``/v1/logs``; ``GET /v1/traces/{id}`` and ``/v1/spans``.

An app instrumented with OpenTelemetry needs only
``OTEL_EXPORTER_OTLP_ENDPOINT=http://host:port`` and
``OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer <key>``. The key is resolved from the
headers before the body is read (:class:`engine.http.gate.KeyGate`), the compressed body
is bounded by :class:`engine.http.body.BodyLimit` (413), and its decompressed size
by the same limit here. Answers follow the OTLP/HTTP specification: 200 with an
``Export*ServiceResponse`` in the request's encoding (``partial_success`` counting the
spans rejected), 400 with a ``google.rpc.Status`` for a body that cannot be read (never
retried), 503 with ``Retry-After`` when this process already stores as many batches as
it may or the database is down (retried).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from engine.api.openapi import OWN_ERRORS
from engine.errors import StorageError
from engine.http.body import MB
from engine.http.deps import PrincipalDep, ServicesDep
from engine.http.problems import responses
from engine.online import otlp
from engine.online.scorer import OnlineScorer
from engine.online.span_export import EXPORT_TYPES, export_stream
from engine.online.span_quota import SpanQuota
from engine.storage.rule_records import ScoreStatus, SpanScore
from engine.storage.rule_sql import rule_store
from engine.storage.score_sql import score_store
from engine.storage.span_reads import MAX_PAGE, SpanFilter, StoredSpan
from engine.storage.span_sql import SpanStore, span_store
from engine.tenancy.quotas import Quotas

log = logging.getLogger("scorebox.api")

router = APIRouter(prefix="/v1", tags=["traces"])

TAG_DESCRIPTION = (
    "OTLP/HTTP trace and log receiver for instrumented LLM apps, and the spans it stored."
)
#: Batches one API process stores at once; past it a 503 with Retry-After sheds load.
MAX_BATCHES_IN_FLIGHT = 8
RETRY_AFTER_SECONDS = 1
_in_flight = 0
#: this process's span quota windows and stored counts, per tenant
_quota = SpanQuota()

_STATUS = {
    otlp.PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
    otlp.JSON: {
        "schema": {
            "type": "object",
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
    },
}
_OTLP_BODY = {
    OWN_ERRORS: True,
    "requestBody": {
        "required": True,
        "content": {
            otlp.PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
            otlp.JSON: {"schema": {"type": "object"}},
        },
    },
    "responses": {
        "200": {
            "description": "Export*ServiceResponse in the request's encoding.",
            "content": {
                otlp.PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
                otlp.JSON: {"schema": {"type": "object"}},
            },
        },
        "400": {
            "description": "A google.rpc.Status: the body cannot be read (not retried).",
            "content": _STATUS,
        },
        "415": {
            "description": "A google.rpc.Status: not protobuf or JSON, or not gzip.",
            "content": _STATUS,
        },
        "503": {
            "description": "A google.rpc.Status and Retry-After: busy, or no database.",
            "content": _STATUS,
        },
    },
}


def get_span_store(services: ServicesDep) -> SpanStore:
    """The span store on the service's database."""
    return span_store(services.db)


SpanStoreDep = Annotated[SpanStore, Depends(get_span_store)]


def _answer(status: int, body: bytes, encoding: str, retry_after: int | None = None) -> Response:
    headers = {"retry-after": str(retry_after)} if retry_after is not None else None
    return Response(body, status_code=status, media_type=encoding, headers=headers)


def _status(status: int, message: str, encoding: str) -> bytes:
    code = {429: otlp.RESOURCE_EXHAUSTED, 503: otlp.UNAVAILABLE}.get(status, otlp.INVALID_ARGUMENT)
    return otlp.status_body(code, message, encoding)


def _refusal(status: int, message: str, encoding: str) -> Response:
    retry = RETRY_AFTER_SECONDS if status in (429, 503) else None
    return _answer(status, _status(status, message, encoding), encoding, retry)


def _ingest(
    store: SpanStore,
    online: OnlineScorer | None,
    tenant_id: str,
    quotas: Quotas,
    what: str,
    raw: bytes,
    coding: str | None,
    encoding: str,
    limit: int,
) -> tuple[bytes, int, int | None]:
    """One request's body decoded and stored: the answer's body, status and Retry-After."""
    try:
        body = otlp.decompress(raw, coding, limit)
        if what == "traces":
            decoded = otlp.decode_traces(body, encoding)
        else:
            decoded = otlp.decode_logs(body, encoding)
    except otlp.OtlpError as exc:
        return _status(exc.status, str(exc), encoding), exc.status, None
    if what == "traces" and decoded.spans:
        admission = _quota.admit(
            tenant_id,
            len(decoded.spans),
            quotas.spans_per_minute,
            quotas.stored_spans,
            lambda: store.count(tenant_id),
        )
        if admission.retry_after is not None:  # the minute's window is full: retry then
            why = admission.refused_because or ""
            return _status(429, why, encoding), 429, admission.retry_after
        for _ in decoded.spans[admission.allowed :]:
            decoded.reject(admission.refused_because or "over quota")
        del decoded.spans[admission.allowed :]
    try:
        if what == "traces":
            views = store.add_spans(tenant_id, decoded.spans)
        else:
            views = store.add_logs(tenant_id, decoded.logs)
        if online is not None:
            # only queued here: scoring runs in the background, ingestion never waits on it
            # (a retry of this batch after a failure queues nothing twice)
            online.enqueue(tenant_id, views)
    except StorageError as exc:
        log.warning("OTLP %s not stored: %s", what, exc)
        unavailable = f"the database is unavailable: {exc}"
        return _status(503, unavailable, encoding), 503, RETRY_AFTER_SECONDS
    if what == "traces":
        return otlp.trace_response(decoded, encoding), 200, None
    return otlp.logs_response(decoded, encoding), 200, None


async def _receive(request: Request, store: SpanStore, tenant_id: str, what: str) -> Response:
    global _in_flight
    try:
        encoding = otlp.encoding_of(request.headers.get("content-type"))
    except otlp.OtlpError as exc:
        return _refusal(exc.status, str(exc), otlp.JSON)
    if _in_flight >= MAX_BATCHES_IN_FLIGHT:
        return _refusal(503, f"busy storing {_in_flight} batches: retry after a second", encoding)
    _in_flight += 1
    try:
        limit = int(request.app.state.services.settings.max_body_mb * MB)
        raw = await request.body()
        coding = request.headers.get("content-encoding")
        # inflating, decoding, mapping and storing are CPU and database work: off the loop
        online = getattr(request.app.state, "online", None)
        quotas = request.app.state.services.runs.quotas(tenant_id)
        body, status, retry = await run_in_threadpool(
            _ingest, store, online, tenant_id, quotas, what, raw, coding, encoding, limit
        )
        return _answer(status, body, encoding, retry)
    finally:
        _in_flight -= 1


@router.post(
    "/traces",
    openapi_extra=_OTLP_BODY,
    summary="Receive spans over OTLP/HTTP (protobuf or JSON, gzip)",
    responses=responses(401, 413),
)
async def receive_traces(
    request: Request, principal: PrincipalDep, store: SpanStoreDep
) -> Response:
    """An ``ExportTraceServiceRequest``. Each span is stored once, mapped to a row; a span
    with bad ids is rejected and counted in ``partial_success``, its neighbours kept."""
    return await _receive(request, store, principal.tenant_id, "traces")


@router.post(
    "/logs",
    openapi_extra=_OTLP_BODY,
    summary="Receive GenAI content log records over OTLP/HTTP",
    responses=responses(401, 413),
)
async def receive_logs(request: Request, principal: PrincipalDep, store: SpanStoreDep) -> Response:
    """An ``ExportLogsServiceRequest``. ``gen_ai.client.inference.operation.details`` (and the
    older per-message event) records are joined to their span by its ids, whichever comes
    first; other records are accepted and not kept."""
    return await _receive(request, store, principal.tenant_id, "logs")


def _iso(unix_nano: int) -> str:
    return datetime.fromtimestamp(unix_nano / 1e9, UTC).isoformat()


class SpanOut(BaseModel):
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    service: str | None
    model: str | None
    start_time: str
    end_time: str
    duration_ms: float
    status: str
    llm: bool = Field(description="An LLM call (GenAI operation or OpenInference LLM span).")
    no_content: bool = Field(description="No messages and no output were found: not scored.")
    row: dict[str, Any] = Field(
        description="messages, model_output, scenario_input and metadata, as checks see them."
    )
    scores: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each score: rule, rule_version, check, check_version, status (scored, "
        "error, pending, queued, or a skip: no_content, budget, backlog, cancelled), score, "
        "passed, explanation.",
    )
    received_at: datetime
    attributes: dict[str, Any] | None = None
    events: list[Any] | None = None

    @classmethod
    def of(cls, s: StoredSpan, full: bool, scores: list[SpanScore] | None = None) -> SpanOut:
        return cls(
            trace_id=s.trace_id,
            span_id=s.span_id,
            parent_span_id=s.parent_span_id,
            name=s.name,
            kind=s.kind,
            service=s.service,
            model=s.model,
            start_time=_iso(s.start_unix_nano),
            end_time=_iso(s.end_unix_nano),
            duration_ms=max(0, s.end_unix_nano - s.start_unix_nano) / 1e6,
            status=s.status,
            llm=s.is_llm,
            no_content=s.no_content,
            row=s.row,
            received_at=s.received_at,
            scores=[x.to_json() for x in scores or []],
            attributes=s.attributes if full else None,
            events=s.events if full else None,
        )


class TraceOut(BaseModel):
    trace_id: str
    spans: list[SpanOut]


class SpanPage(BaseModel):
    spans: list[SpanOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")


@router.get("/traces/{trace_id}", responses=responses(401, 404))
def get_trace(
    principal: PrincipalDep,
    store: SpanStoreDep,
    trace_id: Annotated[str, Path(pattern=r"^[0-9a-fA-F]{32}$")],
) -> TraceOut:
    """A trace's spans by start time, with their rows and attributes. Another tenant's trace
    is a 404."""
    spans = store.trace(principal.tenant_id, trace_id)
    scores = _scores(store, principal.tenant_id, spans)
    return TraceOut(
        trace_id=trace_id.lower(),
        spans=[SpanOut.of(s, True, scores.get((s.trace_id, s.span_id))) for s in spans],
    )


def _scores(
    store: SpanStore, tenant_id: str, spans: list[StoredSpan]
) -> dict[tuple[str, str], list[SpanScore]]:
    return score_store(store.engine).scores_of(tenant_id, [(s.trace_id, s.span_id) for s in spans])


def _nano(value: datetime | None) -> int | None:
    """``value`` in nanoseconds since the epoch, within the stored column's range."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return max(-(2**63), min(int(value.timestamp() * 1e9), 2**63 - 1))


@router.get(
    "/spans",
    response_model=SpanPage,
    responses=responses(401, 404, 422),
    openapi_extra={
        "responses": {
            "200": {
                "description": "A page of spans; with `Accept: text/csv` or "
                "`application/x-ndjson`, every matching span's scores (one record a score).",
                "content": {t: {"schema": {"type": "string"}} for t in EXPORT_TYPES},
            }
        }
    },
)
def list_spans(
    request: Request,
    principal: PrincipalDep,
    store: SpanStoreDep,
    since: Annotated[datetime | None, Query(description="Spans started at or after.")] = None,
    until: Annotated[datetime | None, Query(description="Spans started before.")] = None,
    service: Annotated[str | None, Query(max_length=500)] = None,
    model: Annotated[str | None, Query(max_length=500, description="Response model.")] = None,
    no_content: Annotated[bool | None, Query()] = None,
    llm: Annotated[bool | None, Query(description="LLM calls only (or only others).")] = None,
    text: Annotated[
        str | None, Query(max_length=500, description="In the messages or the output.")
    ] = None,
    rule: Annotated[str | None, Query(max_length=100, description="Scored by this rule.")] = None,
    check: Annotated[str | None, Query(max_length=200, description="Scored by this check.")] = None,
    status: Annotated[ScoreStatus | None, Query(description="A score with this status.")] = None,
    passed: Annotated[bool | None, Query(description="A score that passed (or failed).")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Any:
    """Spans, newest first, filtered; cursor-paginated. The score filters (rule, check,
    status, passed) hold on one score of the span. ``Accept: text/csv`` or
    ``application/x-ndjson`` exports every matching span's scores instead of a page."""
    rule_id = None
    if rule is not None:
        rule_id = rule_store(store.engine).get_rule(principal.tenant_id, rule).id
    where = SpanFilter(
        since_unix_nano=_nano(since),
        until_unix_nano=_nano(until),
        service=service,
        model=model,
        no_content=no_content,
        llm=llm,
        text=text,
        rule_id=rule_id,
        check=check,
        score_status=None if status is None else status.value,
        passed=passed,
    )
    accept = request.headers.get("accept", "")
    for media_type in EXPORT_TYPES:
        if media_type in accept:
            return StreamingResponse(
                export_stream(store, principal.tenant_id, where, cursor, media_type),
                media_type=media_type,
                headers={"Content-Disposition": 'attachment; filename="spans"'},
            )
    spans, after = store.spans(principal.tenant_id, where, limit, cursor)
    scores = _scores(store, principal.tenant_id, spans)
    return SpanPage(
        spans=[SpanOut.of(s, False, scores.get((s.trace_id, s.span_id))) for s in spans],
        next_cursor=after,
    )
