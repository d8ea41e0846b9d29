"""Online scoring in distributed mode: an API node ingests spans and its rule's batches
are scored by Celery workers; a worker killed with ``kill -9`` mid-batch loses nothing
and scores nothing twice (real Redis, PostgreSQL, containers)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.settings import Settings
from tests.distributed.cluster import Cluster
from tests.live_server import IN_CHUNK
from tests.online.otlp_requests import PROTOBUF, span, traces

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

SLOW = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.004)\n    return len(model_output)\n"
)
SPANS = 1500


@pytest.fixture
def cluster(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path
) -> Iterator[Cluster]:
    made = Cluster(tmp_path, pg_url, redis_url)
    try:
        yield made
    finally:
        made.close()


def test_a_worker_killed_mid_batch_loses_no_span_and_scores_none_twice(cluster: Cluster) -> None:
    cluster.start_worker("w1")
    cluster.start_worker("w2")
    cluster.start_server("api1")
    headers = cluster.tenant("online")
    with cluster.client("api1", headers) as api:
        assert api.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
        rule = {"name": "lengths", "checks": ["len"], "sample_rate": 1.0}
        assert api.post("/v1/rules", json=rule).status_code == 201
        for _ in range(SPANS // 500):
            batch = [span(secrets.token_bytes(16), secrets.token_bytes(8)) for _ in range(500)]
            sent = api.post(
                "/v1/traces", content=traces(*batch).SerializeToString(), headers=PROTOBUF
            )
            assert sent.status_code == 200, sent.text
        # Kill the first worker seen with part of a rule's chunk stored: which worker the
        # broker hands each batch's chunk to is its own choice (one worker may take all).
        names = {cluster.worker_id(name): name for name in ("w1", "w2")}
        deadline = time.monotonic() + 180
        while True:
            running = cluster.sql(
                "SELECT c.worker, COALESCE(SUM(b.rows), 0) FROM run_chunks c JOIN rule_runs rr "
                f"ON rr.run_id = c.run_id LEFT JOIN run_result_blocks b ON {IN_CHUNK} "
                "WHERE c.state = 'running' GROUP BY c.worker, c.run_id, c.chunk_no",
            )
            victims = [names[w] for w, n in running if 0 < n < 500 and w in names]
            if victims:
                break
            assert time.monotonic() < deadline, "no worker was seen mid-way through a chunk"
            time.sleep(0.05)
        cluster.kill(victims[0])
        deadline = time.monotonic() + 300
        while True:
            counts = dict(cluster.sql("SELECT status, COUNT(*) FROM span_scores GROUP BY status"))
            if counts.get("scored", 0) == SPANS:
                break
            assert time.monotonic() < deadline, f"not all scored: {counts}"
            time.sleep(0.5)
        # one score per span, each the check's answer, and no row scored twice in any run
        assert counts == {"scored": SPANS}
        wrong = cluster.sql("SELECT COUNT(*) FROM span_scores WHERE score <> 31")
        assert wrong[0][0] == 0  # len("Paris is the capital of France.")
        runs = [r for (r,) in cluster.sql("SELECT run_id FROM rule_runs")]
        assert runs and all(cluster.duplicates(r) == [] for r in runs)
        listed = api.get("/v1/spans", params={"rule": "lengths", "limit": 1000}).json()
        assert len(listed["spans"]) == 1000 and all(
            s["scores"][0]["status"] == "scored" for s in listed["spans"]
        )
