"""The web dashboard served by ``scorebox serve`` under ``/ui``.

Server-rendered Jinja2 pages, SVG charts drawn on the server, one small
stylesheet and two small scripts shipped in the package (``editor.js`` validates
as you type, ``live.js`` keeps running runs' progress current): no Node build,
nothing fetched from the internet. The pages call the same services as the API.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from engine.web.headers import UiHeaders
from engine.web.routes import SignInRequired, router
from engine.web.session import SessionStore

__all__ = ["install"]


def install(app: FastAPI) -> None:
    """Mount the dashboard on ``app`` (``/ui`` pages, ``/ui/static`` assets)."""
    app.state.web_sessions = SessionStore()

    async def to_signin(request: Request, exc: Exception) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/ui/signin?next={quote(target)}", status_code=303)

    app.add_exception_handler(SignInRequired, to_signin)
    app.include_router(router)
    static = Path(__file__).resolve().parent / "static"
    app.mount("/ui/static", StaticFiles(directory=str(static)), name="ui-static")
    app.add_middleware(UiHeaders)  # CSP, no framing, nosniff on every /ui response
