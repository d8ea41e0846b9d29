"""Response headers of the dashboard, and the same-origin test of its sign-in form.

Every ``/ui`` response (pages, redirects, errors, static assets) carries:

- ``Content-Security-Policy``: scripts, styles and images only from the server itself,
  no inline script or style (the pages have none), no plugins, forms only to the
  server, and ``frame-ancestors 'none'``;
- ``X-Frame-Options: DENY`` for browsers without ``frame-ancestors``;
- ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

UI_HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
)


class UiHeaders:
    """ASGI middleware: the headers of :data:`UI_HEADERS` on every response under ``/ui``."""

    def __init__(self, app: ASGIApp, prefix: str = "/ui") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not (
            path == self.prefix or path.startswith(self.prefix + "/")
        ):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in UI_HEADERS:
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)


def cross_site(headers: Headers) -> str | None:
    """Why a form post is cross-site (its ``Origin`` or ``Sec-Fetch-Site``), else None.

    Browsers send ``Origin`` on every cross-origin POST; a request without one
    (curl, the tests' client) is not a browser's cross-site form.
    """
    if headers.get("sec-fetch-site", "") == "cross-site":
        return "Sec-Fetch-Site: cross-site"
    origin = headers.get("origin")
    if origin is None:
        return None
    host = headers.get("host", "")
    hosts = {host.lower(), headers.get("x-forwarded-host", host).lower()}  # behind a proxy
    if origin == "null" or urlsplit(origin).netloc.lower() not in hosts:
        return f"Origin {origin[:100]!r} is not this server ({host[:100]!r})"
    return None
