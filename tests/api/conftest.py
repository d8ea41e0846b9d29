"""API test fixtures: the app factory on a temporary database, SQLite and PostgreSQL.

Every storage-backed test runs twice: on a temporary SQLite file and on a fresh
database of the PostgreSQL server named by ``SCOREBOX_TEST_POSTGRES_URL``
(``scripts/postgres.sh start`` makes one). Without that variable the PostgreSQL
half skips locally and FAILS in CI.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from engine.app import create_app
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings
from engine.storage import SqlStore, open_store
from engine.tenancy import auth
from tests.conftest import TEST_LABEL, _in_ci

POSTGRES_ENV = "SCOREBOX_TEST_POSTGRES_URL"

TRIVIAL_CHECK = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"
SLOW_CHECK = (
    "import time\n\ndef evaluate(model_output: str) -> float:\n"
    "    time.sleep(0.25)\n    return 1.0\n"
)


def _postgres_database() -> Iterator[str]:
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        message = f"{POSTGRES_ENV} is not set: export it from `scripts/postgres.sh start`"
        if _in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    url = make_url(base)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    name = f"sbx_{secrets.token_hex(6)}"
    # pre-ping: a test may restart the server meanwhile (tests/faults, the distributed suite)
    admin = create_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """A fresh, empty database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'scorebox.db'}"
    else:
        yield from _postgres_database()


def api_settings(database_url: str, tmp_path: Any, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": tmp_path,
        "database_url": database_url,
        "pool_size": 0,
        "max_parallel_jobs": 2,
        "container_labels": {TEST_LABEL: "1"},
        "score_wait_seconds": 10.0,
    }
    values.update(overrides)
    return Settings(**values)


class Api:
    """A running app with helpers to make tenants."""

    def __init__(self, client: TestClient, store: SqlStore) -> None:
        self.client = client
        self.store = store

    def tenant(self, name: str | None = None, **quotas: int) -> dict[str, str]:
        """A new tenant; returns the headers of its key."""
        new = auth.create_tenant(self.store, name or f"t-{secrets.token_hex(4)}", quotas)
        return {"Authorization": f"Bearer {new.secret}"}

    def push(self, headers: dict[str, str], name: str, source: str) -> dict[str, Any]:
        reply = self.client.post(
            "/v1/checks", headers=headers, json={"name": name, "source": source}
        )
        assert reply.status_code in (200, 201), reply.text
        return dict(reply.json())

    def wait_run(
        self, headers: dict[str, str], run_id: str, timeout: float = 240
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            body = self.client.get(f"/v1/runs/{run_id}", headers=headers).json()
            if body["status"] not in ("queued", "running"):
                return dict(body)
            assert time.monotonic() < deadline, f"run still {body['status']}: {body['progress']}"
            time.sleep(0.2)


AppFactory = Callable[..., Api]


@pytest.fixture
def make_api(database_url: str, tmp_path: Any) -> Iterator[AppFactory]:
    """Start the app (lifespan included) with settings overrides; stopped at teardown."""
    opened: list[tuple[TestClient, SqlStore]] = []

    def factory(
        runner_factory: Callable[[Settings], SandboxRunner] | None = None, **overrides: Any
    ) -> Api:
        settings = api_settings(database_url, tmp_path, **overrides)
        client = TestClient(create_app(settings, runner_factory=runner_factory))
        client.__enter__()
        store = open_store(settings.effective_database_url, migrate=False)
        opened.append((client, store))
        return Api(client, store)

    yield factory
    for client, store in opened:
        client.__exit__(None, None, None)
        store.engine.dispose()


@pytest.fixture
def api(make_api: AppFactory) -> Api:
    """The app without Docker needs (checks, auth, isolation, quotas that reject early)."""
    return make_api()


@pytest.fixture
def docker_api(docker_settings: Settings, make_api: AppFactory) -> Api:
    """The app for tests that score in real containers."""
    return make_api(pool_size=1)
