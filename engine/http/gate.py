"""Who is calling, from the headers alone, before a byte of the request body is read.

:class:`KeyGate` is pure ASGI, inside :class:`~engine.http.body.BodyLimit` and
outside everything that reads a body (``SurrogateGuard``, FastAPI's parsers, multipart
spooling). For a request with a body it resolves the route family's credentials:

- ``/v1/admin/...``: the operator's admin key (``Authorization: Bearer``);
- ``/v0/...``: Okareo's ``api-key`` header, else ``Authorization: Bearer``;
- ``/v1/...``: ``Authorization: Bearer <key>``;
- anything else (the dashboard under ``/ui``, whose forms carry a session cookie or,
  signing in, no credentials at all): nothing is refused here, the route decides.

An unknown, revoked or missing key is answered 401 (a tenant key on an admin route
403) with the body unread: the server never holds a body it will refuse. The resolved
principal rides in the scope, so the route does not look the key up again.

Then the body is metered by :class:`~engine.http.budget.BodyBudget`: bytes in
flight per API key (dashboard session; anonymous callers share one bucket) and in total,
429 with ``Retry-After`` past either.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from http.cookies import SimpleCookie
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import AuthError, QuotaExceededError, ScoreboxError, StorageError
from engine.http.body import declared_length, has_body, send_problem
from engine.http.budget import BodyBudget
from engine.http.problems import status_for
from engine.storage.cached import CachedStore
from engine.tenancy.auth import Principal, authenticate, authenticate_cached, authorize_admin

log = logging.getLogger("scorebox.api")

#: Where the gate leaves the caller it resolved for :func:`principal_of_scope`.
PRINCIPAL = "scorebox.principal"
#: The dashboard's session cookie (``engine.web.session.COOKIE``; not imported: the web
#: package imports the API's dependencies, which import this module).
SESSION_COOKIE = "scorebox_session"
ANONYMOUS = "anonymous"
OKAREO_MISSING = (
    "missing API key: pass your scorebox key as Okareo(api_key=...) (header `api-key: <key>`)"
)


def principal_of_scope(scope: MutableMapping[str, Any]) -> Principal | None:
    """The principal :class:`KeyGate` resolved for this request, if it resolved one."""
    found = scope.get(PRINCIPAL)
    return found if isinstance(found, Principal) else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _authenticate(store: Any, authorization: str | None) -> Principal:
    if isinstance(store, CachedStore):
        cached = authenticate_cached(store, authorization)  # on the loop: no database read
        if cached is not None:
            return cached
    return await run_in_threadpool(authenticate, store, authorization)


class _Refused(ScoreboxError):
    """The body was refused and the answer already sent: unwind the app."""


async def refuse(send: Send, exc: ScoreboxError) -> None:
    """``exc`` as ``application/problem+json``, with the status ``problems`` gives it."""
    status, title = status_for(exc)
    headers: list[tuple[bytes, bytes]] = []
    if isinstance(exc, AuthError):
        headers.append((b"www-authenticate", b"Bearer"))
    if isinstance(exc, QuotaExceededError | StorageError):
        headers.append((b"retry-after", str(max(1, int(exc.retry_after_seconds))).encode()))
    if status >= 500:
        log.error("refused before the body: %s", exc)
    await send_problem(send, status, title, str(exc), headers)


class KeyGate:
    """ASGI middleware: authenticate from the headers before the body, then meter it."""

    def __init__(self, app: ASGIApp, budget: BodyBudget) -> None:
        self.app = app
        self.budget = budget

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        services = getattr(getattr(scope.get("app"), "state", None), "services", None)
        if scope["type"] != "http" or services is None or not has_body(scope):
            await self.app(scope, receive, send)  # no body to hold, or the app not started
            return
        try:
            bucket = await self._caller(scope, services)
        except ScoreboxError as exc:
            await refuse(send, exc)  # the body stays unread; the answer closes the connection
            return
        await self._metered(bucket, scope, receive, send)

    async def _caller(self, scope: Scope, services: Any) -> str:
        """The budget bucket of the caller; raises AuthError/ForbiddenError to refuse."""
        path = str(scope.get("path", ""))
        root = str(scope.get("root_path", ""))
        if root and path.startswith(root):
            path = path[len(root) :]  # served under a prefix (--root-path): route as the app does
        authorization = _header(scope, b"authorization")
        if path == "/v1/admin" or path.startswith("/v1/admin/"):
            admin_key = services.settings.admin_key
            authorize_admin(admin_key.get_secret_value() if admin_key else None, authorization)
            return "admin"
        if path.startswith("/v0/"):
            api_key = (_header(scope, b"api-key") or "").strip()
            if api_key:
                authorization = f"Bearer {api_key}"
            elif authorization is None:
                raise AuthError(OKAREO_MISSING)
        elif not path.startswith("/v1/"):
            return self._session_bucket(scope)
        principal = await _authenticate(services.store, authorization)
        scope[PRINCIPAL] = principal
        return f"key:{principal.key_id}"

    def _session_bucket(self, scope: Scope) -> str:
        """The dashboard's signed-in session's key, or the anonymous bucket."""
        sessions = getattr(scope["app"].state, "web_sessions", None)
        cookie = SimpleCookie()
        try:
            cookie.load(_header(scope, b"cookie") or "")
        except Exception:
            return ANONYMOUS
        morsel = cookie.get(SESSION_COOKIE)
        session = sessions.get(morsel.value) if sessions is not None and morsel else None
        return f"session:{session.key_hash}" if session is not None else ANONYMOUS

    async def _metered(self, bucket: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app with its body metered against ``bucket``: a declared length taken
        up front (refused at once past the budget), a streamed body as it is read."""
        declared = declared_length(scope)
        meter = _Meter(self.budget, bucket, metered=declared is None, receive=receive, send=send)
        if declared is not None:
            try:
                self.budget.take(bucket, declared)
            except QuotaExceededError as exc:
                await refuse(send, exc)
                return
            meter.held = declared
        try:
            await self.app(scope, meter.receive, meter.send)
        except Exception:
            if not meter.answered:
                raise
            # the app failed because its body was refused; the client has its 429
        finally:
            self.budget.give(bucket, meter.held)


class _Meter:
    """One request's body metered as the app reads it: the bytes it holds of its bucket,
    whether the gate answered (refused it), and whether the app began its response."""

    def __init__(
        self, budget: BodyBudget, bucket: str, *, metered: bool, receive: Receive, send: Send
    ) -> None:
        self.budget = budget
        self.bucket = bucket
        self.metered = metered  # no declared length: each chunk is taken as it comes
        self.held = 0
        self.answered = False
        self.started = False
        self._receive = receive
        self._send = send

    async def receive(self) -> Message:
        """The app's next message, its body chunk taken from the budget first."""
        if self.answered:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if self.metered and message["type"] == "http.request":
            await self._take(len(message.get("body", b"")))
        return message

    async def _take(self, size: int) -> None:
        """Hold ``size`` more bytes, or answer 429 (unless the app began its response)
        and unwind the app."""
        try:
            self.budget.take(self.bucket, size, self.held)
        except QuotaExceededError as exc:
            self.answered = True
            if not self.started:
                await refuse(self._send, exc)
            raise _Refused from exc
        self.held += size

    async def send(self, message: Message) -> None:
        """The app's message sent on, unless the gate's refusal was the answer."""
        if self.answered:
            return  # the refusal was the answer; the app's late reply goes nowhere
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)
