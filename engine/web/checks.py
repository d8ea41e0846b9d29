"""``/ui/checks``: the check list, a check's page and diffs, the editor, the generate form."""

from __future__ import annotations

import difflib
import json
from typing import Any

from fastapi import Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from pydantic import ValidationError
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, TextLexer
from starlette.concurrency import run_in_threadpool

from engine import catalog, generation
from engine.agreement.required import required_by_id
from engine.audit import hooks
from engine.calibration.gate import PASSED
from engine.catalog.origin import PushedOrigin
from engine.catalog.spec import CheckSpec, validate_spec
from engine.contract import Policy
from engine.errors import (
    CheckValidationError,
    InvalidRequestError,
    NotFoundError,
    ScoreboxError,
)
from engine.http.deps import get_llm
from engine.http.problems import status_for
from engine.storage.label_sql import label_store
from engine.web.pages import (
    not_found,
    page_router,
    render,
    services_of,
    who,
)
from engine.web.session import Session, csrf_ok

router = page_router()


@router.get("/checks", response_class=HTMLResponse)
def checks_page(request: Request) -> HTMLResponse:
    principal, session = who(request)
    services = services_of(request)
    own = services.store.list_checks(principal.tenant_id, all_versions=True)
    by_name: dict[str, list[Any]] = {}
    for c in own:
        by_name.setdefault(c.name, []).append(c)
    builtins = sorted(services.runs.builtins.values(), key=lambda b: b.name)
    judged = required_by_id(
        services.store,
        label_store(services.db),
        principal.tenant_id,
        [(c.id, c.name, c.version) for c in own],
    )
    # a name is flagged by its versions' requirements that are not met now
    flags = {
        name: [judged[c.id] for c in versions if judged.get(c.id, {}).get("status") != PASSED]
        for name, versions in by_name.items()
        if any(c.id in judged for c in versions)
    }
    return render(
        request, "checks.html", session, checks=by_name, builtins=builtins, agreement=flags
    )


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
    _, session = who(request)
    return render(request, "generate.html", session, form=GENERATE_DEFAULTS, result=None)


def _examples(text: str) -> list[generation.Example]:
    """Labelled examples, one JSON object a line (as ``scorebox check generate --example``)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append(generation.Example.model_validate(json.loads(line)))
        except (ValueError, ValidationError) as exc:
            raise InvalidRequestError(
                f"example on line {number}: {exc}; expected "
                '{"row": {"model_output": "..."}, "expected": true}'
            ) from exc
    return found


@router.post("/checks/generate", response_class=HTMLResponse)
async def generate(request: Request) -> Response:
    """Generate a code check from a description: ``POST /v1/checks/generate``'s service."""
    principal, session = who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return Response("CSRF token missing or wrong: reload the page", status_code=403)
    services = services_of(request)
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
        body = generation.GenerateRequest(
            description=values["description"],
            requires_scenario_input=values["requires_scenario_input"],
            requires_scenario_result=values["requires_scenario_result"],
            output_data_type=values["output_data_type"],
            kind="code",
            examples=examples,
            max_attempts=int(values["max_attempts"]) if values["max_attempts"] else None,
        )
        llm = get_llm(request, services)
        result = await run_in_threadpool(
            generation.generate_request, services.runs, services.settings, principal, llm, body
        )
    except (ValueError, ValidationError) as exc:  # a bad field: int(), GenerateRequest
        return _generate_error(request, session, values, 422, str(exc))
    except ScoreboxError as exc:  # no LLM configured, the LLM or the sandbox failed, a quota
        return _generate_error(request, session, values, status_for(exc)[0], str(exc))
    best = next((a for a in reversed(result.attempts) if a.code and a.code == result.code), None)
    return render(
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
    return render(
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
    principal, session = who(request)
    services = services_of(request)
    try:
        check = catalog.get_check(services.store, principal.tenant_id, name, version)
    except NotFoundError:
        return not_found(request, session, f"check {name}")
    versions = [
        c for c in services.store.list_checks(principal.tenant_id, True) if c.name == check.name
    ]
    text = check.source if check.kind == "code" else check.prompt_template
    report, _ = validate_spec(
        _spec_of(check), services.runs.quotas(principal.tenant_id), services.runs.packages
    )
    return render(
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
    principal, session = who(request)
    store = services_of(request).store
    try:
        old = catalog.get_check(store, principal.tenant_id, name, a)
        new = catalog.get_check(store, principal.tenant_id, name, b)
    except NotFoundError:
        return not_found(request, session, f"check {name}")
    lines = list(
        difflib.unified_diff(
            (old.source or old.prompt_template or "").splitlines(),
            (new.source or new.prompt_template or "").splitlines(),
            f"{name}@{a}",
            f"{name}@{b}",
            lineterm="",
        )
    )
    return render(request, "diff.html", session, name=name, a=a, b=b, lines=lines)


@router.get("/checks/{name}/edit", response_class=HTMLResponse)
def edit_page(request: Request, name: str) -> HTMLResponse:
    principal, session = who(request)
    store = services_of(request).store
    source = "def evaluate(model_output: str) -> bool:\n    return bool(model_output)\n"
    description = ""
    if name != "new":
        try:
            check = catalog.get_check(store, principal.tenant_id, name)
        except NotFoundError:
            return not_found(request, session, f"check {name}")
        source, description = check.source or "", check.description or ""
    return render(
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
    """The editor's validate-as-you-type: ``validate_spec``, as ``/v1/checks/validate``."""
    principal, session = who(request)
    if not csrf_ok(session, request.headers.get("x-csrf-token")):
        return JSONResponse({"detail": "CSRF token missing or wrong"}, status_code=403)
    body = await request.json()
    try:
        spec = CheckSpec(
            name=str(body.get("name") or "check"), kind="code", source=str(body.get("source", ""))
        )
    except ValidationError as exc:
        return JSONResponse({"valid": False, "issues": [], "detail": str(exc)}, status_code=422)
    runs = services_of(request).runs
    report, _ = validate_spec(spec, runs.quotas(principal.tenant_id), runs.packages)
    return JSONResponse(report.model_dump(mode="json"))


@router.post("/checks/save", response_class=HTMLResponse)
async def save(request: Request) -> Response:
    principal, session = who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return Response("CSRF token missing or wrong: reload the page", status_code=403)
    services = services_of(request)
    name = str(form.get("name") or "").strip()
    source = str(form.get("source") or "").replace("\r\n", "\n")
    description = str(form.get("description") or "") or None
    policy = Policy.RESTRICTED if form.get("policy") == "restricted" else Policy.STANDARD
    # the generate page's save form says so; the editor's is a push like any other
    origin: PushedOrigin = "generated" if form.get("origin") == "generated" else "pushed"
    issues: list[Any] = []
    try:
        spec = CheckSpec(
            name=name,
            kind="code",
            source=source,
            description=description,
            policy=policy,
            origin=origin,
        )
        outcome = catalog.save_check(
            services.store,
            principal,
            spec,
            services.runs.quotas(principal.tenant_id),
            services.runs.packages,
        )
        hooks.check_pushed(services.audit, principal, "ui", outcome)
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
    return render(
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
