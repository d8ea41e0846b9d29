"""The gateway's dispatch with a model that takes its time (threads, no Docker): one tenant's
flood waits on its own slots and never delays another tenant, and a job that ends drops
its queued calls at once. The rest of the gateway's policy is unit-tested
(tests/unit/test_gateway_policy.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from engine.gateway import ModelGateway
from engine.llm import Completion, Message
from engine.settings import Settings
from tests.unit.test_gateway_policy import OPENAI_BODY, ScriptedClient


class SlowClient(ScriptedClient):
    """Takes ``seconds`` a call and records how many calls were in flight at once."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(self.seconds)
            return super().complete(messages, **kwargs)
        finally:
            with self.lock:
                self.now -= 1


def test_one_tenants_flood_waits_on_its_own_slots_and_never_delays_another_tenant() -> None:
    client = SlowClient(0.4)
    settings = Settings(gateway_tenant_concurrency=2, max_parallel_jobs=1)
    gateway = ModelGateway(client, settings)
    flood = gateway.session("noisy", "run-a")
    done: list[int] = []
    owner = object()

    def call(session: Any, into: list[int]) -> None:
        session.submit(
            lambda: into.append(session.answer("POST", "/v1/chat/completions", OPENAI_BODY).status),
            owner=owner,
            cancelled=lambda reason: into.append(503),
        )

    started = time.monotonic()
    for _ in range(40):  # a flood far past the threads the process has (8 here)
        call(flood, done)
    time.sleep(0.05)
    quiet: list[int] = []
    call(gateway.session("quiet", "run-b"), quiet)  # through the same dispatcher
    while not quiet and time.monotonic() - started < 10:
        time.sleep(0.01)
    quiet_took = time.monotonic() - started
    assert quiet == [200]
    assert quiet_took < 0.9  # one call's time, not behind 20 rounds of the flood
    assert gateway.dispatcher.running("noisy") <= 2  # the flood waits holding no thread
    assert gateway.dispatcher.queued("noisy") >= 30
    gateway.close()


def test_a_job_that_ends_drops_its_queued_calls_at_once() -> None:
    client = SlowClient(0.3)
    gateway = ModelGateway(client, Settings(gateway_tenant_concurrency=1))
    session = gateway.session("t", "run")
    job, other_job = object(), object()
    answers: list[tuple[str, int | str]] = []
    lock = threading.Lock()

    def call(owner: object, name: str) -> None:
        def run() -> None:
            status = session.answer("POST", "/v1/chat/completions", OPENAI_BODY).status
            with lock:
                answers.append((name, status))

        def cancelled(reason: str) -> None:
            with lock:
                answers.append((name, reason))

        session.submit(run, owner=owner, cancelled=cancelled)

    for i in range(5):
        call(job, f"job-{i}")
    call(other_job, "other")
    time.sleep(0.1)  # job-0 is running; the rest wait
    started = time.monotonic()
    assert session.cancel(job) == 4
    assert time.monotonic() - started < 0.1  # not waited for
    with lock:
        dropped = [a for a in answers if isinstance(a[1], str)]
    assert sorted(name for name, _ in dropped) == ["job-1", "job-2", "job-3", "job-4"]
    assert all("job ended" in str(reason) for _, reason in dropped)
    deadline = time.monotonic() + 5
    while len(answers) < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ("job-0", 200) in answers and ("other", 200) in answers
    assert len(client.calls) == 2  # the dropped calls never reached the model
    gateway.close()
