"""The gateway's container side (``sandbox_images/python/gateway.py``) over real loopback
sockets, and the host's hold on what a row reports (no Docker needed)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import select
import socket
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine.contract import Status
from engine.sandbox.docker.backend import _GatewayLink
from engine.sandbox.protocol import RowRecord

SOURCE = Path(__file__).resolve().parents[2] / "sandbox_images" / "python" / "gateway.py"


def load_gateway() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scorebox_container_gateway", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def gateway() -> Any:
    module = load_gateway()
    gw = module.Gateway()
    gw.listen(0)
    assert gw.listener is not None
    gw.begin({"max_request_bytes": 2048, "gateway_concurrency": 2})
    yield gw
    gw.end()
    gw.listener.close()


def pump(gw: Any, until: Any, rounds: int = 50) -> list[dict[str, Any]]:
    """Drive the gateway as the harness's select loop does until ``until()``."""
    records: list[dict[str, Any]] = []
    for _ in range(rounds):
        ready, _, _ = select.select(gw.fds(), [], [], 0.05)
        for fd in ready:
            records += gw.on_ready(fd)
        if until(records):
            break
    return records


def send(port: int, raw: bytes) -> tuple[socket.socket, list[bytes]]:
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(raw)
    return client, []


def read_all(client: socket.socket) -> bytes:
    client.settimeout(5)
    chunks: list[bytes] = []
    while True:
        data = client.recv(65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def request(body: bytes, extra: str = "") -> bytes:
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer placeholder\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def test_a_request_becomes_one_record_without_headers_and_the_reply_goes_back(gateway: Any) -> None:
    port = gateway.listener.getsockname()[1]
    client, _ = send(port, request(b'{"messages": []}', "Connection: close\r\n"))
    records = pump(gateway, lambda r: r)
    assert records == [
        {
            "t": "llm",
            "id": 1,
            "method": "POST",
            "path": "/v1/chat/completions",
            "body": '{"messages": []}',
        }
    ]
    assert "placeholder" not in json.dumps(records)  # headers never leave the container
    gateway.answer({"id": 1, "status": 200, "body": '{"ok": true}'})
    response = read_all(client)
    assert response.startswith(b"HTTP/1.1 200 OK\r\n")
    assert response.endswith(b'{"ok": true}')


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


def test_replies_to_unknown_or_earlier_requests_are_ignored(gateway: Any) -> None:
    gateway.answer({"id": 99, "status": 200, "body": "{}"})
    gateway.answer("not a reply")
    gateway.answer({"id": "1", "status": 200, "body": "{}"})
    assert gateway.inflight == 0


def test_the_job_end_answers_every_open_request(gateway: Any) -> None:
    port = gateway.listener.getsockname()[1]
    client, _ = send(port, request(b"{}"))
    pump(gateway, lambda r: r)
    gateway.end()
    assert read_all(client).split(b" ")[1] == b"503"


class Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = bytearray(data)


def test_reply_frames_are_read_whole_or_not_at_all() -> None:
    module = load_gateway()
    body = b'{"id": 1, "status": 200, "body": ""}'
    frame = b"r" + str(len(body)).encode() + b"\n" + body
    stdin = Stdin(frame[:-5])
    assert module.read_reply(stdin) is None  # incomplete: left for later
    stdin.buffer += frame[-5:] + b"12\n"
    assert module.read_reply(stdin) == {"id": 1, "status": 200, "body": ""}
    assert bytes(stdin.buffer) == b"12\n"  # the next job's header is left alone
    with pytest.raises(ValueError):
        module.read_reply(Stdin(b"r99999999\n"))


def row(**fields: Any) -> RowRecord:
    base: dict[str, Any] = {"t": "row", "i": 0, "status": "ok", "score": 1, "ms": 1.0}
    return RowRecord.model_validate({**base, **fields})


def test_a_containers_own_served_by_is_always_replaced() -> None:
    a, b = socket.socketpair()
    link = _GatewayLink(a, None)
    assert link.outcome(row(served_by="forged-model")).served_by is None
    link.deliver(1, 0, 200, "{}", "op-model", None)
    assert link.outcome(row()).served_by == "op-model"
    a.close()
    b.close()


def test_an_upstream_failure_during_a_row_makes_it_a_judge_error() -> None:
    a, b = socket.socketpair()
    link = _GatewayLink(a, None)
    link.deliver(1, 0, 424, "{}", None, "cannot connect to the LLM endpoint")
    outcome = link.outcome(row(status="error", score=None, error="APIStatusError: 424"))
    assert outcome.status is Status.JUDGE_ERROR and outcome.score is None
    assert outcome.error is not None and "cannot connect" in outcome.error
    link.close()
    link.deliver(2, 1, 200, "{}", None, None)  # after the job: nothing is written
    b.setblocking(False)
    data = b.recv(65536)
    assert data.startswith(b"r") and b'"id": 1' in data and b'"id": 2' not in data
    a.close()
    b.close()


def test_keep_alive_serves_a_second_request_on_the_same_connection(gateway: Any) -> None:
    port = gateway.listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    client.settimeout(5)
    for expected_id in (1, 2):
        client.sendall(request(b"{}"))
        [record] = pump(gateway, lambda r: r)
        assert record["id"] == expected_id
        gateway.answer({"id": expected_id, "status": 200, "body": "{}"})
        response = client.recv(65536)
        assert b"Connection: keep-alive" in response and response.endswith(b"{}")
    gateway.end()  # an idle connection is closed without a stray response
    assert client.recv(65536) == b""
