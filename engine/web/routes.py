"""``/ui``: the dashboard's pages. Thin: parse, call the same services as the API, render."""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, TextLexer
from starlette.concurrency import run_in_threadpool

from engine import catalog
from engine.api.deps import get_llm
from engine.api.problems import status_for
from engine.api.routes.generate import GenerateRequest, run_generation
from engine.api.routes.health import readyz
from engine.api.services import Services
from engine.auth import Principal, authenticate
from engine.catalog import CheckSpec
from engine.contract import Policy
from engine.errors import (
    AuthError,
    CheckValidationError,
    InvalidRequestError,
    NotFoundError,
    ScoreboxError,
)
from engine.runs.compare import compare_runs
from engine.runs.summary import RunSummary
from engine.storage import Run
from engine.web import charts, table
from engine.web.session import COOKIE, Session, SessionStore, csrf_ok, principal_of, set_cookie
from generator.models import Example

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
router = APIRouter(prefix="/ui", include_in_schema=False)
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


class SignInRequired(Exception):
    """No valid session: the page redirects to the sign-in form."""


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def _sessions(request: Request) -> SessionStore:
    sessions: SessionStore = request.app.state.web_sessions
    return sessions


def _who(request: Request) -> tuple[Principal, Session]:
    session = _sessions(request).get(request.cookies.get(COOKIE))
    if session is None:
        raise SignInRequired
    principal = principal_of(_services(request).store, session)
    if principal is None:
        raise SignInRequired
    return principal, session


def _page(
    request: Request, template: str, session: Session | None, status_code: int = 200, **context: Any
) -> HTMLResponse:
    context.update(csrf=session.csrf if session else None, signed_in=session is not None)
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def _not_found(request: Request, session: Session | None, what: str) -> HTMLResponse:
    return _page(request, "not_found.html", session, status_code=404, what=what)


def _run_or_404(request: Request, principal: Principal, run_id: str) -> Run | None:
    try:
        return _services(request).store.get_run(principal.tenant_id, run_id)
    except NotFoundError:
        return None


# ---- sign-in ---------------------------------------------------------------------------


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
def home() -> RedirectResponse:
    return RedirectResponse("/ui/runs", status_code=303)


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/ui/runs") -> HTMLResponse:
    return _page(request, "signin.html", None, next=next if next.startswith("/ui") else "/ui/runs")


@router.post("/signin", response_class=HTMLResponse)
async def signin(request: Request) -> Response:
    form = await request.form()
    key = str(form.get("api_key") or "").strip()
    target = str(form.get("next") or "/ui/runs")
    if not target.startswith("/ui/") or target.startswith("//"):
        target = "/ui/runs"
    try:
        authenticate(_services(request).store, f"Bearer {key}")
    except AuthError as exc:
        return _page(request, "signin.html", None, status_code=401, error=str(exc), next=target)
    token, _ = _sessions(request).create(key)
    response = RedirectResponse(target, status_code=303)
    set_cookie(request, response, token)
    return response


@router.post("/signout")
async def signout(request: Request) -> Response:
    _, session = _who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return Response("CSRF token missing or wrong: reload the page", status_code=403)
    _sessions(request).drop(request.cookies.get(COOKIE))
    response = RedirectResponse("/ui/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


# ---- runs ------------------------------------------------------------------------------


@router.get("/runs", response_class=HTMLResponse)
def runs_page(
    request: Request, status: str | None = None, label: str | None = None
) -> HTMLResponse:
    principal, session = _who(request)
    store = _services(request).store
    found = store.list_runs(principal.tenant_id, 200)
    if status:
        found = [r for r in found if r.status.value == status]
    if label:
        key, _, value = label.partition("=")
        found = [r for r in found if key in r.labels and (not value or str(r.labels[key]) == value)]
    return _page(
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
    session = _sessions(request).get(request.cookies.get(COOKIE))
    principal = None if session is None else principal_of(_services(request).store, session)
    if principal is None:
        return JSONResponse({"detail": "sign in again"}, status_code=401)
    found: dict[str, dict[str, Any]] = {}
    for run_id in (run or [])[:MAX_PROGRESS_RUNS]:
        got = _run_or_404(request, principal, run_id)
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
    out = []
    for s, bins in zip(summary.checks, summary.histograms, strict=True):
        if s.pass_rate is not None:
            passed = round(s.pass_rate * s.scored)
            chart = charts.pass_fail_svg(s.check, passed, s.scored - passed)
        else:
            chart = charts.histogram_svg(s.check, bins)
        out.append({"summary": s, "chart": chart, "statuses": charts.status_svg(s.check, s.counts)})
    return out


def _table(request: Request, run: Run, after: str | None) -> dict[str, Any]:
    """The row table's context: one keyset page and the links around it."""
    f = _filter(request, run)
    db = _services(request).db
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
    principal, session = _who(request)
    run = _run_or_404(request, principal, run_id)
    if run is None:
        return _not_found(request, session, f"run {run_id}")
    summary = _services(request).runs.summary(run)  # stored once the run has finished
    return _page(
        request,
        "run.html",
        session,
        run=run,
        done=summary.done,
        checks=_charts(summary),
        **_table(request, run, after),
    )


@router.get("/runs/{run_id}/rows", response_class=HTMLResponse, dependencies=[TABLE_QUERY])
def rows_page(
    request: Request,
    run_id: str,
    after: str | None = None,
) -> HTMLResponse:
    """The row table alone (filters, pages): no summary to compute, so it stays fast."""
    principal, session = _who(request)
    run = _run_or_404(request, principal, run_id)
    if run is None:
        return _not_found(request, session, f"run {run_id}")
    return _page(request, "rows.html", session, run=run, **_table(request, run, after))


@router.get("/runs/{run_id}/export.{fmt}", dependencies=[TABLE_QUERY])
def export(
    request: Request,
    run_id: str,
    fmt: str,
) -> Response:
    principal, session = _who(request)
    run = _run_or_404(request, principal, run_id)
    if run is None or fmt not in ("csv", "jsonl"):
        return _not_found(request, session, f"run {run_id}")
    rows = table.iter_filtered(_services(request).db, run.id, _filter(request, run))
    fields = ["row_index", "row_id", "status", "score", "explanation", "error", "model_output"]

    def as_csv() -> Iterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(fields)
        for r in rows:
            writer.writerow([getattr(r, k) for k in fields])
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue()

    def as_jsonl() -> Iterator[str]:
        for r in rows:
            yield json.dumps({k: getattr(r, k) for k in fields}) + "\n"

    media = "text/csv" if fmt == "csv" else "application/x-ndjson"
    return StreamingResponse(
        as_csv() if fmt == "csv" else as_jsonl(),
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{run.id}.{fmt}"'},
    )


@router.get("/runs/{run_id}/rows/{row_index}", response_class=HTMLResponse)
def row_page(request: Request, run_id: str, row_index: int) -> HTMLResponse:
    principal, session = _who(request)
    store = _services(request).store
    run = _run_or_404(request, principal, run_id)
    if run is None or not 0 <= row_index < run.row_count:
        return _not_found(request, session, f"row {row_index} of run {run_id}")
    data = store.load_rows(run.id, [row_index]).get(row_index, {})
    found = table.results_of_row(_services(request).db, run.id, row_index)
    results = [(check, found.get(index)) for index, check in enumerate(run.checks)]
    return _page(
        request,
        "row.html",
        session,
        run=run,
        row_index=row_index,
        data=data,
        results=results,
        metadata=json.dumps(data.get("metadata"), indent=2) if data.get("metadata") else None,
    )


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: str = "", b: str = "") -> HTMLResponse:
    principal, session = _who(request)
    store = _services(request).store
    runs = store.list_runs(principal.tenant_id, 200)
    comparison = None
    error = None
    if a and b:
        try:
            comparison = compare_runs(store, principal.tenant_id, a, b)
        except NotFoundError:
            return _not_found(request, session, f"run {a} or {b}")
        except ScoreboxError as exc:
            error = str(exc)
    return _page(request, "compare.html", session, runs=runs, a=a, b=b, cmp=comparison, error=error)


# ---- checks ----------------------------------------------------------------------------


@router.get("/checks", response_class=HTMLResponse)
def checks_page(request: Request) -> HTMLResponse:
    principal, session = _who(request)
    services = _services(request)
    own = services.store.list_checks(principal.tenant_id, all_versions=True)
    by_name: dict[str, list[Any]] = {}
    for c in own:
        by_name.setdefault(c.name, []).append(c)
    builtins = sorted(services.runs.builtins.values(), key=lambda b: b.name)
    return _page(request, "checks.html", session, checks=by_name, builtins=builtins)


GENERATE_DEFAULTS: dict[str, Any] = {
    "description": "",
    "examples": "",
    "requires_scenario_input": False,
    "requires_scenario_result": False,
    "output_data_type": "bool",
    "max_attempts": "",
}


@router.get("/checks/generate", response_class=HTMLResponse)
def generate_form(request: Request) -> HTMLResponse:
    _, session = _who(request)
    return _page(request, "generate.html", session, form=GENERATE_DEFAULTS, result=None)


def _examples(text: str) -> list[Example]:
    """Labelled examples, one JSON object a line (as ``scorebox check generate --example``)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append(Example.model_validate(json.loads(line)))
        except (ValueError, ValidationError) as exc:
            raise InvalidRequestError(
                f"example on line {number}: {exc}; expected "
                '{"row": {"model_output": "..."}, "expected": true}'
            ) from exc
    return found


@router.post("/checks/generate", response_class=HTMLResponse)
async def generate(request: Request) -> Response:
    """Generate a code check from a description: ``POST /v1/checks/generate``'s service."""
    principal, session = _who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return Response("CSRF token missing or wrong: reload the page", status_code=403)
    services = _services(request)
    values: dict[str, Any] = {
        "description": str(form.get("description") or "").strip(),
        "examples": str(form.get("examples") or "").replace("\r\n", "\n"),
        "requires_scenario_input": form.get("requires_scenario_input") == "on",
        "requires_scenario_result": form.get("requires_scenario_result") == "on",
        "output_data_type": str(form.get("output_data_type") or "bool"),
        "max_attempts": str(form.get("max_attempts") or "").strip(),
    }
    try:
        examples = _examples(values["examples"])
        body = GenerateRequest(
            description=values["description"],
            requires_scenario_input=values["requires_scenario_input"],
            requires_scenario_result=values["requires_scenario_result"],
            output_data_type=values["output_data_type"],
            check_type="code",
            examples=examples,
            max_attempts=int(values["max_attempts"]) if values["max_attempts"] else None,
        )
        llm = get_llm(request, services)
        result = await run_in_threadpool(run_generation, services, principal, llm, body)
    except (ValueError, ValidationError) as exc:  # a bad field: int(), GenerateRequest
        return _generate_error(request, session, values, 422, str(exc))
    except ScoreboxError as exc:  # no LLM configured, the LLM or the sandbox failed, a quota
        return _generate_error(request, session, values, status_for(exc)[0], str(exc))
    best = next((a for a in reversed(result.attempts) if a.code and a.code == result.code), None)
    return _page(
        request,
        "generate.html",
        session,
        form=values,
        result=result,
        examples=examples,
        best=best,
        attempts=[(a, _highlight(a.code, True) if a.code else None) for a in result.attempts],
    )


def _generate_error(
    request: Request, session: Session, values: dict[str, Any], status: int, error: str
) -> HTMLResponse:
    return _page(
        request, "generate.html", session, status_code=status, form=values, result=None, error=error
    )


def _highlight(text: str, python: bool) -> str:
    lexer = PythonLexer() if python else TextLexer()
    html: str = highlight(text, lexer, HtmlFormatter(linenos="table", cssclass="source"))
    return html


@router.get("/checks/{name}", response_class=HTMLResponse)
def check_page(
    request: Request, name: str, version: int | None = None, saved: str | None = None
) -> HTMLResponse:
    principal, session = _who(request)
    services = _services(request)
    try:
        check = catalog.get_check(services.store, principal.tenant_id, name, version)
    except NotFoundError:
        return _not_found(request, session, f"check {name}")
    versions = [
        c for c in services.store.list_checks(principal.tenant_id, True) if c.name == check.name
    ]
    text = check.source if check.kind == "code" else check.prompt_template
    report, _ = catalog.validate_spec(_spec_of(check), services.runs.quotas(principal.tenant_id))
    return _page(
        request,
        "check.html",
        session,
        check=check,
        versions=versions,
        source=_highlight(text or "", check.kind == "code"),
        report=report,
        saved=saved,
    )


def _spec_of(check: Any) -> CheckSpec:
    return CheckSpec(
        name=check.name,
        description=check.description,
        tags=list(check.tags),
        kind=check.kind,
        source=check.source,
        prompt_template=check.prompt_template,
        check_type=check.check_type,
        policy=check.policy,
    )


@router.get("/checks/{name}/diff", response_class=HTMLResponse)
def diff_page(request: Request, name: str, a: int, b: int) -> HTMLResponse:
    principal, session = _who(request)
    store = _services(request).store
    try:
        old = catalog.get_check(store, principal.tenant_id, name, a)
        new = catalog.get_check(store, principal.tenant_id, name, b)
    except NotFoundError:
        return _not_found(request, session, f"check {name}")
    lines = list(
        difflib.unified_diff(
            (old.source or old.prompt_template or "").splitlines(),
            (new.source or new.prompt_template or "").splitlines(),
            f"{name}@{a}",
            f"{name}@{b}",
            lineterm="",
        )
    )
    return _page(request, "diff.html", session, name=name, a=a, b=b, lines=lines)


@router.get("/checks/{name}/edit", response_class=HTMLResponse)
def edit_page(request: Request, name: str) -> HTMLResponse:
    principal, session = _who(request)
    store = _services(request).store
    source = "def evaluate(model_output: str) -> bool:\n    return bool(model_output)\n"
    description = ""
    if name != "new":
        try:
            check = catalog.get_check(store, principal.tenant_id, name)
        except NotFoundError:
            return _not_found(request, session, f"check {name}")
        source, description = check.source or "", check.description or ""
    return _page(
        request,
        "edit.html",
        session,
        name="" if name == "new" else name,
        source=source,
        description=description,
        issues=[],
    )


@router.post("/checks/validate")
async def validate(request: Request) -> JSONResponse:
    """The editor's validate-as-you-type: ``catalog.validate_spec``, as ``/v1/checks/validate``."""
    principal, session = _who(request)
    if not csrf_ok(session, request.headers.get("x-csrf-token")):
        return JSONResponse({"detail": "CSRF token missing or wrong"}, status_code=403)
    body = await request.json()
    try:
        spec = CheckSpec(
            name=str(body.get("name") or "check"), kind="code", source=str(body.get("source", ""))
        )
    except ValidationError as exc:
        return JSONResponse({"valid": False, "issues": [], "detail": str(exc)}, status_code=422)
    report, _ = catalog.validate_spec(spec, _services(request).runs.quotas(principal.tenant_id))
    return JSONResponse(report.model_dump(mode="json"))


@router.post("/checks/save", response_class=HTMLResponse)
async def save(request: Request) -> Response:
    principal, session = _who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return Response("CSRF token missing or wrong: reload the page", status_code=403)
    services = _services(request)
    name = str(form.get("name") or "").strip()
    source = str(form.get("source") or "").replace("\r\n", "\n")
    description = str(form.get("description") or "") or None
    policy = Policy.RESTRICTED if form.get("policy") == "restricted" else Policy.STANDARD
    issues: list[Any] = []
    try:
        spec = CheckSpec(
            name=name, kind="code", source=source, description=description, policy=policy
        )
        outcome = catalog.save_check(
            services.store, principal, spec, services.runs.quotas(principal.tenant_id)
        )
    except ValidationError as exc:
        issues = [{"line": None, "col": None, "message": e["msg"]} for e in exc.errors()]
    except CheckValidationError as exc:
        issues = [i.model_dump() for i in exc.report.issues if i.severity == "error"]
    except ScoreboxError as exc:
        issues = [{"line": None, "col": None, "message": str(exc)}]
    else:
        check = outcome.check
        state = "new" if outcome.created else "unchanged"
        return RedirectResponse(
            f"/ui/checks/{check.name}?version={check.version}&saved={state}", status_code=303
        )
    return _page(
        request,
        "edit.html",
        session,
        status_code=422,
        name=name,
        source=source,
        description=description or "",
        issues=issues,
        policy=policy.value,
    )


# ---- health ----------------------------------------------------------------------------


@router.get("/health", response_class=HTMLResponse)
def health_page(request: Request) -> HTMLResponse:
    _, session = _who(request)
    services = _services(request)
    ready = json.loads(bytes(readyz(services).body))
    pools = dict(services.engines.pool_sizes())
    workers: dict[str, dict[str, Any]] | None = None
    workers_error = None
    if services.settings.broker_url:
        try:
            workers = services.runs.workers()  # the data `scorebox doctor` shows
        except Exception as exc:  # Celery and kombu raise their own errors
            workers_error = f"could not ask the workers: {exc.__class__.__name__}: {exc}"
    return _page(
        request,
        "health.html",
        session,
        ready=ready,
        pools=pools,
        workers=workers,
        workers_error=workers_error,
        settings=services.settings,
        queue=services.runs.queue_depth(),
        in_flight=services.runs.jobs_in_flight(),
    )
