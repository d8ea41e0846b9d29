"""Redis (the broker) killed and started again mid-run, with the default 120 s queue lease.

Redis here keeps nothing on disk (no ``appendonly``), so the chunks waiting in it are
lost with it. The API nodes notice the broker lost its data and send those chunks
again at once: every run is done within 20 s of Redis's return, not after the lease.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from engine.settings import Settings
from tests.api.conftest import _postgres_database
from tests.distributed.cluster import ROOT, Cluster
from tests.live_server import wait_done, wait_run

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

REDIS_SH = ROOT / "scripts" / "redis.sh"
ROWS = 3000
RECOVERY_SECONDS = 20.0
SLOW = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.004)\n    return len(model_output)\n"
)


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from _postgres_database()


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A Redis of this test's own (it is killed and started again)."""
    out = subprocess.run([str(REDIS_SH), "start"], capture_output=True, text=True, check=True)
    url = out.stdout.strip()
    try:
        yield url
    finally:
        subprocess.run([str(REDIS_SH), "stop", url], timeout=60, check=False)


def _redis_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1].split("/", maxsplit=1)[0]
    pidfile = Path(os.environ.get("TMPDIR", "/tmp")) / f"scorebox-redis.{port}" / "redis.pid"
    return int(pidfile.read_text().strip())


def _kill_and_start_again(url: str, down_seconds: float) -> float:
    """SIGKILL the server by its PID, keep it down a while, start it on the same port;
    returns the moment (monotonic) it answers PING again."""
    pid = _redis_pid(url)
    os.kill(pid, signal.SIGKILL)
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "redis-server survived SIGKILL"
        time.sleep(0.05)
    with pytest.raises(redis.ConnectionError):
        client.ping()
    time.sleep(down_seconds)
    subprocess.run([str(REDIS_SH), "restart", url], capture_output=True, text=True, check=True)
    assert client.ping()
    returned = time.monotonic()
    assert _redis_pid(url) != pid
    client.close()
    return returned


def test_redis_killed_mid_run_every_run_done_within_20s_of_its_return(
    docker_settings: Settings, pg_url: str, own_redis: str, tmp_path: Path
) -> None:
    cluster = Cluster(
        tmp_path,
        pg_url,
        own_redis,
        SCOREBOX_QUEUE_LEASE_SECONDS="120",  # the default: what used to stall every team
        SCOREBOX_CHUNK_LEASE_SECONDS="30",
    )
    try:
        cluster.start_worker("w1")
        cluster.start_worker("w2")
        cluster.start_server("api1")
        cluster.start_server("api2")
        teams = [cluster.tenant(name) for name in ("red", "green", "blue")]
        clients = [cluster.client(f"api{1 + i % 2}", h) for i, h in enumerate(teams)]
        runs = []
        for c in clients:
            assert c.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
            data = [{"model_output": "x" * (i % 11)} for i in range(ROWS)]
            runs.append(c.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"])
        for c, run_id in zip(clients, runs, strict=True):
            wait_done(c, run_id, 1)
        queued = cluster.sql("SELECT COUNT(*) FROM run_chunks WHERE state = 'queued'")[0][0]
        returned = _kill_and_start_again(own_redis, down_seconds=2.0)
        while True:  # how soon a node notices the broker lost its queues
            restarts = sum(
                _sample(c.get("/metrics").text, "scorebox_broker_restarts_total")
                for c in clients[:2]
            )
            if restarts:
                noticed = time.monotonic() - returned
                break
            assert time.monotonic() - returned < RECOVERY_SECONDS, "the restart went unnoticed"
            time.sleep(0.1)
        took = []
        for c, run_id in zip(clients, runs, strict=True):
            body = wait_run(c, run_id, timeout=180)
            took.append(time.monotonic() - returned)
            assert body["status"] == "succeeded", body
            assert body["progress"]["done"] == ROWS, body
            assert cluster.duplicates(run_id) == []
        scrapes = [clients[0].get("/metrics").text, clients[1].get("/metrics").text]
        for c in clients:
            c.close()
    finally:
        cluster.close()
    logs = cluster.log("api1") + cluster.log("api2")
    warnings = [line for line in logs.splitlines() if "lost its queues" in line]
    print(
        f"\nredis killed with {queued} chunks queued in it; noticed {noticed:.1f}s and runs done "
        + ", ".join(f"{t:.1f}s" for t in took)
        + " after its return"
    )
    assert queued > 0, "nothing was waiting in the broker: the case measured nothing"
    assert max(took) < RECOVERY_SECONDS, took
    assert len(warnings) == 1, warnings
    assert "queued chunks sent again" in warnings[0]
    counted = [
        _sample(s, 'scorebox_chunks_requeued_total{reason="broker_restarted"}') for s in scrapes
    ]
    assert sum(counted) > 0, counted
    assert sum(_sample(s, "scorebox_broker_restarts_total") for s in scrapes) == 1


def _sample(scrape: str, series: str) -> float:
    for line in scrape.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0
