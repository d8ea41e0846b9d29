"""Is this node ready to serve: its database (reachable, at this code's schema), and its
broker (distributed mode) or its Docker engine and sandbox image. ``GET /readyz`` answers
it, anonymously, and the dashboard's health page shows it.

The answer never carries an infrastructure address (a database or broker URL, a host, a
port, a socket path): an unreachable part is named with the setting to check, and the
cause goes to this node's log.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Engine

from engine.distributed.preflight import check_broker
from engine.errors import ScoreboxError
from engine.sandbox.backend import BackendHealth
from engine.settings import Settings
from engine.storage.database import schema_problem

log = logging.getLogger("scorebox.readiness")

#: scheme://anything up to a space, quote or closing bracket: URLs and socket paths alike
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"()<>]*[^\s'\"()<>:,.;]")
#: psycopg's 'connection to server at "10.0.0.5", port 5432 failed'
_SERVER_AT = re.compile(r'(server|host) (at|on) "?[^\s",]+"?(, port \d+)?')


def public_detail(text: str) -> str:
    """``text`` with URLs and server addresses replaced: safe for an anonymous answer."""
    return _SERVER_AT.sub(r"\1 \2 (hidden)", _URL.sub("(address hidden)", text))


def _unreachable(part: str, setting: str, exc: Exception) -> dict[str, Any]:
    log.warning("readiness: %s not reachable: %s", part, exc)
    return {
        "ok": False,
        "detail": f"{part} not reachable: check {setting} (the cause is in this node's log)",
    }


class Pingable(Protocol):
    """The database's part (:class:`engine.storage.Store` is one)."""

    def ping(self) -> None: ...


class SandboxHealth(Protocol):
    """The sandbox's part (:class:`engine.runs.executors.RunnerHolder` is one)."""

    def health(self) -> BackendHealth: ...


@dataclass(frozen=True)
class Readiness:
    """``ready`` when every part is ok; ``checks`` maps each part to ``{ok, detail}``."""

    ready: bool
    checks: dict[str, dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        return {"ready": self.ready, "checks": self.checks}


def _database(store: Pingable, db: Engine | None) -> dict[str, Any]:
    try:
        store.ping()
        problem = None if db is None else schema_problem(db)
    except ScoreboxError as exc:
        return _unreachable("database", "SCOREBOX_DATABASE_URL", exc)
    if problem is not None:
        return {"ok": False, "detail": problem}
    return {"ok": True, "detail": "ok"}


def readiness(
    settings: Settings, store: Pingable, runners: SandboxHealth, db: Engine | None = None
) -> Readiness:
    """Ask each part once. With ``db``, the database must also be at this code's schema
    revision. An API node of a distributed deployment (a broker is set) runs no sandbox:
    its parts are the database and the broker."""
    checks: dict[str, dict[str, Any]] = {"database": _database(store, db)}
    if settings.broker_url:
        try:
            check_broker(settings.broker_url, timeout_seconds=2.0)
            checks["broker"] = {"ok": True, "detail": "ok"}
        except ScoreboxError as exc:
            checks["broker"] = _unreachable("broker", "SCOREBOX_BROKER_URL", exc)
        return Readiness(all(c["ok"] for c in checks.values()), checks)
    try:
        health = runners.health()
        checks["docker"] = {"ok": health.engine_ok, "detail": public_detail(health.detail)}
        checks["image"] = {
            "ok": health.image_ok,
            "detail": settings.image if health.image_ok else public_detail(health.detail),
        }
    except ScoreboxError as exc:
        checks["docker"] = {"ok": False, "detail": public_detail(str(exc))}
        checks["image"] = {"ok": False, "detail": "unknown: the Docker engine is not reachable"}
    return Readiness(all(c["ok"] for c in checks.values()), checks)
