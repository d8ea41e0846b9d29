"""``/ui``, sign-in and sign-out, and the health page."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import (
    HTMLResponse,
    RedirectResponse,
    Response,
)

from engine.errors import (
    AuthError,
)
from engine.readiness import readiness
from engine.tenancy.auth import authenticate
from engine.web.headers import cross_site
from engine.web.pages import (
    page_router,
    render,
    services_of,
    sessions_of,
    who,
)
from engine.web.session import COOKIE, csrf_ok, set_cookie

router = page_router()


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
def home() -> RedirectResponse:
    return RedirectResponse("/ui/runs", status_code=303)


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str = "/ui/runs") -> HTMLResponse:
    return render(request, "signin.html", None, next=next if next.startswith("/ui") else "/ui/runs")


@router.post("/signin", response_class=HTMLResponse)
async def signin(request: Request) -> Response:
    refused = cross_site(request.headers)  # login CSRF: no session yet, so no token to check
    if refused is not None:
        return Response(
            f"cross-site sign-in refused ({refused}): open /ui/signin on this server and "
            "sign in there",
            status_code=403,
        )
    form = await request.form()
    key = str(form.get("api_key") or "").strip()
    target = str(form.get("next") or "/ui/runs")
    if not target.startswith("/ui/") or target.startswith("//"):
        target = "/ui/runs"
    try:
        authenticate(services_of(request).store, f"Bearer {key}")
    except AuthError as exc:
        return render(request, "signin.html", None, status_code=401, error=str(exc), next=target)
    token, _ = sessions_of(request).create(key)
    response = RedirectResponse(target, status_code=303)
    set_cookie(request, response, token)
    return response


@router.post("/signout")
async def signout(request: Request) -> Response:
    _, session = who(request)
    form = await request.form()
    if not csrf_ok(session, str(form.get("csrf") or "")):
        return Response("CSRF token missing or wrong: reload the page", status_code=403)
    sessions_of(request).drop(request.cookies.get(COOKIE))
    response = RedirectResponse("/ui/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


@router.get("/health", response_class=HTMLResponse)
def health_page(request: Request) -> HTMLResponse:
    _, session = who(request)
    services = services_of(request)
    ready = readiness(services.settings, services.store, services.runners, services.db).as_json()
    pools = dict(services.runners.pool_sizes())
    workers: dict[str, dict[str, Any]] | None = None
    workers_error = None
    if services.settings.broker_url:
        try:
            workers = services.runs.workers()  # the data `scorebox doctor` shows
        except Exception as exc:  # Celery and kombu raise their own errors
            workers_error = f"could not ask the workers: {exc.__class__.__name__}: {exc}"
    return render(
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
