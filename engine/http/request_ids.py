"""Every request gets an id: the caller's ``X-Request-ID`` when it is a sane one, else a new
one. It is echoed in the answer's ``X-Request-ID`` and carried by each log line written
while the request is handled (``engine.logs``), with its tenant once the key resolves."""

from __future__ import annotations

import re
import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine import logs

HEADER = b"x-request-id"
#: what a caller's id may be: anything else (too long, spaces, control characters) is replaced
_SANE = re.compile(rb"[A-Za-z0-9._:-]{1,64}")


def _incoming(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == HEADER and _SANE.fullmatch(value):
            return str(value.decode("ascii"))
    return None


class RequestContext:
    """Pure ASGI middleware (outermost): binds the request id for the logs and echoes it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming(scope) or secrets.token_hex(8)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k != HEADER]
                message = {**message, "headers": [*headers, (HEADER, request_id.encode())]}
            await send(message)

        with logs.bound(request_id=request_id):
            await self.app(scope, receive, send_with_id)
