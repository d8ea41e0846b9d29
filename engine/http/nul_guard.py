"""A 422 for a NUL character in a request's path or query string, before any route runs.

PostgreSQL cannot store or even compare ``\\u0000`` in text, so ``/v1/checks/a%00b``
or the dashboard's ``?q=%00`` would otherwise fail inside the database. JSON bodies
are checked by :class:`engine.http.guard.SurrogateGuard` (which names the field).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from engine.http.body import send_problem
from engine.nul import NUL


def url_problem(path: str, query: bytes) -> str | None:
    """What holds a NUL in a request's URL, as a message naming it; None if nothing does."""
    if NUL in path:
        return f"the path {path.replace(NUL, '%00')[:200]!r} holds a NUL character (%00): remove it"
    if b"%00" not in query and b"\x00" not in query:
        return None
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if NUL in name or NUL in value:
            shown = name.replace(NUL, "%00")[:60]
            return f"query parameter {shown!r} holds a NUL character (%00): remove it"
    return None


class NulGuard:
    """ASGI middleware: 422 for a NUL in the path or the query string."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = url_problem(str(scope.get("path", "")), bytes(scope.get("query_string", b"")))
            if problem is not None:
                await send_problem(send, 422, "Invalid request", problem)
                return
        await self.app(scope, receive, send)
