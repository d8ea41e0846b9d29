"""One tenant's flood of model calls never starves another tenant's, in real containers
under each runtime (``SCOREBOX_TEST_DOCKER=1 SCOREBOX_IMAGE=...``).

Tenant A's check opens 64 calls at once against a slow upstream, then returns; tenant B's
check makes one call meanwhile. B's call answers at once; the container never has more
than its bound of requests in flight upstream; and when A's job ends its queued calls are
dropped rather than sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.contract import Status
from engine.gateway import ModelGateway, gateway_session
from engine.llm import MemoryResponseCache
from engine.llm.cache import TenantResponseCache
from engine.llm.openai_client import create_llm_client
from engine.llm.usage import MeteredClient
from engine.models import RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.docker

#: Each flood call takes this long upstream.
SLOW_SECONDS = 1.5
#: A's row sends its calls, then runs this long before it returns (long enough for B's
#: container to start and call under a loaded machine).
FLOOD_SECONDS = 10

FLOOD = """
import json, socket, time

def evaluate(model_output):
    # 64 connections at once, each with a request (raw sockets: threads are bounded here)
    socks = []
    for i in range(64):
        body = json.dumps(
            {"model": "gpt-4o", "messages": [{"role": "user", "content": f"flood {i}"}]}
        ).encode()
        sock = socket.socket()
        sock.setblocking(False)
        try:
            sock.connect(("127.0.0.1", 8642))
        except BlockingIOError:
            pass
        socks.append((sock, b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: x\\r\\n"
                      b"Content-Type: application/json\\r\\nContent-Length: "
                      + str(len(body)).encode() + b"\\r\\n\\r\\n" + body))
    time.sleep(0.2)
    for sock, request in socks:
        try:
            sock.send(request)
        except OSError:
            pass
    time.sleep(float(model_output))  # the flood runs this long, then the row ends
    return True
"""

ONE_CALL = """
import time
from openai import OpenAI

def evaluate(model_output):
    started = time.perf_counter()
    reply = OpenAI(max_retries=0).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "quiet"}]
    )
    assert reply.choices[0].message.content == "yes"
    return time.perf_counter() - started
"""


class Upstream:
    """Slow for the flood, quick for the rest; counts flood calls in flight at once, and
    how many were in flight when another call arrived."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.flood_now = 0
        self.flood_peak = 0
        self.flood_total = 0
        self.flooding_at_other: list[int] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not str(body["messages"][-1]["content"]).startswith("flood"):
            with self.lock:
                self.flooding_at_other.append(self.flood_now)
            return Reply(text="yes")
        with self.lock:
            self.flood_now += 1
            self.flood_total += 1
            self.flood_peak = max(self.flood_peak, self.flood_now)
        time.sleep(SLOW_SECONDS)
        with self.lock:
            self.flood_now -= 1
        return Reply(text="yes")


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    settings = docker_settings.model_copy(update={"max_parallel_jobs": 4})
    with SandboxRunner(settings) as runner:
        yield runner


def gateway_for(fake_llm: FakeLLM, base: Settings) -> ModelGateway:
    settings = fake_llm.settings(base, llm_timeout_seconds=30)
    cache = TenantResponseCache(MemoryResponseCache())
    return ModelGateway(MeteredClient(create_llm_client(settings, cache=cache)), settings)


def test_another_tenants_single_call_answers_at_once_during_a_flood(
    runner: SandboxRunner, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    upstream = Upstream()
    fake_llm.responder = upstream
    gateway = gateway_for(fake_llm, docker_settings)
    flood: list[RowResult] = []

    def run_flood() -> None:
        with gateway_session(gateway.session("tenant-a", "flood")):
            flood.extend(runner.run_check(CodeCheck(FLOOD), [{"model_output": str(FLOOD_SECONDS)}]))

    thread = threading.Thread(target=run_flood)
    thread.start()
    deadline = time.monotonic() + 60
    while upstream.flood_total < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.flood_total >= 4, "the flood reached the upstream"
    with gateway_session(gateway.session("tenant-b", "quiet")):
        [quiet] = runner.run_check(CodeCheck(ONE_CALL), [{"model_output": "x"}])
    thread.join(90)
    gateway.close()
    assert quiet.status is Status.OK, quiet.error
    assert isinstance(quiet.score, float)
    assert quiet.score < 1.0, f"tenant B's call took {quiet.score:.2f} s during the flood"
    # B's call met A's flood upstream (the moment B's call arrived, not the end of B's
    # container run, which under load may outlast the flood)
    assert upstream.flooding_at_other, "tenant B's call reached the upstream"
    assert upstream.flooding_at_other[0] > 0, "tenant A's flood was running when B's call came"
    [flood_row] = flood
    assert flood_row.status is Status.OK, flood_row.error
    # The container's bound (4) held: no more of A's calls were upstream at once ...
    assert upstream.flood_peak <= docker_settings.gateway_container_concurrency
    # ... and when A's job ended, what it had left waiting was dropped, never sent: in 10 s
    # at 1.5 s a call, 4 at a time, about 28 calls ran (a round more at most), not 64.
    bound = docker_settings.gateway_container_concurrency
    assert upstream.flood_total <= bound * (FLOOD_SECONDS / SLOW_SECONDS + 2), upstream.flood_total
