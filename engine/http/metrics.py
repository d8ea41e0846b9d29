"""HTTP requests counted by route template and status (``scorebox_http_requests_total``).

A pure ASGI middleware, outermost, so requests refused by the other layers (a
body too large, a junk key) are counted too. The route is the template the
router matched (``/v1/runs/{run_id}``), never the raw path, so the series stay
few; a request no route matched is ``unmatched``.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(scope: Scope) -> str:
    """The path template of the route that answered, or :data:`UNMATCHED`."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str) and path:
        return path
    return UNMATCHED


class HttpMetrics:
    """Counts and times every HTTP request on the app's :class:`~engine.runs.metrics.Metrics`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = [500]  # what the client sees if the app raises before answering

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._record(scope, status[0], time.monotonic() - started)

    @staticmethod
    def _record(scope: Scope, status: int, seconds: float) -> None:
        services: Any = getattr(getattr(scope.get("app"), "state", None), "services", None)
        metrics = getattr(services, "metrics", None)
        if metrics is None:  # before the lifespan built them
            return
        method = str(scope.get("method", ""))
        method = method if method in METHODS else "other"  # a client picks it: keep it bounded
        route = route_template(scope)
        metrics.http_requests.labels(method, route, str(status)).inc()
        metrics.http_seconds.labels(method, route).observe(seconds)
