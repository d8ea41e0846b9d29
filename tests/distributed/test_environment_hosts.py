"""Declared environments per worker host through a real Redis: what the workers of two hosts
publish next to their heartbeat, and what the API node's environment endpoint says from it."""

from __future__ import annotations

from engine.distributed.replies import HOST_ENVS_PREFIX, WORKER_TTL_SECONDS, Replies
from engine.environments.hosts import distributed_status
from engine.environments.spec import environment_key
from engine.environments.status import status_of

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
    assert status.hosts == {"host-a": "built", "host-b": "missing"}

    worker_b.publish_environments("host-b", {key: {"state": "building"}})
    status = distributed_status(unknown, IMAGE, api.host_environments())
    assert (status.state, status.hosts["host-b"]) == ("building", "building")

    message = "environment k failed to build: no wheel for textstat (build log: ...)"
    worker_b.publish_environments("host-b", {key: {"state": "failed", "error": message}})
    status = distributed_status(unknown, IMAGE, api.host_environments())
    assert (status.state, status.error) == ("failed", message)
    assert status.hosts == {"host-a": "built", "host-b": "failed"}

    api._redis.delete(HOST_ENVS_PREFIX + "host-b")  # host-b's workers stopped: it expired
    status = distributed_status(unknown, IMAGE, api.host_environments())
    assert (status.state, status.hosts) == ("ready", {"host-a": "built"})
    for replies in (worker_a, worker_b, api):
        replies.close()
