"""Declared environments per worker host through a real Redis: what the workers of two hosts
publish next to their heartbeat, and what the API node's environment endpoint says from it;
two worker processes of one host build an environment once."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from engine.distributed.replies import HOST_ENVS_PREFIX, WORKER_TTL_SECONDS, Replies
from engine.environments.hosts import distributed_status, host_label
from engine.environments.spec import environment_key, read_block
from engine.environments.status import status_of
from engine.settings import Settings
from tests.distributed.cluster import Cluster
from tests.live_server import wait_run

SOURCE = '# /// script\n# dependencies = ["textstat==0.7.4"]\n# ///\ndef check(output): ...\n'
IMAGE = "img:1"


def test_the_api_node_shows_each_hosts_state_from_redis(redis_url: str) -> None:
    worker_a, worker_b, api = Replies(redis_url), Replies(redis_url), Replies(redis_url)
    for stale in api._redis.scan_iter(match=HOST_ENVS_PREFIX + "*"):  # a cluster's workers'
        api._redis.delete(stale)
    unknown = status_of(SOURCE, None)  # an API node of distributed mode builds nothing
    assert unknown.state == "unknown"
    assert distributed_status(unknown, IMAGE, api.host_environments()).state == "unknown"

    key = environment_key(("textstat==0.7.4",), IMAGE)
    worker_a.publish_environments("host-a", {key: {"state": "built"}})
    worker_b.publish_environments("host-b", {})
    seen = api.host_environments()
    assert seen == {"host-a": {key: {"state": "built"}}, "host-b": {}}
    assert 0 < api._redis.ttl(HOST_ENVS_PREFIX + "host-a") <= WORKER_TTL_SECONDS
    status = distributed_status(unknown, IMAGE, seen)
    assert (status.state, status.key) == ("ready", key)
    assert status.hosts == {host_label("host-a"): "built", host_label("host-b"): "missing"}

    worker_b.publish_environments("host-b", {key: {"state": "building"}})
    status = distributed_status(unknown, IMAGE, api.host_environments())
    assert (status.state, status.hosts[host_label("host-b")]) == ("building", "building")

    message = "environment k failed to build: no wheel for textstat (build log: ...)"
    worker_b.publish_environments("host-b", {key: {"state": "failed", "error": message}})
    status = distributed_status(unknown, IMAGE, api.host_environments())
    assert (status.state, status.error) == ("failed", message)
    assert status.hosts == {host_label("host-a"): "built", host_label("host-b"): "failed"}

    api._redis.delete(HOST_ENVS_PREFIX + "host-b")  # host-b's workers stopped: it expired
    status = distributed_status(unknown, IMAGE, api.host_environments())
    assert (status.state, status.hosts) == ("ready", {host_label("host-a"): "built"})
    for replies in (worker_a, worker_b, api):
        replies.close()


SIX_CHECK = (
    '# /// script\n# dependencies = ["six==1.16.0"]\n# ///\n'
    "import six\n\n\ndef evaluate(model_output: str) -> bool:\n"
    "    return six.PY3 and 'yes' in model_output\n"
)


@pytest.mark.docker
@pytest.mark.postgres
@pytest.mark.slow
def test_two_workers_on_one_host_build_once_and_the_api_node_shows_the_host(
    docker_settings: Settings, pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    key = environment_key(read_block(SIX_CHECK).requirements, docker_settings.image)
    subprocess.run(["docker", "rmi", "-f", f"scorebox-env:{key}"], capture_output=True, check=False)
    cluster = Cluster(tmp_path, pg_url, redis_url, SCOREBOX_RUN_CHUNK_ROWS="5")
    try:
        cluster.start_worker("w1")
        cluster.start_worker("w2")
        cluster.start_server("api1")
        with cluster.client("api1", cluster.tenant("t")) as c:
            made = c.post("/v1/checks", json={"name": "six", "source": SIX_CHECK})
            assert made.status_code == 201, made.text
            rows = [{"model_output": "yes"}] * 40
            run = c.post("/v1/runs", json={"checks": ["six"], "rows": rows}).json()["id"]
            body = wait_run(c, run, timeout=300)
            deadline = time.monotonic() + 30  # the next heartbeat publishes the build
            while True:
                state = c.get("/v1/checks/six/environment").json()
                if state["state"] == "ready" or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
    finally:
        cluster.close()
    assert body["status"] == "succeeded", body
    query = "SELECT worker, COUNT(*) FROM run_chunks WHERE run_id = :r GROUP BY worker"
    workers = dict(cluster.sql(query, r=run))
    assert len(workers) == 2, workers  # both workers needed the environment
    builds = cluster.log("w1").count(f"built environment {key}") + cluster.log("w2").count(
        f"built environment {key}"
    )
    assert builds == 1, cluster.log("w1")[-3000:] + cluster.log("w2")[-3000:]
    assert (state["state"], state["key"]) == ("ready", key), state
    # tenants see a label, never the operator's host name
    assert state["hosts"] == {host_label(socket.gethostname()): "built"}, state
    assert socket.gethostname() not in state["hosts"]
