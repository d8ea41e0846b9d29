"""Durability: kill the server mid-run with SIGKILL, start it again, the run finishes with
every row scored exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.settings import Settings
from engine.storage import open_store
from engine.tenancy import auth
from tests.conftest import TEST_LABEL
from tests.live_server import (
    duplicate_results,
    free_port,
    run_results,
    spawn_serve,
    stop,
    wait_healthy,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROWS = 2000
CHECK = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.004)\n    return len(model_output)\n"
)


def _serve(database_url: str, data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(data_dir),
        "SCOREBOX_DATABASE_URL": database_url,
        "SCOREBOX_POOL_SIZE": "1",
        "SCOREBOX_MAX_PARALLEL_JOBS": "2",
        "SCOREBOX_RUN_CHUNK_ROWS": "100",
        "SCOREBOX_JOB_MAX_ROWS": "100",
        "SCOREBOX_CONTAINER_LABELS": json.dumps({TEST_LABEL: "1"}),
    }
    proc = spawn_serve(env, port, log, "--log-level", "warning")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log, timeout=90)
    except BaseException:
        stop(proc)
        raise
    return proc


def test_kill_and_restart_mid_run(
    docker_settings: Settings, database_url: str, tmp_path: Path
) -> None:
    store = open_store(database_url)
    key = auth.create_tenant(store, "durable").secret
    port = free_port()
    log = tmp_path / "server.log"
    headers = {"Authorization": f"Bearer {key}"}
    proc = _serve(database_url, tmp_path, port, log)
    procs = [proc]
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as c:
            assert c.post("/v1/checks", json={"name": "len", "source": CHECK}).status_code == 201
            rows = [{"id": i, "model_output": "x" * (i % 17)} for i in range(ROWS)]
            run_id = c.post("/v1/runs", json={"checks": ["len"], "rows": rows}).json()["id"]
            deadline = time.monotonic() + 180
            done = 0
            while done < ROWS // 10:
                assert time.monotonic() < deadline, "the run made no progress"
                done = c.get(f"/v1/runs/{run_id}").json()["progress"]["done"]
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            at_kill = store.count_results(run_id)
            assert at_kill < ROWS, "the run finished before the kill: make the check slower"

            started = time.monotonic()
            proc = _serve(database_url, tmp_path, port, log)
            procs.append(proc)
            final: dict[str, Any] = {}
            while time.monotonic() - started < 240:
                final = c.get(f"/v1/runs/{run_id}").json()
                if final["status"] not in ("queued", "running"):
                    break
                time.sleep(0.3)
            finish_seconds = time.monotonic() - started
            assert final["status"] == "succeeded", (final, log.read_text()[-3000:])
            assert final["progress"] == {"done": ROWS, "total": ROWS, "fraction": 1.0}
            results = run_results(c, run_id)
    finally:
        for p in procs:
            stop(p, timeout=60)

    assert sorted(r["row_index"] for r in results) == list(range(ROWS))
    wrong = [r for r in results if r["status"] == "ok" and r["score"] != r["row_index"] % 17]
    assert not wrong, wrong[:3]
    # The killed server's containers are orphans the new one reaps; their rows are rescored.
    other = [(r["row_index"], r["status"], r["error"]) for r in results if r["status"] != "ok"]
    assert not other, other[:5]
    assert duplicate_results(store.engine, run_id) == []
    print(
        f"\nrestart: killed at {at_kill}/{ROWS} results stored; after restart the run "
        f"finished in {finish_seconds:.1f}s with {len(results)} results, 0 duplicates"
    )
    store.engine.dispose()
