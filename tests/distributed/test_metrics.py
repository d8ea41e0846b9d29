"""What an operator alerts on, read through ``/metrics`` on an API node and on a worker
(``scorebox worker --metrics-port``), during a real run on real workers."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from tests.distributed.cluster import Cluster
from tests.live_server import free_port, wait_done, wait_run

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

SLOW = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.004)\n    return len(model_output)\n"
)


def _series(scrape: str, name: str) -> dict[str, float]:
    """Every sample of ``name``: its label set (as written) to its value."""
    out: dict[str, float] = {}
    for labels, value in re.findall(rf"^{re.escape(name)}(\{{.*\}})? (\S+)$", scrape, re.M):
        out[labels] = float(value)
    return out


@pytest.fixture
def cluster(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path
) -> Iterator[Cluster]:
    made = Cluster(tmp_path, pg_url, redis_url)
    try:
        yield made
    finally:
        made.close()


def test_api_node_and_worker_metrics_during_a_run(cluster: Cluster) -> None:
    worker_port = free_port()
    cluster.start_worker("w1", concurrency=1, extra=["--metrics-port", str(worker_port)])
    cluster.start_server("api1")
    headers = cluster.tenant("watched", concurrent_jobs=2)
    tenant_id = cluster.sql("SELECT id FROM tenants WHERE name = 'watched'")[0][0]
    with cluster.client("api1", headers) as c, httpx.Client(timeout=30) as plain:
        assert c.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
        data = [{"model_output": "x" * (i % 7)} for i in range(3000)]
        run_id = c.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"]
        wait_done(c, run_id, 1)
        assert c.get("/v1/runs/nope").status_code == 404
        assert c.get("/no/such/page").status_code == 404
        during = c.get("/metrics").text
        worker_during = plain.get(f"http://127.0.0.1:{worker_port}/metrics").text
        body = wait_run(c, run_id)
        time.sleep(0.5)
        after = c.get("/metrics").text
        worker_after = plain.get(f"http://127.0.0.1:{worker_port}/metrics").text
    assert body["status"] == "succeeded", body

    # the API node: per-tenant chunks (one running on the one slot, one more queued,
    # the rest pending: concurrent_jobs=2), the oldest queued chunk, the workers seen
    chunks = _series(during, "scorebox_tenant_chunks")
    assert chunks.get(f'{{state="running",tenant="{tenant_id}"}}') == 1, chunks
    assert chunks.get(f'{{state="queued",tenant="{tenant_id}"}}') == 1, chunks
    assert chunks.get(f'{{state="pending",tenant="{tenant_id}"}}', 0) >= 1, chunks
    age = _series(during, "scorebox_oldest_queued_chunk_age_seconds")[""]
    assert 0 < age < 120, age
    assert sum(_series(during, "scorebox_workers_seen").values()) == 1, during[-3000:]
    assert _series(after, "scorebox_tenant_chunks") == {}  # nothing left once it is done
    assert _series(after, "scorebox_oldest_queued_chunk_age_seconds")[""] == 0
    # HTTP requests by route template, never by raw path
    http = _series(after, "scorebox_http_requests_total")
    assert http['{method="POST",route="/v1/runs",status="202"}'] == 1, http
    assert http['{method="GET",route="/v1/runs/{run_id}",status="404"}'] == 1, http
    assert http['{method="GET",route="unmatched",status="404"}'] == 1, http
    assert http['{method="GET",route="/v1/runs/{run_id}",status="200"}'] >= 2, http
    assert not any(run_id in labels for labels in http), http
    assert _series(after, "scorebox_http_request_seconds_count")

    # the worker: its chunk in hand while running, the work it did, its warm pool
    assert _series(worker_during, "scorebox_worker_chunks_in_hand")[""] == 1
    jobs = _series(worker_after, "scorebox_jobs_total")
    assert jobs['{kind="code",outcome="ok"}'] == 6, jobs  # 3,000 rows in 500-row chunks
    rows = _series(worker_after, "scorebox_rows_scored_total")
    assert rows['{status="ok"}'] == 3000, rows
    assert _series(worker_after, "scorebox_pool_size"), worker_after[-2000:]
