"""Request bodies against a real ``scorebox serve`` over raw sockets: a junk key is answered
before its body is sent, and many slow uploads at once end at the body deadline while
the server keeps answering everyone else."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from engine.storage import open_store
from engine.tenancy import auth
from tests.live_server import serve_env, serving

MB = 1024 * 1024
DEADLINE_SECONDS = 2.0
SLOW = 16  # uploads trickling in at once
SOURCE = "def evaluate(model_output: str) -> bool:\n    return True\n"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A server with a 2 s body deadline (no containers): (url, key of A, key of B)."""
    env = serve_env(
        tmp_path,
        Settings(pool_size=0),
        SCOREBOX_POOL_SIZE="0",
        SCOREBOX_BODY_DEADLINE_SECONDS=str(DEADLINE_SECONDS),
    )
    store = open_store(env["SCOREBOX_DATABASE_URL"])
    a = auth.create_tenant(store, "slow").secret
    b = auth.create_tenant(store, "quiet").secret
    store.engine.dispose()
    with serving(env, tmp_path / "serve.log", "--log-level", "warning") as url:
        yield url, a, b


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _head(path: str, length: int, credentials: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        f"{credentials}Content-Length: {length}\r\n\r\n"
    ).encode()


def _answer(sock: socket.socket) -> bytes:
    """What the server answered, up to its closing the connection (every refusal does)."""
    data = sock.recv(4096)
    if data:
        sock.settimeout(5)
        while chunk := sock.recv(4096):
            data += chunk
    return data


def _answer_left(sock: socket.socket) -> bytes:
    """What the server answered before it closed a connection a send just found closed
    (empty when the reset took it)."""
    try:
        sock.settimeout(1)
        return _answer(sock)
    except OSError:
        return b""


def test_a_junk_key_is_answered_before_its_body_is_sent(live: tuple[str, str, str]) -> None:
    url, _, _ = live
    for path, credentials in (
        ("/v1/score", "Authorization: Bearer sbx_junk\r\n"),
        ("/v1/runs/upload", "Authorization: Bearer sbx_junk\r\n"),
        ("/v0/scenario_sets_upload", "api-key: junk\r\n"),
    ):
        with _connect(url) as sock:
            sock.settimeout(10)  # far less than the body deadline the server would wait
            sock.sendall(_head(path, 31 * MB, credentials))  # and not a byte of the body
            answer = _answer(sock)
        assert answer.startswith(b"HTTP/1.1 401"), (path, answer[:200])
        assert b"connection: close" in answer.lower()


def test_many_slow_uploads_end_at_the_deadline_and_starve_no_one(
    live: tuple[str, str, str],
) -> None:
    url, a, b = live
    answers: list[bytes] = []
    took: list[float] = []
    lock = threading.Lock()
    stop = threading.Event()

    def trickle() -> None:
        started = time.monotonic()
        with _connect(url) as sock:
            sock.sendall(_head("/v1/score", 1000, f"Authorization: Bearer {a}\r\n"))
            sock.settimeout(0.3)
            answer = b""
            while not stop.is_set() and not answer:
                try:
                    sock.sendall(b" ")  # one byte every 0.3 s: each quick, the whole not
                except OSError:
                    # the server answered and closed between two bytes (on a busy host,
                    # while this thread waited for a core): its answer is still to be read
                    answer = _answer_left(sock)
                    break
                try:
                    answer = _answer(sock)
                except TimeoutError:
                    continue
                except OSError:
                    break
        with lock:
            answers.append(answer)
            took.append(time.monotonic() - started)

    threads = [threading.Thread(target=trickle) for _ in range(SLOW)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(0.5)  # every upload is now trickling
        with httpx.Client(base_url=url, timeout=10) as http:
            started = time.monotonic()
            assert http.get("/healthz").status_code == 200
            pushed = http.post(
                "/v1/checks",
                headers={"Authorization": f"Bearer {b}"},
                json={"name": "c", "source": SOURCE},
            )
            assert pushed.status_code == 201, pushed.text
            assert time.monotonic() - started < 2.0  # the others are not held up by them
    finally:
        for thread in threads:
            thread.join(timeout=DEADLINE_SECONDS + 15)
        stop.set()
    assert len(answers) == SLOW
    others = [answer[:120] for answer in answers if not answer.startswith(b"HTTP/1.1 408")]
    assert not others, others
    assert all(b"SCOREBOX_BODY_DEADLINE_SECONDS" in answer for answer in answers)
    assert max(took) < DEADLINE_SECONDS + 5
