"""``/ui/runs``: the runs list, live progress, a run's page, its row table and export, one row."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, Query, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)

from engine.agreement.corrected import with_corrected
from engine.runs.export import to_csv
from engine.runs.summary import RunSummary, results_done
from engine.storage import Run
from engine.storage.label_sql import label_store
from engine.web import charts, table
from engine.web.pages import (
    not_found,
    page_router,
    render,
    run_or_none,
    services_of,
    sessions_of,
    who,
)
from engine.web.session import COOKIE, principal_of

router = page_router()

#: Runs one progress poll may ask about (the runs page lists at most 200).
MAX_PROGRESS_RUNS = 200
STATUSES = (
    "ok",
    "error",
    "timeout",
    "oom",
    "invalid_score",
    "output_limit",
    "crashed",
    "skipped",
    "judge_error",
    "sandbox_error",
)


@router.get("/runs", response_class=HTMLResponse)
def runs_page(
    request: Request, status: str | None = None, label: str | None = None
) -> HTMLResponse:
    principal, session = who(request)
    store = services_of(request).store
    found = store.list_runs(principal.tenant_id, 200)
    if status:
        found = [r for r in found if r.status.value == status]
    if label:
        key, _, value = label.partition("=")
        found = [r for r in found if key in r.labels and (not value or str(r.labels[key]) == value)]
    return render(
        request,
        "runs.html",
        session,
        runs=found,
        status=status or "",
        label=label or "",
        statuses=("queued", "running", "succeeded", "failed", "cancelled"),
    )


@router.get("/progress")
def progress(request: Request, run: Annotated[list[str] | None, Query()] = None) -> JSONResponse:
    """Status and progress of the signed-in tenant's runs (``?run=ID``, repeated), for live.js.

    A run of another tenant, or no run at all, is simply absent from the answer.
    Each run is one primary-key read: no result is counted or scanned.
    """
    session = sessions_of(request).get(request.cookies.get(COOKIE))
    principal = None if session is None else principal_of(services_of(request).store, session)
    if principal is None:
        return JSONResponse({"detail": "sign in again"}, status_code=401)
    found: dict[str, dict[str, Any]] = {}
    for run_id in (run or [])[:MAX_PROGRESS_RUNS]:
        got = run_or_none(request, principal, run_id)
        if got is not None:
            found[got.id] = {
                "status": got.status.value,
                "active": got.status.active,
                "done": got.results_done,
                "total": got.total_results,
            }
    return JSONResponse({"runs": found}, headers={"Cache-Control": "no-store"})


def _table_query(
    check: str | None = None,
    status: str | None = None,
    min_score: Annotated[str | None, Query(alias="min")] = None,
    max_score: Annotated[str | None, Query(alias="max")] = None,
    q: str | None = None,
    sort: str | None = None,
) -> None:
    """Declares the row table's filter parameters, which ``_filter`` reads (a bad value
    falls back to the default instead of failing the page)."""


TABLE_QUERY = Depends(_table_query)


def _filter(request: Request, run: Run) -> table.TableFilter:
    """The table's filter from the query string (declared by ``TABLE_QUERY``)."""
    q = request.query_params

    def number(name: str) -> float | None:
        try:
            return float(q[name]) if q.get(name) else None
        except ValueError:
            return None

    check_index = 0
    if q.get("check"):
        names = [c.name for c in run.checks]
        check_index = names.index(q["check"]) if q["check"] in names else 0
    sort = q.get("sort") or "row"
    return table.TableFilter(
        check_index=check_index,
        status=q.get("status") if q.get("status") in STATUSES else None,
        min_score=number("min"),
        max_score=number("max"),
        text=q.get("q") or None,
        sort=sort if sort in table.SORTS else "row",
    )


def _charts(summary: RunSummary) -> list[dict[str, Any]]:
    """Per check: its scores chart (pass/fail or histogram) and, apart, its statuses."""
    out = []
    for s, bins in zip(summary.checks, summary.histograms, strict=True):
        if s.pass_rate is not None:
            passed = round(s.pass_rate * s.scored)
            chart = charts.pass_fail_svg(s.check, passed, s.scored - passed)
        else:
            chart = charts.histogram_svg(s.check, bins, s.max)
        out.append({"summary": s, "chart": chart, "statuses": charts.status_svg(s.check, s.counts)})
    return out


def _table(request: Request, run: Run, after: str | None) -> dict[str, Any]:
    """The row table's context: one keyset page and the links around it."""
    f = _filter(request, run)
    db = services_of(request).db
    try:
        page = table.read_page(db, run.id, f, after)
    except ValueError:  # a cursor edited by hand: start again
        page = table.read_page(db, run.id, f, None)
    params = {k: v for k, v in request.query_params.items() if k != "after" and v}
    rows_url = f"/ui/runs/{run.id}/rows?"
    return {
        "page": page,
        "f": f,
        "check_name": run.checks[f.check_index].name if run.checks else "",
        "params": params,
        "export_query": urlencode(params),
        "next_url": None
        if page.next_cursor is None
        else rows_url + urlencode({**params, "after": page.next_cursor}),
        "first_url": rows_url + urlencode(params),
        "statuses": STATUSES,
        "sorts": table.SORTS,
    }


@router.get("/runs/{run_id}", response_class=HTMLResponse, dependencies=[TABLE_QUERY])
def run_page(
    request: Request,
    run_id: str,
    after: str | None = None,
) -> HTMLResponse:
    principal, session = who(request)
    run = run_or_none(request, principal, run_id)
    if run is None:
        return not_found(request, session, f"run {run_id}")
    services = services_of(request)
    summary = services.runs.summary(run)  # stored once the run has finished
    labels = request.query_params.get("labels") or None
    if labels is not None or not run.status.active:  # a finished run: its required labels
        corrected = with_corrected(
            services.store, label_store(services.db), principal.tenant_id, summary.checks, labels
        )
        summary = summary.model_copy(update={"checks": corrected})
    return render(
        request,
        "run.html",
        session,
        run=run,
        done=results_done(run, summary),
        checks=_charts(summary),
        corrected=any(s.corrected_pass_rate is not None for s in summary.checks),
        **_table(request, run, after),
    )


@router.get("/runs/{run_id}/rows", response_class=HTMLResponse, dependencies=[TABLE_QUERY])
def rows_page(
    request: Request,
    run_id: str,
    after: str | None = None,
) -> HTMLResponse:
    """The row table alone (filters, pages): no summary to compute, so it stays fast."""
    principal, session = who(request)
    run = run_or_none(request, principal, run_id)
    if run is None:
        return not_found(request, session, f"run {run_id}")
    return render(request, "rows.html", session, run=run, **_table(request, run, after))


@router.get("/runs/{run_id}/export.{fmt}", dependencies=[TABLE_QUERY])
def export(
    request: Request,
    run_id: str,
    fmt: str,
) -> Response:
    principal, session = who(request)
    run = run_or_none(request, principal, run_id)
    if run is None or fmt not in ("csv", "jsonl"):
        return not_found(request, session, f"run {run_id}")
    chosen = _filter(request, run)
    rows = table.iter_filtered(services_of(request).db, run.id, chosen)
    check = run.checks[chosen.check_index]
    records = (r.export_record(check.name, check.version) for r in rows)

    def as_csv() -> Iterator[str]:  # the columns and cells of every other CSV export
        header = True
        while batch := list(itertools.islice(records, 500)):
            text = to_csv(batch)
            yield text if header else text.split("\r\n", 1)[1]
            header = False
        if header:
            yield to_csv([])

    def as_jsonl() -> Iterator[str]:
        for r in records:
            yield json.dumps(r, ensure_ascii=False) + "\n"

    media = "text/csv" if fmt == "csv" else "application/x-ndjson"
    return StreamingResponse(
        as_csv() if fmt == "csv" else as_jsonl(),
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{run.id}.{fmt}"'},
    )


@router.get("/runs/{run_id}/rows/{row_index}", response_class=HTMLResponse)
def row_page(request: Request, run_id: str, row_index: int) -> HTMLResponse:
    principal, session = who(request)
    store = services_of(request).store
    run = run_or_none(request, principal, run_id)
    if run is None or not 0 <= row_index < run.row_count:
        return not_found(request, session, f"row {row_index} of run {run_id}")
    data = store.load_rows(run.id, [row_index]).get(row_index, {})
    found = table.results_of_row(services_of(request).db, run.id, row_index)
    results = [(check, found.get(index)) for index, check in enumerate(run.checks)]
    return render(
        request,
        "row.html",
        session,
        run=run,
        row_index=row_index,
        data=data,
        results=results,
    )
