"""The Docker engine restarts mid-run.

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

import time
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from engine.storage import open_store
from engine.tenancy import auth
from tests.faults.runs import assert_every_row_once, length_check, start_run
from tests.live_server import serve_env, serving
from tests.parts import DockerEngine

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROWS = 4000
CHECK = length_check(0.015)


def _ready_in_pool(client: httpx.Client) -> int:
    """Warm, never-used containers the server holds (``scorebox_pool_size`` in /metrics)."""
    total = 0.0
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("scorebox_pool_size{") and "check-containers" not in line:
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
        run_id = start_run(c, CHECK, ROWS)

        docker_engine.stop()
        try:
            at_stop = store.count_results(run_id)
            assert at_stop < ROWS, "the run finished before the engine stopped: slow the check"
            for _ in range(3):
                readiness_away.append(c.get("/readyz").status_code)
                time.sleep(0.3)
        finally:
            docker_engine.start()

        assert_every_row_once(c, store.engine, run_id, ROWS, tmp_path / "server.log")

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
    store.engine.dispose()
