"""Distributed mode end to end: one Redis, one PostgreSQL, two `scorebox worker` and two
`scorebox serve` processes over loopback, with real containers.

Leases are short here (3 s running, 6 s queued) so the recovery cases finish quickly.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from engine.storage import Run, RunCheck, RunStatus, new_id, utcnow
from tests.conftest import assert_not_behind
from tests.distributed.cluster import ROOT, Cluster
from tests.fake_llm import FakeLLM
from tests.live_server import CLI, IN_CHUNK, free_port, wait_done, wait_run

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

TRIVIAL = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"
SLOW = (
    "import time\n\ndef evaluate(model_output: str) -> int:\n"
    "    time.sleep(0.004)\n    return len(model_output)\n"
)


@pytest.fixture
def cluster(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path
) -> Iterator[Cluster]:
    made = Cluster(tmp_path, pg_url, redis_url)
    try:
        yield made
    finally:
        made.close()


def _full(cluster: Cluster) -> None:
    cluster.start_worker("w1")
    cluster.start_worker("w2")
    cluster.start_server("api1")
    cluster.start_server("api2")


def _assert_exactly_once(cluster: Cluster, run_id: str, rows: int, body: dict[str, object]) -> None:
    assert body["status"] == "succeeded", body
    assert body["progress"] == {"done": rows, "total": rows, "fraction": 1.0}
    assert cluster.duplicates(run_id) == []


def test_big_run_spreads_over_both_workers_fairly_with_score_meanwhile(cluster: Cluster) -> None:
    _full(cluster)
    # long next to a container start (up to ~2 s on a busy CI host): B's first request on each
    # worker needs a fresh container for its tenant, and fairness is about scheduling, not
    # about that start. A fast check's chunks run 5,000 rows a job: 40,000 rows took 2.1 s on
    # a fast 2-core host, and one cold start of B's (777 ms) covered 16,500 of them.
    rows_a = 200_000
    a, b = cluster.tenant("big"), cluster.tenant("small")
    with cluster.client("api1", a) as ca, cluster.client("api2", b) as cb:
        ready = ca.get("/readyz")  # an API node: database and broker, no Docker engine
        assert ready.status_code == 200 and set(ready.json()["checks"]) == {"database", "broker"}
        assert ca.post("/v1/checks", json={"name": "t", "source": TRIVIAL}).status_code == 201
        assert cb.post("/v1/checks", json={"name": "t", "source": TRIVIAL}).status_code == 201
        rows = [{"model_output": "yes" if i % 2 else "no"} for i in range(rows_a)]
        started = time.monotonic()
        reply = ca.post("/v1/runs", json={"checks": ["t"], "rows": rows})
        assert reply.status_code == 202, reply.text
        run_a = reply.json()["id"]
        wait_done(ca, run_a, 1)
        # tenant B: a 10-row run submitted behind A's 400 chunks, and /v1/score requests
        small = [{"model_output": "yes"}] * 10
        run_b = cb.post("/v1/runs", json={"checks": ["t"], "rows": small}).json()["id"]
        latencies = []
        during: list[tuple[int, int]] = []  # A's rows done before and after each request
        for _ in range(3):
            before = ca.get(f"/v1/runs/{run_a}").json()["progress"]["done"]
            t0 = time.monotonic()
            scored = cb.post("/v1/score", json={"checks": ["t"], "rows": [{"model_output": "yes"}]})
            latencies.append(time.monotonic() - t0)
            during.append((before, ca.get(f"/v1/runs/{run_a}").json()["progress"]["done"]))
            assert scored.status_code == 200, scored.text
            assert scored.json()["results"][0]["score"] is True
        scrape = ca.get("/metrics").text  # the gauges read the ledger on every API node
        depth = re.search(r"^scorebox_queue_depth (\S+)$", scrape, re.M)
        assert depth is not None and float(depth.group(1)) > 0, scrape[:2000]
        body_b = wait_run(cb, run_b)
        a_when_b_done = ca.get(f"/v1/runs/{run_a}").json()["progress"]["done"]
        body_a = wait_run(ca, run_a, timeout=600)
        total = time.monotonic() - started
    _assert_exactly_once(cluster, run_b, 10, body_b)
    _assert_exactly_once(cluster, run_a, rows_a, body_a)
    assert body_a["summary"][0]["counts"] == {"ok": rows_a}
    by_worker = dict(
        cluster.sql(
            "SELECT worker, COUNT(*) FROM run_chunks WHERE run_id = :r GROUP BY worker", r=run_a
        )
    )
    print(
        f"\ndistributed: {rows_a} rows in {total:.1f}s, chunks per worker {by_worker}; "
        f"B's 10-row run done when A was at {a_when_b_done}/{rows_a}; B's /v1/score took "
        + ", ".join(f"{x * 1000:.0f} ms" for x in latencies)
        + f" (A's rows done before and after each: {during})"
    )
    assert set(by_worker) == {cluster.worker_id("w1"), cluster.worker_id("w2")}, by_worker
    assert all(n > 0 for n in by_worker.values())
    assert a_when_b_done < rows_a, "A finished before B: the fairness case measured nothing"
    # fair feeding, not FIFO: A's chunks went to the broker a few at a time, so many of them
    # were handed out only after B's run had finished (FIFO would have queued all 400 first)
    b_finished = cluster.sql("SELECT finished_at FROM runs WHERE id = :r", r=run_b)[0][0]
    a_after_b = cluster.sql(
        "SELECT COUNT(*) FROM run_chunks WHERE run_id = :r AND dispatched_at > :t",
        r=run_a,
        t=b_finished,
    )[0][0]
    assert a_after_b > 0, "every chunk of A was in the broker before B's 10-row run finished"
    assert_not_behind(during, rows_a)


def test_kill_9_of_a_worker_mid_chunk_and_of_an_api_node_mid_run(cluster: Cluster) -> None:
    _full(cluster)
    rows = 4000
    headers = cluster.tenant("durable")
    with cluster.client("api1", headers) as c1, cluster.client("api2", headers) as c2:
        assert c1.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
        data = [{"id": i, "model_output": "x" * (i % 17)} for i in range(rows)]
        run_id = c1.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"]
        victim = cluster.worker_id("w1")
        deadline = time.monotonic() + 120
        while True:  # kill w1 once it has stored part of a chunk it is running
            running = cluster.sql(
                "SELECT c.chunk_no, COALESCE(SUM(b.rows), 0) FROM run_chunks c "
                f"LEFT JOIN run_result_blocks b ON {IN_CHUNK}"
                " WHERE c.run_id = :r AND c.state = 'running' AND c.worker = :w "
                "GROUP BY c.chunk_no",
                r=run_id,
                w=victim,
            )
            partial = [(n, k) for n, k in running if 0 < k < 500]
            if partial:
                break
            assert time.monotonic() < deadline, "w1 never ran a chunk"
            time.sleep(0.05)
        cluster.kill("w1")
        cluster.kill("api1")  # the node that accepted the run
        body = wait_run(c2, run_id, timeout=300)
        results = [
            json.loads(line)
            for line in c2.get(
                f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
            ).text.splitlines()
        ]
    _assert_exactly_once(cluster, run_id, rows, body)
    assert sorted(r["row_index"] for r in results) == list(range(rows))
    assert all(r["status"] == "ok" and r["score"] == r["row_index"] % 17 for r in results)
    # the killed worker's chunk went to w2, which scored only the rows that had no result
    chunk_no, stored_before = partial[0]
    redone = re.findall(
        rf"chunk {run_id}:0:{chunk_no} epoch \d+: (\d+) rows scored, (\d+) already had results",
        cluster.log("w2"),
    )
    assert redone, cluster.log("w2")[-3000:]
    scored, skipped = map(int, redone[-1])
    assert skipped >= stored_before > 0
    assert scored + skipped == 500
    print(
        f"\nkill -9: w1 died with {stored_before}/500 rows of chunk {chunk_no} stored; "
        f"w2 scored the other {scored}"
    )


def test_cancel_and_quota_from_another_api_node(cluster: Cluster) -> None:
    _full(cluster)
    headers = cluster.tenant("canceller", queued_runs=1)
    with cluster.client("api1", headers) as c1, cluster.client("api2", headers) as c2:
        assert c1.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
        data = [{"model_output": "x" * (i % 5)} for i in range(20_000)]
        run_id = c1.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"]
        wait_done(c1, run_id, 200)
        # the queued-runs quota holds across API nodes (counted in PostgreSQL)
        second = c2.post("/v1/runs", json={"checks": ["len"], "rows": data[:10]})
        assert second.status_code == 429, second.text
        assert "Retry-After" in second.headers
        reply = c2.post(f"/v1/runs/{run_id}/cancel")
        assert reply.status_code == 200, reply.text
        assert reply.json()["status"] == "cancelled"
        # running chunks stop at their next write: the count settles, then stays put
        readings = [-1]
        deadline = time.monotonic() + 60
        while True:
            time.sleep(1)
            readings.append(c1.get(f"/v1/runs/{run_id}").json()["progress"]["done"])
            if readings[-1] == readings[-2]:
                break
            assert time.monotonic() < deadline, f"results still growing: {readings}"
        settled = readings[-1]
        time.sleep(3)
        later = c1.get(f"/v1/runs/{run_id}").json()
    assert later["status"] == "cancelled"
    assert later["progress"]["done"] == settled < 20_000
    states = dict(
        cluster.sql(
            "SELECT state, COUNT(*) FROM run_chunks WHERE run_id = :r GROUP BY state", r=run_id
        )
    )
    assert "queued" not in states and "running" not in states and "pending" not in states, states
    # chunks that were running stopped part-way (they did not run to their end)
    partial = cluster.sql(
        f"SELECT c.chunk_no, SUM(b.rows) FROM run_chunks c JOIN run_result_blocks b ON {IN_CHUNK} "
        "WHERE c.run_id = :r AND c.state = 'dropped' GROUP BY c.chunk_no "
        "HAVING SUM(b.rows) < 500",
        r=run_id,
    )
    assert partial, "no running chunk was stopped mid-way"


def test_worker_started_after_submission_picks_up_work(cluster: Cluster) -> None:
    cluster.start_server("api1")
    headers = cluster.tenant("early")
    with cluster.client("api1", headers) as c:
        assert c.post("/v1/checks", json={"name": "t", "source": TRIVIAL}).status_code == 201
        data = [{"model_output": "yes"}] * 1500
        run_id = c.post("/v1/runs", json={"checks": ["t"], "rows": data}).json()["id"]
        # another run whose API node died after the 202, before queueing anything
        check = c.get("/v1/checks/t").json()
        tenant_id = cluster.sql("SELECT tenant_id FROM runs WHERE id = :r", r=run_id)[0][0]
        orphan = Run(
            id=new_id("run"),
            tenant_id=tenant_id,
            status=RunStatus.QUEUED,
            checks=[RunCheck("code", "t", check["version"], check["id"], {}, "bool")],
            limits=None,
            labels={},
            row_count=700,
            error=None,
            created_at=utcnow(),
            started_at=None,
            finished_at=None,
        )
        cluster.store.create_run(orphan, ({"model_output": "no"} for _ in range(700)), None)
        # a worker that serves only /v1/score (--queues) answers it, and takes no chunk
        cluster.start_worker("interactive", queues="scorebox.score")
        scored = c.post("/v1/score", json={"checks": ["t"], "rows": [{"model_output": "yes"}]})
        assert scored.status_code == 200, scored.text
        assert scored.json()["results"][0]["score"] is True
        time.sleep(2)
        assert c.get(f"/v1/runs/{run_id}").json()["progress"]["done"] == 0  # no chunk worker yet
        cluster.start_worker("late")
        body = wait_run(c, run_id)
        doctor = subprocess.run(
            [*CLI, "doctor", "--json"],
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        orphan_body = wait_run(c, orphan.id)
        with httpx.Client(base_url=c.base_url, timeout=120) as ui:  # the dashboard, signed in
            key = headers["Authorization"].removeprefix("Bearer ")
            assert ui.post("/ui/signin", data={"api_key": key}).status_code == 303
            health = ui.get("/ui/health")
    _assert_exactly_once(cluster, run_id, 1500, body)
    _assert_exactly_once(cluster, orphan.id, 700, orphan_body)
    assert orphan_body["summary"][0]["counts"] == {"ok": 700}
    # the workers counted their writes; the run's summary was stored at its finish
    for rid, rows in ((run_id, 1500), (orphan.id, 700)):
        done, stored = cluster.sql("SELECT results_done, summary FROM runs WHERE id = :r", r=rid)[0]
        assert done == rows and stored["done"] == rows, (rid, done, stored)
    assert health.status_code == 200, health.text
    workers = health.text[health.text.index('aria-label="workers"') :]
    assert "late@" in workers and "<td>thread</td><td>2</td>" in workers, workers
    findings = {f["name"]: f for f in json.loads(doctor.stdout)["checks"]}
    assert findings["broker"]["ok"], findings
    assert findings["workers"]["ok"] and "late@" in findings["workers"]["detail"], findings
    assert "thread pool, 2 slots" in findings["workers"]["detail"]


GENERATED = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output.lower()\n"


def test_an_api_node_without_docker_generates_checks_on_a_worker(
    cluster: Cluster, fake_llm: FakeLLM
) -> None:
    """The generator's self-tests (unsaved code) go through the queue like /v1/score."""
    cluster.start_worker("w1")
    cluster.start_server(
        "api1",
        SCOREBOX_DOCKER_HOST="unix:///nonexistent/docker.sock",  # an API node needs no Docker
        SCOREBOX_LLM_BASE_URL=fake_llm.base_url,
        SCOREBOX_LLM_API_KEY="test-key",
        SCOREBOX_LLM_MODEL="fake-model",
        SCOREBOX_LLM_MAX_RETRIES="0",
        SCOREBOX_SCORE_WAIT_SECONDS="20",
    )
    fake_llm.reply(f"```python\n{GENERATED}```")
    examples = [
        {"row": {"model_output": "Yes, it is."}, "expected": True},
        {"row": {"model_output": "no"}, "expected": False},
    ]
    with cluster.client("api1", cluster.tenant("gen")) as c:
        reply = c.post(
            "/v1/checks/generate",
            json={"description": "says yes", "output_data_type": "bool", "examples": examples},
        )
        assert c.post("/v1/checks", json={"name": "t", "source": TRIVIAL}).status_code == 201
        rows = [{"model_output": "yes"}, {"model_output": "no"}]
        scored = c.post("/v1/score", json={"checks": ["t"], "rows": rows})
        run_id = c.post("/v1/runs", json={"checks": ["t"], "rows": rows * 300}).json()["id"]
        body = wait_run(c, run_id)
    assert reply.status_code == 200, reply.text
    generated = reply.json()
    assert generated["accepted"] is True, generated
    assert generated["code"] == GENERATED
    assert generated["agreement"] == {"passed": 2, "total": 2}
    assert scored.status_code == 200, scored.text
    assert [r["score"] for r in scored.json()["results"]] == [True, False]
    _assert_exactly_once(cluster, run_id, 600, body)


def test_redis_restarted_mid_run(cluster: Cluster) -> None:
    _full(cluster)
    rows = 6000
    headers = cluster.tenant("restart")
    with cluster.client("api1", headers) as c:
        assert c.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
        data = [{"model_output": "x" * (i % 11)} for i in range(rows)]
        run_id = c.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"]
        wait_done(c, run_id, 600)
        restarted = subprocess.run(
            [str(ROOT / "scripts" / "redis.sh"), "restart", cluster.redis_url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert restarted.returncode == 0, restarted.stderr
        at_restart = c.get(f"/v1/runs/{run_id}").json()["progress"]["done"]
        body = wait_run(c, run_id, timeout=300)
        # and /v1/score works through the new broker
        scored = c.post("/v1/score", json={"checks": ["len"], "rows": [{"model_output": "abc"}]})
    assert at_restart < rows, "the run finished before the restart: make it bigger"
    _assert_exactly_once(cluster, run_id, rows, body)
    assert scored.status_code == 200, scored.text
    assert scored.json()["results"][0]["score"] == 3


def test_distributed_mode_refuses_to_start_without_postgres_or_broker(
    pg_url: str, tmp_path: Path
) -> None:
    import os

    base = {**os.environ, "SCOREBOX_DATA_DIR": str(tmp_path)}
    cases = [
        (
            {
                "SCOREBOX_BROKER_URL": "redis://127.0.0.1:6379/0",
                "SCOREBOX_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
            },
            "needs PostgreSQL",
        ),
        (
            {
                "SCOREBOX_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
                "SCOREBOX_DATABASE_URL": pg_url,
            },
            "is not reachable",
        ),
    ]
    for env, expected in cases:
        for command in (["serve", "--port", str(free_port())], ["worker"]):
            done = subprocess.run(
                [*CLI, *command],
                env={**base, **env},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode != 0, (command, env)
            assert expected in done.stderr, (command, done.stderr)
            assert "SCOREBOX_" in done.stderr  # names the setting to fix


def test_postgres_restarted_mid_run(cluster: Cluster) -> None:
    """PostgreSQL (the one store of truth) stops and starts again while a run is
    spread over two workers: the run finishes with exactly one result per row, and the API
    nodes answer 503 with Retry-After meanwhile, not 500."""
    import os

    from tests.parts import PostgresServer

    _full(cluster)
    rows = 6000
    server = PostgresServer(os.environ["SCOREBOX_TEST_POSTGRES_URL"])
    headers = cluster.tenant("pg-restart")
    outage: list[httpx.Response] = []
    with cluster.client("api1", headers) as c:
        assert c.post("/v1/checks", json={"name": "len", "source": SLOW}).status_code == 201
        data = [{"model_output": "x" * (i % 11)} for i in range(rows)]
        run_id = c.post("/v1/runs", json={"checks": ["len"], "rows": data}).json()["id"]
        wait_done(c, run_id, 600)
        server.pause()
        try:
            for _ in range(5):
                outage.append(c.get(f"/v1/runs/{run_id}"))
                time.sleep(0.3)
        finally:
            server.resume()
        body = wait_run(c, run_id, timeout=300)
    assert {r.status_code for r in outage} == {503}, [(r.status_code, r.text) for r in outage]
    assert all(r.headers["Retry-After"].isdigit() for r in outage)
    assert body["progress"]["done"] == rows
    _assert_exactly_once(cluster, run_id, rows, body)
