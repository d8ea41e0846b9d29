"""``/``: where a first visit lands.

A browser (``Accept: text/html``) is sent to the dashboard: ``/ui/runs``, which sends a
visitor without a session on to the sign-in form (the session cookie lives under
``/ui``, so ``/`` cannot tell). Any other client gets a small JSON document: the API's
name and version and links to the docs, the OpenAPI schema and the dashboard.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

router = APIRouter(include_in_schema=False)

#: Where a browser goes: the runs page, or its sign-in when signed out.
DASHBOARD_HOME = "/ui/runs"


def wants_html(accept: str) -> bool:
    """True when an Accept header asks for HTML (what browsers send for a page)."""
    types = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"text/html", "application/xhtml+xml"})


def index(version: str) -> dict[str, Any]:
    """The JSON an API client gets at ``/``."""
    return {
        "name": "scorebox",
        "version": version,
        "api": {"v1": "/v1", "okareo": "/v0"},
        "links": {
            "docs": "/docs",
            "openapi": "/openapi.json",
            "dashboard": "/ui",
            "health": "/healthz",
        },
    }


@router.get("/")
def root(request: Request) -> Response:
    if wants_html(request.headers.get("accept", "")):
        return RedirectResponse(DASHBOARD_HOME, status_code=303)
    return JSONResponse(index(request.app.version))
