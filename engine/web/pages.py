"""What every dashboard page shares: the templates, the signed-in principal, rendering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from engine.errors import NotFoundError
from engine.http.services import Services
from engine.storage import Run
from engine.tenancy.auth import Principal
from engine.web import display
from engine.web.session import COOKIE, Session, SessionStore, principal_of

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["num"] = display.number
templates.env.globals["shown"] = display.shown


class SignInRequired(Exception):
    """No valid session: the page redirects to the sign-in form."""


def page_router() -> APIRouter:
    """A page family's router: under ``/ui``, out of the OpenAPI schema."""
    return APIRouter(prefix="/ui", include_in_schema=False)


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def sessions_of(request: Request) -> SessionStore:
    sessions: SessionStore = request.app.state.web_sessions
    return sessions


def who(request: Request) -> tuple[Principal, Session]:
    """The signed-in principal and session; ``SignInRequired`` without one."""
    session = sessions_of(request).get(request.cookies.get(COOKIE))
    if session is None:
        raise SignInRequired
    principal = principal_of(services_of(request).store, session)
    if principal is None:
        raise SignInRequired
    return principal, session


def render(
    request: Request, template: str, session: Session | None, status_code: int = 200, **context: Any
) -> HTMLResponse:
    context.update(csrf=session.csrf if session else None, signed_in=session is not None)
    return templates.TemplateResponse(request, template, context, status_code=status_code)


def not_found(request: Request, session: Session | None, what: str) -> HTMLResponse:
    return render(request, "not_found.html", session, status_code=404, what=what)


def run_or_none(request: Request, principal: Principal, run_id: str) -> Run | None:
    """The tenant's run, or None when it has no such run."""
    try:
        return services_of(request).store.get_run(principal.tenant_id, run_id)
    except NotFoundError:
        return None
