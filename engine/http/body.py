"""Bound every request body while it streams in: a byte limit per route family, a deadline.

Pure ASGI, outermost after Starlette's error middleware: a body over its family's
limit is refused with 413 before any other middleware buffers it and before the
route authenticates the caller. A declared ``Content-Length`` over the limit is
refused without reading a byte; a chunked body is counted as it arrives and cut off
at the first chunk past the limit, so the server never holds more than the limit
plus one chunk of it. A body that trickles in is cut off with 408 once
``SCOREBOX_BODY_DEADLINE_SECONDS`` have passed since its first byte was awaited.
A body for a ``/v1`` or ``/v0`` route (all of which need a key) that comes with no
credentials header at all is a 401 before a byte of it is read, so an anonymous
client cannot make the server hold even the limit; one with credentials that do not
resolve is refused unread by :class:`engine.http.gate.KeyGate`, just inside this layer.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import ScoreboxError
from engine.settings import Settings

PROBLEM_JSON = b"application/problem+json"
MB = 1024 * 1024

#: Routes whose body is a multipart upload of a data file (the upload family).
UPLOAD_PATHS = frozenset({"/v1/runs/upload", "/v1/checks/upload", "/v0/scenario_sets_upload"})


@dataclass(frozen=True)
class BodyLimits:
    """Byte limit per route family and the total deadline of one body."""

    body_bytes: int
    upload_bytes: int
    deadline_seconds: float

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyLimits:
        return cls(
            body_bytes=int(settings.max_body_mb * MB),
            upload_bytes=int(settings.max_upload_mb * MB),
            deadline_seconds=settings.body_deadline_seconds,
        )

    def for_path(self, path: str) -> tuple[int, str]:
        """The byte limit of ``path`` and the setting that raises it."""
        if path.rstrip("/") in UPLOAD_PATHS:
            return self.upload_bytes, "SCOREBOX_MAX_UPLOAD_MB"
        return self.body_bytes, "SCOREBOX_MAX_BODY_MB"


def _megabytes(limit: int) -> str:
    return f"{limit / MB:g} MB"


def too_large_detail(path: str, limit: int, setting: str) -> str:
    return (
        f"request body over the {_megabytes(limit)} limit of {path}: send less per request "
        f"(split rows over several requests or use POST /v1/runs/upload), or raise {setting}"
    )


#: Every route under these prefixes that takes a body needs a key (``/v1``, ``/v0``, the
#: admin API): a body sent without any credentials header is a 401 before it is read.
KEYED_PREFIXES = ("/v1/", "/v0/")
_CREDENTIAL_HEADERS = frozenset({b"authorization", b"api-key"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def has_body(scope: Scope) -> bool:
    """Whether the request declares a body (a non-zero ``Content-Length``, or chunked)."""
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
    return False


def uncredentialed(scope: Scope) -> bool:
    """A body for a keyed route with no credentials header at all: answer 401 unread."""
    if scope.get("method") not in _BODY_METHODS:
        return False
    if not str(scope.get("path", "")).startswith(KEYED_PREFIXES) or not has_body(scope):
        return False
    return not any(name in _CREDENTIAL_HEADERS for name, _ in scope.get("headers", ()))


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length``, or None when it has none (chunked) or it is junk."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class _Refused(ScoreboxError):
    """The body was refused and the answer already sent: unwind the app."""


class BodyLimit:
    """ASGI middleware: 413 past the route family's byte limit, 408 past the body deadline."""

    def __init__(self, app: ASGIApp, limits: BodyLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        limit, setting = self.limits.for_path(path)
        declared = declared_length(scope)
        if uncredentialed(scope):  # no key at all: nothing of the body is worth reading
            await send_problem(
                send,
                401,
                "Unauthorized",
                "missing API key: send `Authorization: Bearer <key>` (or `api-key: <key>` on /v0)",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        if declared is not None and declared > limit:
            await send_problem(
                send, 413, "Payload too large", too_large_detail(path, limit, setting)
            )
            return
        state = _Stream(receive, send, self.limits.deadline_seconds, path, limit, setting)
        try:
            await self.app(scope, state.receive, state.send)
        except Exception:
            if not state.answered:
                raise
            # the app failed because its body was cut off; the client has its 413/408


class _Stream:
    """One request's body as the app receives it (counted, on a deadline) and its answer
    as the app sends it (dropped once a refusal has answered)."""

    def __init__(
        self,
        receive: Receive,
        send: Send,
        deadline_seconds: float,
        path: str,
        limit: int,
        setting: str,
    ) -> None:
        self._receive = receive
        self._send = send
        self.deadline_seconds = deadline_seconds
        self.deadline = time.monotonic() + deadline_seconds
        self.path = path
        self.limit = limit
        self.setting = setting  # the setting that raises the limit, named in a 413
        self.seen = 0
        self.started = False
        self.answered = False

    async def receive(self) -> Message:
        if self.answered:
            return {"type": "http.disconnect"}
        if self.deadline == float("inf"):
            return await self._receive()  # after the body: only a disconnect can come
        remaining = self.deadline - time.monotonic()
        try:
            # a timer, not wait_for's task per message: most bodies are one message
            async with asyncio.timeout(max(remaining, 0.001)):
                message = await self._receive()
        except TimeoutError:
            detail = (
                f"request body still arriving after {self.deadline_seconds:g} s: "
                "send it faster, or raise SCOREBOX_BODY_DEADLINE_SECONDS"
            )
            await self.refuse(408, "Request timeout", detail)
            raise _Refused from None
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.limit:
                detail = too_large_detail(self.path, self.limit, self.setting)
                await self.refuse(413, "Payload too large", detail)
                raise _Refused
            if not message.get("more_body", False):
                self.deadline = float("inf")  # the body is complete: the deadline is met
        return message

    async def send(self, message: Message) -> None:
        if self.answered:
            return  # the refusal was the answer; the app's late reply goes nowhere
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def refuse(self, status: int, title: str, detail: str) -> None:
        if self.answered:
            return
        self.answered = True
        if not self.started:  # a streaming route that already answered keeps its answer
            await send_problem(self._send, status, title, detail)


async def send_problem(
    send: Send,
    status: int,
    title: str,
    detail: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """An ``application/problem+json`` answer sent straight on the ASGI channel."""
    document: dict[str, Any] = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
    }
    payload = json.dumps(document).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
