"""Two tenants flooding the gateway leave the judges a share of ``SCOREBOX_LLM_CONCURRENCY``.

The checks' calls and the model judges share the process's LLM client and its slots; the
gateway runs at most :func:`~engine.gateway.service.gateway_total` calls at once, so a
judge's call finds a slot at once however many tenants flood (real HTTP to
``tests/fake_llm.py``; no Docker).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from engine.gateway import ModelGateway
from engine.gateway.service import gateway_total
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient
from tests.fake_llm import FakeLLM, Reply


class Upstream:
    """Slow for the checks' calls, quick for the judge; counts calls in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"] == "judge":
            return Reply(text="5")
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(1.0)
        with self.lock:
            self.now -= 1
        return Reply(text="yes")


def test_two_flooding_tenants_leave_the_judges_a_slot(fake_llm: FakeLLM) -> None:
    upstream = Upstream()
    fake_llm.responder = upstream
    settings = fake_llm.settings(
        llm_concurrency=8, gateway_tenant_concurrency=4, llm_timeout_seconds=30
    )
    llm = MeteredClient(create_llm_client(settings))
    gateway = ModelGateway(llm, settings)
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "flood"}]})
    done: list[int] = []
    for tenant in ("tenant-a", "tenant-c"):
        session = gateway.session(tenant, f"run-{tenant}")

        def call(session: Any = session) -> None:
            done.append(session.answer("POST", "/v1/chat/completions", body).status)

        for _ in range(12):
            session.submit(call, owner=tenant, cancelled=lambda reason: None)
    time.sleep(0.3)  # both floods are upstream now
    started = time.monotonic()
    judged = llm.complete([{"role": "user", "content": "judge"}])  # as a model judge calls it
    took = time.monotonic() - started
    assert judged.text == "5"
    assert took < 0.5, f"the judge waited {took:.2f} s for a slot"
    assert upstream.peak == gateway_total(8) == 6  # the gateway never took all 8 slots
    # Both tenants had calls running: neither flood shut the other out.
    assert gateway.dispatcher.running("tenant-a") >= 2
    assert gateway.dispatcher.running("tenant-c") >= 2
    gateway.dispatcher.cancel("tenant-a")
    gateway.dispatcher.cancel("tenant-c")
    gateway.close()


def test_a_freed_slot_goes_to_the_tenant_with_the_fewest_calls_running() -> None:
    from engine.gateway.dispatch import Call, FairDispatcher

    release = threading.Event()
    order: list[str] = []
    dispatcher = FairDispatcher(threads=8, per_tenant=4, total=2)

    def call(tenant: str) -> Call:
        def run() -> None:
            order.append(tenant)
            release.wait(5)

        return Call(tenant, tenant, run, lambda reason: None)

    for _ in range(3):
        dispatcher.submit(call("noisy"))
    time.sleep(0.1)  # noisy holds both slots of the total; its third call waits
    dispatcher.submit(call("quiet"))
    time.sleep(0.1)
    assert order == ["noisy", "noisy"]
    release.set()
    deadline = time.monotonic() + 5
    while len(order) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert order[2] == "quiet"  # queued after noisy's third call, served before it
    dispatcher.close()


def test_calls_submitted_together_each_get_a_thread_at_once() -> None:
    from engine.gateway.dispatch import Call, FairDispatcher

    dispatcher = FairDispatcher(threads=8, per_tenant=4)
    started: list[float] = []
    release = threading.Event()

    def run() -> None:
        started.append(time.monotonic())
        release.wait(5)

    # One thread becomes idle first; then three calls of three tenants come at once.
    dispatcher.submit(Call("warm", "o", lambda: None, lambda reason: None))
    time.sleep(0.1)
    begin = time.monotonic()
    for tenant in ("a", "b", "c"):
        dispatcher.submit(Call(tenant, "o", run, lambda reason: None))
    time.sleep(0.2)
    release.set()
    assert len(started) == 3 and max(started) - begin < 0.15  # none waited for another
    dispatcher.close()
