"""PostgreSQL restarts mid-run: the run finishes with exactly one result per row,
and requests during the outage get 503 with Retry-After, not 500."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from engine.storage import open_store
from engine.tenancy import auth
from tests.faults.runs import assert_every_row_once, length_check, start_run
from tests.live_server import serve_env, serving
from tests.parts import PostgresServer

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

ROWS = 1500
CHECK = length_check(0.004)


def test_postgres_restarted_mid_run(
    docker_settings: Settings, own_postgres: PostgresServer, tmp_path: Path
) -> None:
    store = open_store(own_postgres.url)
    key = auth.create_tenant(store, "pg-restart").secret
    store.engine.dispose()
    env = serve_env(
        tmp_path,
        docker_settings,
        SCOREBOX_DATABASE_URL=own_postgres.url,
        SCOREBOX_RUN_CHUNK_ROWS="100",
        SCOREBOX_JOB_MAX_ROWS="100",
    )
    outage: list[httpx.Response] = []
    with (
        serving(env, tmp_path / "server.log", "--log-level", "warning") as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as c,
    ):
        run_id = start_run(c, CHECK, ROWS)

        own_postgres.pause()
        try:
            for _ in range(10):  # the API answers while the database is away
                outage.append(c.get(f"/v1/runs/{run_id}"))
                outage.append(c.get("/v1/checks"))
                time.sleep(0.2)
            ready = c.get("/readyz")
        finally:
            own_postgres.resume()

        store = open_store(own_postgres.url)
        try:
            assert_every_row_once(c, store.engine, run_id, ROWS, tmp_path / "server.log")
        finally:
            store.engine.dispose()

    assert {r.status_code for r in outage} == {503}, [(r.status_code, r.text) for r in outage]
    for answer in outage:
        assert answer.headers["Retry-After"].isdigit()
        body = answer.json()
        assert body["title"] == "Database unavailable"
        assert "SELECT" not in body["detail"] and "postgres" not in body["detail"].lower()
    assert ready.status_code == 503
