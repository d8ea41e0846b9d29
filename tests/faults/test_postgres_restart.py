"""PostgreSQL restarts mid-run (issue 28): the run finishes with exactly one result per row,
and requests during the outage get 503 with Retry-After, not 500."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from engine import auth
from engine.settings import Settings
from engine.storage import open_store
from tests.live_server import serve_env, serving
from tests.parts import PostgresServer

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

ROWS = 1500
CHECK = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.004)\n    return len(model_output)\n"
)


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
        assert c.post("/v1/checks", json={"name": "len", "source": CHECK}).status_code == 201
        rows = [{"id": i, "model_output": "x" * (i % 17)} for i in range(ROWS)]
        run_id = c.post("/v1/runs", json={"checks": ["len"], "rows": rows}).json()["id"]
        deadline = time.monotonic() + 180
        while c.get(f"/v1/runs/{run_id}").json()["progress"]["done"] < ROWS // 10:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)

        own_postgres.pause()
        try:
            for _ in range(10):  # the API answers while the database is away
                outage.append(c.get(f"/v1/runs/{run_id}"))
                outage.append(c.get("/v1/checks"))
                time.sleep(0.2)
            ready = c.get("/readyz")
        finally:
            own_postgres.resume()

        final: dict[str, Any] = {}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            answer = c.get(f"/v1/runs/{run_id}")
            if answer.status_code == 200:
                final = answer.json()
                if final["status"] not in ("queued", "running"):
                    break
            time.sleep(0.3)
        log_tail = (tmp_path / "server.log").read_text(errors="replace")[-3000:]
        assert final.get("status") == "succeeded", (final, log_tail)
        assert final["progress"] == {"done": ROWS, "total": ROWS, "fraction": 1.0}
        lines = c.get(
            f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
        ).text.splitlines()

    assert {r.status_code for r in outage} == {503}, [(r.status_code, r.text) for r in outage]
    for answer in outage:
        assert answer.headers["Retry-After"].isdigit()
        body = answer.json()
        assert body["title"] == "Database unavailable"
        assert "SELECT" not in body["detail"] and "postgres" not in body["detail"].lower()
    assert ready.status_code == 503

    results = [json.loads(line) for line in lines]
    assert sorted(r["row_index"] for r in results) == list(range(ROWS))
    assert all(r["status"] == "ok" and r["score"] == r["row_index"] % 17 for r in results)
    store = open_store(own_postgres.url)
    try:
        with store.engine.connect() as conn:
            duplicates = conn.execute(
                text(
                    "SELECT row_index, COUNT(*) FROM row_results WHERE run_id = :r "
                    "GROUP BY check_index, row_index HAVING COUNT(*) > 1"
                ),
                {"r": run_id},
            ).all()
    finally:
        store.engine.dispose()
    assert duplicates == []
