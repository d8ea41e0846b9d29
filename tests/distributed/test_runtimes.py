"""Workers of mixed sandbox runtimes: a tenant pinned to runsc (quota ``runsc_only``) is
scored only by runsc workers, and ``scorebox doctor`` lists each worker's runtime and
warns when they differ."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from engine.settings import Settings
from tests.conftest import _in_ci, _runtime_available
from tests.distributed.cluster import Cluster
from tests.live_server import CLI, wait_run

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.slow]

TRIVIAL = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"


def _doctor(cluster: Cluster) -> dict[str, Any]:
    done = subprocess.run(
        [*CLI, "doctor", "--json"],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return {f["name"]: f for f in json.loads(done.stdout)["checks"]}


def test_a_tenant_pinned_to_runsc_is_scored_only_by_runsc_workers(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    problem = _runtime_available("runsc")
    if problem is not None:
        if _in_ci() or os.environ.get("SCOREBOX_TEST_DOCKER") == "1":
            pytest.fail(problem, pytrace=False)
        pytest.skip(problem)
    cluster = Cluster(tmp_path, pg_url, redis_url)
    try:
        cluster.start_worker("plain", SCOREBOX_RUNTIME="runc")
        cluster.start_server("api1", SCOREBOX_SCORE_WAIT_SECONDS="4")
        pinned, free = cluster.tenant("pinned", runsc_only=1), cluster.tenant("free")
        rows = [{"model_output": "yes"}] * 1200
        one = {"checks": ["t"], "rows": [{"model_output": "yes"}]}
        with cluster.client("api1", pinned) as cp, cluster.client("api1", free) as cf:
            for c in (cp, cf):
                made = c.post("/v1/checks", json={"name": "t", "source": TRIVIAL})
                assert made.status_code == 201, made.text
            pinned_run = cp.post("/v1/runs", json={"checks": ["t"], "rows": rows}).json()["id"]
            free_run = cf.post("/v1/runs", json={"checks": ["t"], "rows": rows}).json()["id"]
            free_body = wait_run(cf, free_run)  # the runc worker takes the free tenant's work
            refused = cp.post("/v1/score", json=one)  # ... and none of the pinned one's
            time.sleep(1)
            untouched = cp.get(f"/v1/runs/{pinned_run}").json()["progress"]["done"]
            alone = _doctor(cluster)

            cluster.start_worker("gv", SCOREBOX_RUNTIME="runsc")
            pinned_body = wait_run(cp, pinned_run, timeout=300)
            scored = cp.post("/v1/score", json=one)
            mixed = _doctor(cluster)
    finally:
        cluster.close()
    assert free_body["status"] == "succeeded", free_body
    assert refused.status_code == 429, refused.text
    assert refused.json()["detail"].startswith("no worker free"), refused.text
    assert untouched == 0
    assert pinned_body["status"] == "succeeded", pinned_body
    assert scored.status_code == 200, scored.text
    assert scored.json()["results"][0]["score"] is True
    by_worker = dict(
        cluster.sql(
            "SELECT worker, COUNT(*) FROM run_chunks WHERE run_id = :r GROUP BY worker",
            r=pinned_run,
        )
    )
    assert set(by_worker) == {cluster.worker_id("gv")}, by_worker
    # doctor: each worker's runtime, and a warning once they differ
    assert alone["worker runtimes"]["ok"], alone
    assert "plain@" in alone["workers"]["detail"] and "runc runtime" in alone["workers"]["detail"]
    warning = mixed["worker runtimes"]
    assert not warning["ok"] and not warning["required"], warning
    assert "runc on plain@" in warning["detail"] and "runsc on gv@" in warning["detail"]
    assert "runsc_only=1" in warning["detail"]
    assert "runsc runtime" in mixed["workers"]["detail"]
