"""Distributed mode: a run's gateway quota is one quota across workers (a Redis ledger).

Two gateways (two workers' processes) answer calls of the same run at once against one
quota of 1,000 tokens; the upstream (``tests/fake_llm.py``) answers each call with as long
a reply as it was allowed. Together they never pass the quota. A Redis that cannot be
reached refuses calls (503) rather than letting them through unmetered.
"""

from __future__ import annotations

import json
import secrets
import threading
from typing import Any

from engine.gateway import ModelGateway
from engine.gateway.ledger import Refusal
from engine.gateway.shared_ledger import RedisTokenLedger
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient
from engine.runs.wiring import build_gateway
from engine.settings import Settings
from tests.fake_llm import FakeLLM, Reply

BODY = json.dumps(
    {"model": "gpt-4o", "max_tokens": 300, "messages": [{"role": "user", "content": "judge"}]}
)


def greedy(body: dict[str, Any]) -> Reply:
    return Reply(text="abcd" * int(body["max_tokens"]), delay_seconds=0.2)


def worker_gateway(fake_llm: FakeLLM, redis_url: str) -> ModelGateway:
    settings = fake_llm.settings(quota_llm_tokens_per_run=1000, gateway_tenant_concurrency=16)
    llm = MeteredClient(create_llm_client(settings))
    return ModelGateway(llm, settings, ledger=RedisTokenLedger.from_url(redis_url))


def test_two_workers_calls_of_one_run_share_one_quota(fake_llm: FakeLLM, redis_url: str) -> None:
    fake_llm.responder = greedy
    run = f"run-{secrets.token_hex(6)}"
    workers = [worker_gateway(fake_llm, redis_url) for _ in range(2)]
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(24)

    def call(gateway: ModelGateway) -> None:
        barrier.wait()
        reply = gateway.session("tenant-a", run).answer("POST", "/v1/chat/completions", BODY)
        with lock:
            statuses.append(reply.status)

    threads = [threading.Thread(target=call, args=(workers[i % 2],)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    upstream = sum(
        int(r["max_tokens"]) + sum(len(m["content"]) for m in r["messages"]) // 4
        for r in fake_llm.requests
    )
    assert upstream <= 1000, f"{upstream} tokens spent against one quota of 1000"
    assert statuses.count(200) >= 3 and 403 in statuses
    # Both workers read the same ledger, which holds what the upstream counted.
    assert workers[0].spent(run) == workers[1].spent(run) == upstream
    assert workers[0].ledger.held(run) == 0
    for gateway in workers:
        gateway.close()


def test_an_unreachable_ledger_refuses_with_503() -> None:
    ledger = RedisTokenLedger.from_url("redis://127.0.0.1:9/0")  # nothing listens there
    refused = ledger.reserve("run", 1000, 10, 10)
    assert isinstance(refused, Refusal) and refused.status == 503
    assert "retry" in refused.message


def test_distributed_mode_wires_the_shared_ledger(redis_url: str) -> None:
    settings = Settings(broker_url=redis_url, llm_base_url="http://127.0.0.1:9/v1")
    llm = MeteredClient(create_llm_client(settings))
    gateway = build_gateway(settings, llm)
    assert gateway is not None and isinstance(gateway.ledger, RedisTokenLedger)
    gateway.close()
