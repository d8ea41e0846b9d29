"""The /v1/score reply channel and per-tenant slots on a real Redis, shared by two "API nodes"."""

from __future__ import annotations

import threading
import time

from engine.distributed.replies import Replies, new_reply_key


def test_replies_arrive_in_order_and_wait_times_out(redis_url: str) -> None:
    api, worker = Replies(redis_url), Replies(redis_url)
    key = new_reply_key()
    assert api.wait(key, 0.05) is None
    threading.Timer(0.1, lambda: worker.push(key, {"started": "w"})).start()
    worker.push(key + "x", {"other": 1})  # another request's reply is not ours
    assert api.wait(key, 5) == {"started": "w"}
    worker.push(key, {"results": [[{"status": "ok"}]]})
    assert api.wait(key, 5) == {"results": [[{"status": "ok"}]]}
    api.close()
    worker.close()


def test_score_slots_are_shared_by_every_api_node(redis_url: str) -> None:
    node1, node2 = Replies(redis_url), Replies(redis_url)
    tenant = new_reply_key()  # a fresh tenant id
    assert node1.take_slot(tenant, "a", 2, hold_seconds=60, wait_seconds=0)
    assert node2.take_slot(tenant, "b", 2, hold_seconds=60, wait_seconds=0)
    started = time.monotonic()
    assert not node1.take_slot(tenant, "c", 2, hold_seconds=60, wait_seconds=0.3)
    assert time.monotonic() - started >= 0.3  # it waited for a slot before giving up
    threading.Timer(0.2, lambda: node2.free_slot(tenant, "b")).start()
    assert node1.take_slot(tenant, "c", 2, hold_seconds=60, wait_seconds=5)
    # a slot of an API node that died is given back when its hold runs out
    other = new_reply_key()
    assert node1.take_slot(other, "dead", 1, hold_seconds=0.2, wait_seconds=0)
    assert node2.take_slot(other, "next", 1, hold_seconds=60, wait_seconds=2)
    node1.close()
    node2.close()
