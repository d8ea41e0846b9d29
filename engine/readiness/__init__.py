"""Is this node ready to serve: its database, and its broker (distributed mode) or its
Docker engine and sandbox image. ``GET /readyz`` answers it, the dashboard's health page
shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from engine.distributed.preflight import check_broker
from engine.errors import ScoreboxError
from engine.sandbox.backend import BackendHealth
from engine.settings import Settings


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


def readiness(settings: Settings, store: Pingable, runners: SandboxHealth) -> Readiness:
    """Ask each part once. An API node of a distributed deployment (a broker is set) runs no
    sandbox: its parts are the database and the broker."""
    checks: dict[str, dict[str, Any]] = {}
    try:
        store.ping()
        checks["database"] = {"ok": True, "detail": "ok"}
    except ScoreboxError as exc:
        checks["database"] = {"ok": False, "detail": str(exc)}
    if settings.broker_url:
        try:
            check_broker(settings.broker_url, timeout_seconds=2.0)
            checks["broker"] = {"ok": True, "detail": "ok"}
        except ScoreboxError as exc:
            checks["broker"] = {"ok": False, "detail": str(exc)}
        return Readiness(all(c["ok"] for c in checks.values()), checks)
    try:
        health = runners.health()
        checks["docker"] = {"ok": health.engine_ok, "detail": health.detail}
        checks["image"] = {
            "ok": health.image_ok,
            "detail": settings.image if health.image_ok else health.detail,
        }
    except ScoreboxError as exc:
        checks["docker"] = {"ok": False, "detail": str(exc)}
        checks["image"] = {"ok": False, "detail": "unknown: the Docker engine is not reachable"}
    return Readiness(all(c["ok"] for c in checks.values()), checks)
