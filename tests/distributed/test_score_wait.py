"""``/v1/score`` in distributed mode waits for a free worker slot as documented.

It waits up to ``SCOREBOX_SCORE_WAIT_SECONDS`` for a worker to take the request (longer
than redis-py's 5 s socket read timeout), then answers 429 with ``Retry-After`` and
"no worker free"; "not reachable" is kept for a broker that is really down. Every
outcome is counted on the API node's ``/metrics``.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.settings import Settings
from tests.distributed.cluster import ROOT, Cluster
from tests.live_server import wait_done

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WAIT = 8.0  # past redis-py's 5 s read timeout, which used to end the wait with a 503
BUSY = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.05)\n    return len(model_output)\n"
)
TRIVIAL = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"


def _sample(scrape: str, name: str, labels: str = "") -> float:
    found = re.search(rf"^{re.escape(name + labels)} (\S+)$", scrape, re.M)
    assert found is not None, f"{name}{labels} not in /metrics:\n{scrape[:3000]}"
    return float(found.group(1))


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A Redis of this test's own, which it may stop."""
    started = subprocess.run(
        [str(ROOT / "scripts" / "redis.sh"), "start"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    url = started.stdout.strip()
    try:
        yield url
    finally:
        subprocess.run([str(ROOT / "scripts" / "redis.sh"), "stop", url], timeout=60, check=False)


@pytest.mark.docker
def test_every_worker_slot_busy_longer_than_5s_gives_429_no_worker_free(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    cluster = Cluster(tmp_path, pg_url, redis_url)
    try:
        cluster.start_worker("w1", concurrency=1)  # one slot, kept busy by a run's chunk
        cluster.start_server("api1", SCOREBOX_SCORE_WAIT_SECONDS=str(WAIT))
        busy, other = cluster.tenant("busy"), cluster.tenant("other")
        with cluster.client("api1", busy) as cb, cluster.client("api1", other) as co:
            assert cb.post("/v1/checks", json={"name": "b", "source": BUSY}).status_code == 201
            assert co.post("/v1/checks", json={"name": "t", "source": TRIVIAL}).status_code == 201
            rows = [{"model_output": "x"}] * 2000  # 500-row chunks of 25 s each
            run_id = cb.post("/v1/runs", json={"checks": ["b"], "rows": rows}).json()["id"]
            wait_done(cb, run_id, 1)
            t0 = time.monotonic()
            refused = co.post("/v1/score", json={"checks": ["t"], "rows": [{"model_output": "y"}]})
            waited = time.monotonic() - t0
            scrape = co.get("/metrics").text
            assert cb.post(f"/v1/runs/{run_id}/cancel").status_code == 200
    finally:
        cluster.close()
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == str(int(WAIT))
    detail = refused.json()["detail"]
    assert detail.startswith("no worker free: none took this request within"), detail
    assert "not reachable" not in detail
    assert WAIT - 0.5 <= waited < WAIT + 5, waited
    assert _sample(scrape, "scorebox_score_requests_total", '{outcome="no_worker_free"}') == 1
    assert _sample(scrape, "scorebox_score_request_seconds_count") >= 1


def test_no_worker_at_all_gives_429_and_a_stopped_broker_503(
    pg_url: str, own_redis: str, tmp_path: Path
) -> None:
    cluster = Cluster(tmp_path, pg_url, own_redis)
    try:
        cluster.start_server("api1", SCOREBOX_SCORE_WAIT_SECONDS=str(WAIT))
        with cluster.client("api1", cluster.tenant("alone")) as c:
            assert c.post("/v1/checks", json={"name": "t", "source": TRIVIAL}).status_code == 201
            body = {"checks": ["t"], "rows": [{"model_output": "yes"}]}
            t0 = time.monotonic()
            no_worker = c.post("/v1/score", json=body)
            waited = time.monotonic() - t0
            subprocess.run(
                [str(ROOT / "scripts" / "redis.sh"), "stop", own_redis], timeout=60, check=True
            )
            t0 = time.monotonic()
            broker_down = c.post("/v1/score", json=body)
            down_took = time.monotonic() - t0
            scrape = c.get("/metrics").text
    finally:
        cluster.close()
    assert no_worker.status_code == 429, no_worker.text
    assert no_worker.headers["Retry-After"] == str(int(WAIT))
    assert no_worker.json()["detail"].startswith("no worker free"), no_worker.text
    assert WAIT - 0.5 <= waited < WAIT + 5, waited
    assert broker_down.status_code == 503, broker_down.text
    assert "is not reachable" in broker_down.json()["detail"], broker_down.text
    assert "no worker free" not in broker_down.json()["detail"]
    assert down_took < WAIT, down_took  # a dead broker is said at once, not after the wait
    assert _sample(scrape, "scorebox_score_requests_total", '{outcome="no_worker_free"}') == 1
    assert _sample(scrape, "scorebox_score_requests_total", '{outcome="broker_unreachable"}') == 1
    assert _sample(scrape, "scorebox_score_request_seconds_count") == 2
