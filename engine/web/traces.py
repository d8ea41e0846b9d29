"""``/ui/traces``: production traffic as it came in over OTLP.

The list shows the tenant's LLM spans, newest first, filtered like ``GET /v1/spans``;
a trace's page draws its spans as a tree with their durations on one time axis, and
each LLM span's messages, output and the scores its rules gave it. The same store as the API
(``engine.storage.span_sql``): another tenant's trace is a 404 here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from engine.errors import InvalidRequestError, NotFoundError
from engine.storage.score_sql import score_store
from engine.storage.span_reads import MAX_PAGE, SpanFilter, StoredSpan
from engine.storage.span_sql import span_store
from engine.web.pages import not_found, page_router, render, services_of, who

router = page_router()

PAGE = 50


@dataclass(frozen=True)
class TreeSpan:
    """One span placed on the trace's page: its depth in the tree and its bar."""

    span: StoredSpan
    depth: int
    offset_pct: float  # where the bar starts, as a share of the trace's time window
    width_pct: float
    duration_ms: float
    started: str


def _started(unix_nano: int) -> str:
    moment = datetime.fromtimestamp(unix_nano / 1e9, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def span_tree(spans: list[StoredSpan]) -> list[TreeSpan]:
    """The spans in tree order (a parent before its children, siblings by start time),
    each with its depth and its bar on the trace's time axis. A span whose parent is not
    stored (not exported yet, or from another service) is a root."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[StoredSpan]] = {}
    for s in spans:
        parent = s.parent_span_id if s.parent_span_id in ids else None
        children.setdefault(parent, []).append(s)
    for siblings in children.values():
        siblings.sort(key=lambda s: (s.start_unix_nano, s.span_id))
    start = min((s.start_unix_nano for s in spans), default=0)
    end = max((s.end_unix_nano for s in spans), default=start)
    window = max(end - start, 1)
    out: list[TreeSpan] = []
    seen: set[str] = set()
    stack: list[tuple[StoredSpan, int]] = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        s, depth = stack.pop()
        if s.span_id in seen:  # a cycle in parent ids (a broken exporter): drawn once
            continue
        seen.add(s.span_id)
        length = max(s.end_unix_nano - s.start_unix_nano, 0)
        out.append(
            TreeSpan(
                span=s,
                depth=depth,
                offset_pct=round(100 * (s.start_unix_nano - start) / window, 2),
                width_pct=max(round(100 * length / window, 2), 0.5),
                duration_ms=length / 1e6,
                started=_started(s.start_unix_nano),
            )
        )
        stack.extend((c, depth + 1) for c in reversed(children.get(s.span_id, [])))
    # spans only reachable through a cycle have no root: shown last, at the top level
    out.extend(
        TreeSpan(
            s,
            0,
            0.0,
            100.0,
            max(s.end_unix_nano - s.start_unix_nano, 0) / 1e6,
            _started(s.start_unix_nano),
        )
        for s in spans
        if s.span_id not in seen
    )
    return out


@router.get("/traces", response_class=HTMLResponse)
def traces_page(
    request: Request,
    service: str = Query("", max_length=500),
    model: str = Query("", max_length=500),
    q: str = Query("", max_length=500),
    cursor: str | None = Query(None, max_length=200),
) -> HTMLResponse:
    principal, session = who(request)
    store = span_store(services_of(request).db)
    where = SpanFilter(service=service or None, model=model or None, text=q or None, llm=True)
    try:
        spans, after = store.spans(principal.tenant_id, where, min(PAGE, MAX_PAGE), cursor)
    except InvalidRequestError:  # a cursor that is not one of ours: the first page
        spans, after = store.spans(principal.tenant_id, where, min(PAGE, MAX_PAGE), None)
    rows = [
        {
            "span": s,
            "started": _started(s.start_unix_nano),
            "duration_ms": max(s.end_unix_nano - s.start_unix_nano, 0) / 1e6,
        }
        for s in spans
    ]
    return render(
        request,
        "traces.html",
        session,
        rows=rows,
        service=service,
        model=model,
        q=q,
        next_cursor=after,
    )


@router.get("/traces/{trace_id}", response_class=HTMLResponse)
def trace_page(request: Request, trace_id: str) -> HTMLResponse:
    principal, session = who(request)
    if len(trace_id) != 32 or any(c not in "0123456789abcdefABCDEF" for c in trace_id):
        return not_found(request, session, f"trace {trace_id!r}")
    try:
        spans = span_store(services_of(request).db).trace(principal.tenant_id, trace_id)
    except NotFoundError:
        return not_found(request, session, f"trace {trace_id.lower()}")
    tree = span_tree(spans)
    found = score_store(services_of(request).db).scores_of(
        principal.tenant_id, [(s.trace_id, s.span_id) for s in spans]
    )
    return render(
        request,
        "trace.html",
        session,
        trace_id=trace_id.lower(),
        tree=tree,
        scores={span_id: found[(trace, span_id)] for trace, span_id in found},
        window_ms=(
            (max(s.end_unix_nano for s in spans) - min(s.start_unix_nano for s in spans)) / 1e6
        ),
    )
