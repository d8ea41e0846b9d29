"""The gateway's container side (:mod:`engine.harness.gateway`) over real loopback
sockets, and the host's hold on what a row reports (no Docker needed). The cases that wait
out a timeout to see that nothing more arrives are in
tests/integration/test_gateway_container_waits.py."""

from __future__ import annotations

import contextlib
import json
import select
import socket
from typing import Any

import pytest

from engine.contract import Status
from engine.harness import gateway as container
from engine.sandbox.protocol import RowRecord
from engine.sandbox.relay import GatewayLink


@pytest.fixture
def gateway() -> Any:
    gw = container.Gateway()
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
        self.discard = 0


def frame_of(document: dict[str, Any]) -> bytes:
    body = json.dumps(document).encode()
    return b"r" + str(len(body)).encode() + b"\n" + body


def test_reply_frames_are_read_whole_or_not_at_all() -> None:
    body = b'{"id": 1, "status": 200, "body": ""}'
    frame = b"r" + str(len(body)).encode() + b"\n" + body
    stdin = Stdin(frame[:-5])
    assert container.read_reply(stdin) is None  # incomplete: left for later
    stdin.buffer += frame[-5:] + b"12\n"
    assert container.read_reply(stdin) == {"id": 1, "status": 200, "body": ""}
    assert bytes(stdin.buffer) == b"12\n"  # the next job's header is left alone
    with pytest.raises(ValueError):
        container.read_reply(Stdin(b"r-5\n"))


def test_an_oversized_reply_frame_is_skipped_whole_and_the_next_frame_is_read() -> None:
    big = frame_of({"id": 1, "status": 200, "body": "x" * (container.MAX_REPLY_BYTES + 10)})
    after = frame_of({"id": 2, "status": 200, "body": "ok"})
    stream = big + after
    stdin = Stdin(b"")
    replies: list[Any] = []
    # The bytes come in pieces, cut anywhere (the harness reads what is there).
    for start in range(0, len(stream), 65536):
        stdin.buffer += stream[start : start + 65536]
        while (reply := container.read_reply(stdin)) is not None:
            replies.append(reply)
    assert replies == [container.SKIPPED, {"id": 2, "status": 200, "body": "ok"}]
    assert stdin.buffer == bytearray() and stdin.discard == 0


def test_a_reply_frame_that_is_not_json_is_skipped_without_losing_the_next() -> None:
    stdin = Stdin(b"r5\n{nope" + frame_of({"id": 3, "status": 200, "body": ""}))
    assert container.read_reply(stdin) is container.SKIPPED
    assert container.read_reply(stdin) == {"id": 3, "status": 200, "body": ""}


def row(**fields: Any) -> RowRecord:
    base: dict[str, Any] = {"t": "row", "i": 0, "status": "ok", "score": 1, "ms": 1.0}
    return RowRecord.model_validate({**base, **fields})


def test_a_containers_own_served_by_is_always_replaced() -> None:
    a, b = socket.socketpair()
    link = GatewayLink(a.sendall, None)
    assert link.outcome(row(served_by="forged-model")).served_by is None
    link.deliver(1, 0, 200, "{}", "op-model", None)
    assert link.outcome(row()).served_by == "op-model"
    a.close()
    b.close()


def test_an_upstream_failure_during_a_row_makes_it_a_judge_error() -> None:
    a, b = socket.socketpair()
    link = GatewayLink(a.sendall, None)
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


def read_frames(sock: socket.socket) -> list[dict[str, Any]]:
    """Every reply frame written to the container's end so far."""
    sock.setblocking(False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := sock.recv(1 << 20):
            data += chunk
    frames = []
    while data:
        head, _, rest = data.partition(b"\n")
        size = int(head[1:])
        frames.append(json.loads(rest[:size]))
        data = rest[size:]
    return frames


def test_a_reply_over_the_frame_limit_is_refused_to_that_call_only() -> None:
    from engine.gateway.service import MAX_REPLY_BYTES

    assert container.MAX_REPLY_BYTES == MAX_REPLY_BYTES  # both ends agree
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    link = GatewayLink(a.sendall, None)
    link.deliver(1, 0, 200, '{"text": "' + "x" * MAX_REPLY_BYTES + '"}', "op-model", None)
    link.deliver(2, 0, 200, "{}", "op-model", None)
    first, second = read_frames(b)
    assert first["id"] == 1 and first["status"] == 424
    assert "over the gateway's limit of 1048576 bytes" in json.loads(first["body"])["message"]
    assert second == {"id": 2, "status": 200, "body": "{}"}
    assert link.outcome(row()).status is Status.OK  # the row is not broken by it
    a.close()
    b.close()
