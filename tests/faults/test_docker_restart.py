"""The Docker engine restarts mid-run (issue 28).

``dockerd`` is stopped by its PID (SIGTERM: it stops every container, the run's included)
and started again while a durable run is scoring. Promised, and checked here on the
stored rows: no row is lost or duplicated; rows in flight run again (none is blamed with
``crashed`` or ``sandbox_error`` while the engine comes back within
``SCOREBOX_ENGINE_WAIT_SECONDS``); ``/readyz`` is red while the engine is away and green
after; the warm pool refills with fresh containers and ``/v1/score`` works at once.

It stops the engine every other test uses, so ``scripts/dev.sh test`` runs it in a pytest
pass of its own, after the others.
"""

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
from tests.parts import DockerEngine

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROWS = 4000
CHECK = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.015)\n    return len(model_output)\n"
)


def _ready_in_pool(client: httpx.Client) -> int:
    """Warm, never-used containers the server holds (``scorebox_pool_size`` in /metrics)."""
    total = 0.0
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("scorebox_pool_size{") and "check-workers" not in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def test_the_docker_engine_restarted_mid_run(
    docker_settings: Settings, docker_engine: DockerEngine, tmp_path: Path
) -> None:
    database = f"sqlite:///{tmp_path / 'scorebox.db'}"
    store = open_store(database)
    key = auth.create_tenant(store, "engine-restart").secret
    env = serve_env(
        tmp_path,
        docker_settings,
        SCOREBOX_POOL_SIZE="2",
        SCOREBOX_RUN_CHUNK_ROWS="100",
        SCOREBOX_JOB_MAX_ROWS="100",
        SCOREBOX_ENGINE_WAIT_SECONDS="120",
    )
    readiness_away: list[int] = []
    with (
        serving(env, tmp_path / "server.log", "--log-level", "warning") as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c,
    ):
        assert c.get("/readyz").status_code == 200
        assert c.post("/v1/checks", json={"name": "len", "source": CHECK}).status_code == 201
        rows = [{"id": i, "model_output": "x" * (i % 17)} for i in range(ROWS)]
        run_id = c.post("/v1/runs", json={"checks": ["len"], "rows": rows}).json()["id"]
        deadline = time.monotonic() + 180
        while c.get(f"/v1/runs/{run_id}").json()["progress"]["done"] < ROWS // 10:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)

        docker_engine.stop()
        try:
            at_stop = store.count_results(run_id)
            assert at_stop < ROWS, "the run finished before the engine stopped: slow the check"
            for _ in range(3):
                readiness_away.append(c.get("/readyz").status_code)
                time.sleep(0.3)
        finally:
            docker_engine.start()

        final: dict[str, Any] = {}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            final = c.get(f"/v1/runs/{run_id}").json()
            if final["status"] not in ("queued", "running"):
                break
            time.sleep(0.3)
        log_tail = (tmp_path / "server.log").read_text(errors="replace")[-3000:]
        assert final["status"] == "succeeded", (final, log_tail)
        assert final["progress"] == {"done": ROWS, "total": ROWS, "fraction": 1.0}
        lines = c.get(
            f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
        ).text.splitlines()

        ready_after = c.get("/readyz")
        assert ready_after.status_code == 200, ready_after.text
        scored = c.post("/v1/score", json={"checks": ["len"], "rows": [{"model_output": "abc"}]})
        assert scored.status_code == 200, scored.text
        assert scored.json()["results"][0]["status"] == "ok"
        # the warm pool was drained of the dead containers and refilled with live ones
        deadline = time.monotonic() + 90
        while _ready_in_pool(c) == 0:
            assert time.monotonic() < deadline, "the warm pool did not refill"
            time.sleep(0.5)

    assert readiness_away and set(readiness_away) == {503}, readiness_away
    results = [json.loads(line) for line in lines]
    assert sorted(r["row_index"] for r in results) == list(range(ROWS))
    blamed = [(r["row_index"], r["status"], r["error"]) for r in results if r["status"] != "ok"]
    assert not blamed, blamed[:5]
    assert all(r["score"] == r["row_index"] % 17 for r in results)
    with store.engine.connect() as conn:
        duplicates = conn.execute(
            text(
                "SELECT row_index, COUNT(*) FROM row_results WHERE run_id = :r "
                "GROUP BY check_index, row_index HAVING COUNT(*) > 1"
            ),
            {"r": run_id},
        ).all()
    assert duplicates == []
    store.engine.dispose()
