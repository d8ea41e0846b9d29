"""Dashboard sessions: the API key is exchanged once for an opaque cookie.

The server keeps ``token -> (key hash, CSRF token)`` in memory; the key itself
is neither stored nor written into any page. Each request looks the key up
again, so a revoked key ends its sessions at once. The cookie is HttpOnly,
SameSite=Strict, and Secure when the request came over TLS.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from fastapi import Request, Response

from engine.storage import TenantStore
from engine.tenancy.auth import Principal, hash_key

COOKIE = "scorebox_session"
#: Sessions expire after this long without use.
IDLE_SECONDS = 8 * 3600


@dataclass
class Session:
    key_hash: str
    csrf: str
    seen: float


class SessionStore:
    """In-process sessions (one API node; a restart signs everyone out)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def create(self, api_key: str) -> tuple[str, Session]:
        token = secrets.token_urlsafe(32)
        session = Session(hash_key(api_key), secrets.token_urlsafe(24), time.monotonic())
        with self._lock:
            self._sessions[token] = session
        return token, session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(token)
            if session is None or now - session.seen > IDLE_SECONDS:
                self._sessions.pop(token, None)
                return None
            session.seen = now
            return session

    def drop(self, token: str | None) -> None:
        with self._lock:
            self._sessions.pop(token or "", None)


def principal_of(store: TenantStore, session: Session) -> Principal | None:
    """The tenant behind a session, or None when its key is gone or revoked."""
    found = store.find_key(session.key_hash)
    if found is None or found[0].revoked_at is not None:
        return None
    key, tenant = found
    return Principal(tenant, key.id)


def set_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/ui",
    )


def csrf_ok(session: Session, supplied: str | None) -> bool:
    """Constant-time check of a form's or header's CSRF token."""
    return bool(supplied) and hmac.compare_digest(session.csrf, supplied or "")
