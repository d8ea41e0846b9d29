"""The gateway's token quota is reserved before a call and settled after (no Docker).

Calls in flight at once cannot together pass a run's ``llm_tokens_per_run``: each holds
its prompt's estimate plus its ``max_tokens``, clamped to what is left, before it goes
upstream. The upstream here is ``tests/fake_llm.py`` over real HTTP, answering every call
with as long a reply as it was allowed (the worst case for the quota).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from engine.gateway import ModelGateway
from engine.gateway.ledger import (
    DEFAULT_MAX_TOKENS,
    Refusal,
    Reservation,
    TokenLedger,
    estimate_prompt_tokens,
)
from engine.gateway.service import quota_key
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient, UsageMeter
from tests.fake_llm import FakeLLM, Reply


def greedy(delay: float = 0.0) -> Any:
    """A responder whose reply is as long as the call's ``max_tokens`` lets it be."""

    def respond(body: dict[str, Any]) -> Reply:
        allowed = int(body.get("max_tokens") or 100_000)
        return Reply(text="abcd" * allowed, delay_seconds=delay)

    return respond


def gateway_for(fake_llm: FakeLLM, quota: int) -> ModelGateway:
    settings = fake_llm.settings(
        quota_llm_tokens_per_run=quota, gateway_tenant_concurrency=32, max_parallel_jobs=4
    )
    return ModelGateway(MeteredClient(create_llm_client(settings)), settings)


def chat(max_tokens: int | None = None, content: str = "rate this answer from 1 to 5") -> str:
    body: dict[str, Any] = {"model": "gpt-4o", "messages": [{"role": "user", "content": content}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return json.dumps(body)


def test_24_simultaneous_calls_of_one_run_never_overspend_the_quota(fake_llm: FakeLLM) -> None:
    fake_llm.responder = greedy(delay=0.3)
    gateway = gateway_for(fake_llm, 1000)
    meter = UsageMeter()
    session = gateway.session("tenant-a", "row-flood", meter)
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(24)

    def call() -> None:
        barrier.wait()
        reply = session.answer("POST", "/v1/chat/completions", chat(max_tokens=300))
        with lock:
            statuses.append(reply.status)

    threads = [threading.Thread(target=call) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    gateway.close()
    spent = meter.snapshot().total_tokens
    assert spent <= 1000, f"{spent} tokens spent against a quota of 1000"
    assert gateway.spent("row-flood") == spent
    assert statuses.count(200) >= 3  # the quota is used, not refused outright
    assert statuses.count(403) == 24 - statuses.count(200)
    sent = [int(r["max_tokens"]) for r in fake_llm.requests]
    assert len(sent) == statuses.count(200)  # a refused call never went upstream
    assert all(n <= 300 for n in sent)


def test_a_max_tokens_of_a_million_under_a_quota_of_1000_is_clamped(fake_llm: FakeLLM) -> None:
    fake_llm.responder = greedy()
    gateway = gateway_for(fake_llm, 1000)
    meter = UsageMeter()
    reply = gateway.session("t", "r", meter).answer(
        "POST", "/v1/chat/completions", chat(max_tokens=1_000_000)
    )
    gateway.close()
    assert reply.status == 200
    prompt = estimate_prompt_tokens([{"role": "user", "content": "rate this answer from 1 to 5"}])
    assert fake_llm.requests[0]["max_tokens"] == 1000 - prompt
    assert meter.snapshot().total_tokens <= 1000


def test_a_call_without_max_tokens_goes_upstream_with_a_bound(fake_llm: FakeLLM) -> None:
    fake_llm.reply("4")
    gateway = gateway_for(fake_llm, 200_000)
    gateway.session("t", "r").answer("POST", "/v1/chat/completions", chat())
    gateway.close()
    assert fake_llm.requests[0]["max_tokens"] == DEFAULT_MAX_TOKENS


def test_a_spent_quota_refuses_before_the_upstream_is_called(fake_llm: FakeLLM) -> None:
    fake_llm.responder = greedy()
    gateway = gateway_for(fake_llm, 100)
    session = gateway.session("t", "r")
    first = session.answer("POST", "/v1/chat/completions", chat())  # takes all it may
    second = session.answer("POST", "/v1/chat/completions", chat())
    gateway.close()
    assert first.status == 200
    assert second.status == 403 and "llm_tokens_per_run of 100" in second.body
    assert len(fake_llm.requests) == 1


def test_a_prompt_larger_than_what_is_left_is_refused_with_the_reason() -> None:
    ledger = TokenLedger()
    refused = ledger.reserve("r", 50, prompt_tokens=80, max_tokens=10)
    assert isinstance(refused, Refusal)
    assert "prompt (about 80 tokens)" in refused.message and "50 left" in refused.message


def test_settling_replaces_the_reservation_with_what_was_used() -> None:
    ledger = TokenLedger()
    held = ledger.reserve("r", 1000, prompt_tokens=10, max_tokens=500)
    assert held == Reservation("r", 510, 500)
    assert ledger.held("r") == 510 and ledger.spent("r") == 0
    ledger.settle(held, 42)
    assert ledger.held("r") == 0 and ledger.spent("r") == 42
    again = ledger.reserve("r", 1000, prompt_tokens=10, max_tokens=None)
    assert isinstance(again, Reservation) and again.max_tokens == 1000 - 42 - 10


def test_the_estimate_is_at_least_what_the_scripted_upstream_counts() -> None:
    # tests/fake_llm.py counts a prompt as its characters / 4, as tokenizers roughly do.
    for text in ["x", "hello " * 100, "日本語のテキスト" * 50, "{}" * 300]:
        messages = [{"role": "system", "content": "judge"}, {"role": "user", "content": text}]
        assert estimate_prompt_tokens(messages) >= sum(len(m["content"]) for m in messages) // 4


def test_a_batch_and_its_chunks_share_one_quota_key_and_runs_keep_theirs() -> None:
    batch = {"scorebox.tenant": "t", "scorebox.batch": "score:abc"}
    assert quota_key(batch) == quota_key(dict(batch)) == "score:abc"
    assert quota_key({"scorebox.tenant": "t", "scorebox.run": "run-1"}) == "run-1"
    assert quota_key({"scorebox.tenant": "t"}) != quota_key({"scorebox.tenant": "t"})
