"""engine.readiness: what /readyz answers and the health page shows, on stand-in parts."""

from __future__ import annotations

import socket
from pathlib import Path

from engine.errors import SandboxError, StorageError
from engine.readiness import readiness
from engine.sandbox.backend import BackendHealth
from engine.settings import Settings
from engine.storage.database import create_db_engine, head_revision, upgrade


class _Store:
    def __init__(self, error: str | None = None) -> None:
        self.error = error

    def ping(self) -> None:
        if self.error:
            raise StorageError(self.error)


class _Runners:
    def __init__(self, health: BackendHealth | None) -> None:
        self.health_ = health
        self.asked = 0

    def health(self) -> BackendHealth:
        self.asked += 1
        if self.health_ is None:
            raise SandboxError("Docker is not running")
        return self.health_


SETTINGS = Settings(image="scorebox-sandbox:abc")


def test_ready_when_database_engine_and_image_are() -> None:
    found = readiness(SETTINGS, _Store(), _Runners(BackendHealth(True, True, "ok")))
    assert found.ready
    assert found.as_json() == {
        "ready": True,
        "checks": {
            "database": {"ok": True, "detail": "ok"},
            "docker": {"ok": True, "detail": "ok"},
            "image": {"ok": True, "detail": "scorebox-sandbox:abc"},
        },
    }


def test_a_missing_image_or_a_down_database_is_not_ready() -> None:
    no_image = readiness(SETTINGS, _Store(), _Runners(BackendHealth(True, False, "no image")))
    assert not no_image.ready
    assert no_image.checks["image"] == {"ok": False, "detail": "no image"}
    db_down = readiness(SETTINGS, _Store("gone"), _Runners(BackendHealth(True, True, "ok")))
    assert not db_down.ready
    assert db_down.checks["database"] == {
        "ok": False,
        "detail": "database not reachable: check SCOREBOX_DATABASE_URL "
        "(the cause is in this node's log)",
    }


def test_docker_down_says_the_image_is_unknown() -> None:
    found = readiness(SETTINGS, _Store(), _Runners(None))
    assert not found.ready
    assert found.checks["docker"] == {"ok": False, "detail": "Docker is not running"}
    assert found.checks["image"]["detail"].startswith("unknown")


def test_with_a_broker_the_node_runs_no_sandbox() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runners = _Runners(BackendHealth(True, True, "ok"))
    settings = SETTINGS.model_copy(update={"broker_url": f"redis://127.0.0.1:{port}/0"})
    found = readiness(settings, _Store(), runners)
    assert not found.ready
    assert set(found.checks) == {"database", "broker"}
    assert not found.checks["broker"]["ok"]
    assert runners.asked == 0


def test_an_unreachable_part_shows_no_address() -> None:
    # /readyz is anonymous: the URL (user, host, port, database) goes to the log, not the body
    url = "postgresql+psycopg://scorebox:***@db.internal:5432/scorebox"
    store = _Store(
        f'database not reachable at {url}: connection to server at "10.0.0.5", '
        "port 5432 failed: Connection refused (check SCOREBOX_DATABASE_URL)"
    )
    docker = BackendHealth(
        False, False, "Docker engine not reachable at unix:///run/d.sock: start it"
    )
    found = readiness(SETTINGS, store, _Runners(docker))
    text = str(found.as_json())
    for secret in ("db.internal", "10.0.0.5", "5432", "scorebox:", "/run/d.sock", "unix:"):
        assert secret not in text
    assert found.checks["docker"]["detail"] == (
        "Docker engine not reachable at (address hidden): start it"
    )


def test_a_schema_of_another_version_is_not_ready(tmp_path: Path) -> None:
    db = create_db_engine(f"sqlite:///{tmp_path / 'old.db'}")
    upgrade(db, "0009")
    found = readiness(SETTINGS, _Store(), _Runners(BackendHealth(True, True, "ok")), db)
    assert not found.ready
    needed = head_revision()
    assert found.checks["database"] == {
        "ok": False,
        "detail": f"database schema is at 0009, this code needs {needed}: "
        "run `scorebox db upgrade`",
    }
    upgrade(db)
    assert readiness(SETTINGS, _Store(), _Runners(BackendHealth(True, True, "ok")), db).ready
