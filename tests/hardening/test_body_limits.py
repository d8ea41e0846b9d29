"""Request bodies are bounded while they stream in, before auth."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.types import Message, Receive, Scope, Send

from engine.http.body import MB, BodyLimit, BodyLimits
from engine.http.guard import SurrogateGuard
from tests.api.conftest import Api, AppFactory

BOGUS = {"Authorization": "Bearer sbx_not_a_key"}
LIMITS = BodyLimits(body_bytes=1 * MB, upload_bytes=2 * MB, deadline_seconds=0.5)


def _chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        step = min(size, total - sent)
        sent += step
        yield b" " * step


def test_a_declared_oversized_body_is_413_before_auth(make_api: AppFactory) -> None:
    api: Api = make_api(max_body_mb=1)
    body = b"[" + b" " * (2 * MB) + b"]"
    reply = api.client.post(
        "/v1/score", content=body, headers={"content-type": "application/json", **BOGUS}
    )  # an unknown key: the limit answers before the key is looked up (401)
    assert reply.status_code == 413, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert "1 MB" in reply.json()["detail"]
    assert "SCOREBOX_MAX_BODY_MB" in reply.json()["detail"]


def test_a_chunked_oversized_body_is_413(make_api: AppFactory) -> None:
    api: Api = make_api(max_body_mb=1)
    reply = api.client.post(
        "/v1/score",
        content=_chunks(3 * MB),
        headers={"content-type": "application/json", **api.tenant()},
    )  # a real key: an unknown one is refused before the body is read (test_key_gate.py)
    assert reply.status_code == 413, reply.text
    assert "SCOREBOX_MAX_BODY_MB" in reply.json()["detail"]


def test_a_body_under_the_limit_reaches_auth(make_api: AppFactory) -> None:
    api: Api = make_api(max_body_mb=1)
    reply = api.client.post("/v1/score", json={"rows": [], "checks": []}, headers=BOGUS)
    assert reply.status_code == 401, reply.text
    assert "unknown API key" in reply.json()["detail"]


def test_multipart_uploads_have_their_own_limit(make_api: AppFactory) -> None:
    api: Api = make_api(max_body_mb=1, max_upload_mb=2)
    headers = api.tenant()
    small = b'{"model_output": "yes"}\n' * 60_000  # ~1.4 MB: over the JSON limit, under upload
    reply = api.client.post(
        "/v1/runs/upload",
        headers=headers,
        files={"file": ("rows.ndjson", small)},
        data={"checks": "no_such_check"},
    )
    assert reply.status_code != 413, reply.text
    big = b" " * (3 * MB)
    reply = api.client.post(
        "/v1/runs/upload", files={"file": ("rows.ndjson", big)}, data={"checks": "x"}, headers=BOGUS
    )
    assert reply.status_code == 413, reply.text
    assert "SCOREBOX_MAX_UPLOAD_MB" in reply.json()["detail"]
    assert "2 MB" in reply.json()["detail"]
    reply = api.client.post(
        "/v0/scenario_sets_upload",
        files={"file": ("rows.jsonl", big)},
        data={"name": "x"},
        headers={"api-key": "bogus"},
    )
    assert reply.status_code == 413, reply.text


class _Recorder:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.seen = 0

    async def send(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    def detail(self) -> str:
        return str(json.loads(self.messages[1]["body"])["detail"])


async def _reading_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads its whole body (as a route does), then answers 200 with its length."""
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            raise RuntimeError("client went away")
        size += len(message.get("body", b""))
        more = bool(message.get("more_body", False))
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


T = TypeVar("T")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own: Playwright's session-wide browser (the
    browser tests) keeps an event loop running in the main thread for the whole session."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _scope(path: str = "/v1/score") -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-type", b"application/json")],
    }


def test_the_limit_cuts_before_the_surrogate_guard_buffers() -> None:
    pulled = 0

    async def receive() -> Message:
        nonlocal pulled
        pulled += 64 * 1024
        return {"type": "http.request", "body": b" " * 64 * 1024, "more_body": True}  # endless

    out = _Recorder()
    app = BodyLimit(SurrogateGuard(_reading_app), LIMITS)
    _run(app(_scope(), receive, out.send))
    assert out.status == 413
    assert pulled <= 1 * MB + 64 * 1024  # never more than the limit and one chunk


def test_a_trickling_body_is_cut_off_by_the_total_deadline() -> None:
    async def receive() -> Message:
        await asyncio.sleep(0.1)  # one byte every 0.1 s: each read is quick, the whole is not
        return {"type": "http.request", "body": b" ", "more_body": True}

    out = _Recorder()

    async def run() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await BodyLimit(_reading_app, LIMITS)(_scope(), receive, out.send)
        return loop.time() - start

    took = _run(run())
    assert out.status == 408
    assert "SCOREBOX_BODY_DEADLINE_SECONDS" in out.detail()
    assert took < 2.0


def test_a_complete_body_in_time_passes() -> None:
    parts = [b"[1", b",2]"]

    async def receive() -> Message:
        body = parts.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    out = _Recorder()
    _run(BodyLimit(_reading_app, LIMITS)(_scope(), receive, out.send))
    assert out.status == 200
    assert out.messages[1]["body"] == b"5"


def test_a_body_without_any_credentials_is_401_unread() -> None:
    pulled = 0

    async def receive() -> Message:
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": b" " * 64 * 1024, "more_body": True}

    scope = _scope()
    scope["headers"] = [*scope["headers"], (b"transfer-encoding", b"chunked")]
    out = _Recorder()
    _run(BodyLimit(SurrogateGuard(_reading_app), LIMITS)(scope, receive, out.send))
    assert out.status == 401
    assert pulled == 0  # not a byte of the body was read
    assert "missing API key" in out.detail()
    assert (b"www-authenticate", b"Bearer") in out.messages[0]["headers"]
    signin = {**scope, "path": "/ui/signin"}  # the dashboard's forms carry no key
    out = _Recorder()
    parts = [b"api_key=x"]

    async def form() -> Message:
        return {"type": "http.request", "body": parts.pop() if parts else b"", "more_body": False}

    _run(BodyLimit(_reading_app, LIMITS)(signin, form, out.send))
    assert out.status == 200
