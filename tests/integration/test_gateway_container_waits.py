"""The gateway's container side (:mod:`engine.harness.gateway`) and the host's relay over
real loopback sockets, where a case waits out a timeout: that nothing more arrives (the
gateway driven for a second by a select loop that sees nothing), or that calls a slow model
holds are dropped. The cases that finish as soon as their answer comes are unit tests
(tests/unit/test_gateway_container.py)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import Any

import pytest

from engine.harness import gateway as container
from engine.sandbox.relay import GatewayLink
from tests.unit.test_gateway_container import pump, read_all, read_frames, request, send


@pytest.fixture
def gateway() -> Any:
    gw = container.Gateway()
    gw.listen(0)
    assert gw.listener is not None
    gw.begin({"max_request_bytes": 2048, "gateway_concurrency": 2})
    yield gw
    gw.end()
    gw.listener.close()


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (request(b"x" * 4096), b"413"),
        (
            b"POST /v1/chat HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            b"411",
        ),
        (b"GARBAGE\r\n\r\n", b"400"),
        (b"POST /x HTTP/1.1\r\n" + b"H: " + b"a" * 20000 + b"\r\n\r\n", b"413"),
    ],
    ids=["body over the limit", "chunked", "bad request line", "huge headers"],
)
def test_bad_requests_are_refused_in_the_container(gateway: Any, raw: bytes, status: bytes) -> None:
    port = gateway.listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    done = threading.Event()

    def writer() -> None:
        with contextlib.suppress(OSError):  # the gateway may close before reading it all
            client.sendall(raw)
        done.set()

    threading.Thread(target=writer, daemon=True).start()
    records = pump(gateway, lambda r: False, rounds=20)
    assert records == []
    assert read_all(client).split(b" ")[1] == status


def test_at_most_max_inflight_requests_are_accepted_and_sent_at_once(gateway: Any) -> None:
    """The container's bound holds where requests come in: 6 clients at once against a
    bound of 2 give 2 records; each reply lets one more in, until all 6 are answered."""
    port = gateway.listener.getsockname()[1]
    clients = [send(port, request(b"{}", "Connection: close\r\n"))[0] for _ in range(6)]
    records = pump(gateway, lambda r: False, rounds=10)
    assert [r["id"] for r in records] == [1, 2]
    assert gateway.inflight == 2 and len(gateway.conns) == 2  # the rest wait in the backlog
    answered = 0
    while records:
        record = records.pop(0)
        records += gateway.answer({"id": record["id"], "status": 200, "body": "{}"})
        answered += 1
        assert gateway.inflight <= 2
        records += pump(gateway, lambda r: r, rounds=10)
        assert gateway.inflight <= 2
    assert answered == 6
    for client in clients:
        assert read_all(client).startswith(b"HTTP/1.1 200 OK")


def test_keep_alive_requests_past_the_bound_are_held_until_a_slot_frees(gateway: Any) -> None:
    port = gateway.listener.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    # Open three keep-alive connections one at a time (each answered), so all are idle.
    for client in clients:
        client.sendall(request(b"{}"))
        [record] = pump(gateway, lambda r: r)
        gateway.answer({"id": record["id"], "status": 200, "body": "{}"})
        client.settimeout(5)
        assert client.recv(65536).startswith(b"HTTP/1.1 200 OK")
    for client in clients:  # now all three ask at once on their open connections
        client.sendall(request(b"{}"))
    records = pump(gateway, lambda r: False, rounds=10)
    assert len(records) == 2 and len(gateway.held) == 1  # the third is held, unsent
    released = gateway.answer({"id": records[0]["id"], "status": 200, "body": "{}"})
    assert len(released) == 1 and released[0]["id"] == records[1]["id"] + 1
    assert gateway.inflight == 2


def test_a_client_that_hangs_up_keeps_its_slot_until_the_hosts_reply(gateway: Any) -> None:
    port = gateway.listener.getsockname()[1]
    first, _ = send(port, request(b"{}"))
    [record] = pump(gateway, lambda r: r)
    first.close()
    pump(gateway, lambda r: False, rounds=5)  # the gateway sees the hang-up
    assert gateway.busy() == 1  # the host still counts it: so does the container
    assert gateway.answer({"id": record["id"], "status": 200, "body": "{}"}) == []
    assert gateway.busy() == 0


class _SlowModel:
    """An LLMClient double that takes ``seconds`` a call."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        from engine.llm import Completion, Usage

        self.calls += 1
        time.sleep(self.seconds)
        return Completion("4", "op-model", Usage(5, 1))


def llm_record(request_id: int) -> Any:
    from engine.sandbox.protocol import LLMRequestRecord

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    return LLMRequestRecord(
        t="llm", id=request_id, method="POST", path="/v1/chat/completions", body=body
    )


def test_the_host_answers_429_past_the_containers_bound_and_drops_queued_calls_at_job_end() -> None:
    from engine.gateway import ModelGateway
    from engine.settings import Settings

    model = _SlowModel(0.4)
    settings = Settings(gateway_container_concurrency=3, gateway_tenant_concurrency=1)
    gateway = ModelGateway(model, settings)
    a, b = socket.socketpair()
    link = GatewayLink(a.sendall, gateway.session("t", "run"))
    for request_id in (1, 2, 3, 4):  # one past the container's bound of 3
        link.request(llm_record(request_id), 0)
    time.sleep(0.1)
    [refused] = read_frames(b)
    assert refused["id"] == 4 and refused["status"] == 429
    assert "SCOREBOX_GATEWAY_CONTAINER_CONCURRENCY" in refused["body"]
    started = time.monotonic()
    link.close()  # the job ended: calls 2 and 3 still wait for the tenant's one slot
    assert time.monotonic() - started < 0.1  # the running call is not waited for
    assert gateway.dispatcher.queued("t") == 0
    time.sleep(0.6)
    assert model.calls == 1  # the queued calls never reached the model
    gateway.close()
    a.close()
    b.close()


def test_requests_left_in_the_backlog_are_never_served_to_the_next_job(gateway: Any) -> None:
    port = gateway.listener.getsockname()[1]
    clients = [send(port, request(b"{}", "Connection: close\r\n"))[0] for _ in range(5)]
    records = pump(gateway, lambda r: False, rounds=10)
    assert len(records) == 2  # the bound: three wait in the backlog
    gateway.end()
    gateway.begin({"max_request_bytes": 2048, "gateway_concurrency": 2})
    assert pump(gateway, lambda r: False, rounds=10) == []  # nothing of the last job's
    for client in clients:
        client.close()
