"""The caller is known from the headers before a byte of the body is read (KeyGate), and
bodies in flight are bounded per key and in total (BodyBudget)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from starlette.types import ASGIApp, Message

from engine.errors import QuotaExceededError
from engine.http.budget import MB, BodyBudget
from engine.tenancy import auth
from tests.api.conftest import Api, AppFactory

T = TypeVar("T")
ADMIN_KEY = "admin-key-for-the-gate-tests"


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own (the browser tests keep a loop in the main one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class Call:
    """One request driven straight through the app's ASGI interface, counting what of its
    body the app pulled."""

    def __init__(
        self,
        path: str,
        headers: dict[str, str],
        body: bytes = b"",
        *,
        declared: int | None = None,
        release: asyncio.Event | None = None,
    ) -> None:
        self.path = path
        self.headers = headers
        self.body = body
        self.declared = len(body) if declared is None else declared
        self.release = release
        self.pulled = 0  # receive() calls that handed out body bytes
        self.messages: list[Message] = []

    def scope(self) -> dict[str, Any]:
        headers = [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        headers.append((b"content-length", str(self.declared).encode()))
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 5000),
            "server": ("testserver", 80),
        }

    async def receive(self) -> Message:
        if self.release is not None:
            await self.release.wait()  # the body is still arriving until the test says so
        if self.pulled:
            await asyncio.Event().wait()  # after the body: only a disconnect, never here
        self.pulled += 1
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def send(self, message: Message) -> None:
        self.messages.append(message)

    async def __call__(self, app: ASGIApp) -> Call:
        await app(self.scope(), self.receive, self.send)
        return self

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    def header(self, name: bytes) -> bytes | None:
        return dict(self.messages[0]["headers"]).get(name)

    def detail(self) -> str:
        body = b"".join(m.get("body", b"") for m in self.messages[1:])
        return str(json.loads(body)["detail"])


def _send(api: Api, call: Call) -> Call:
    return _run(call(api.client.app))


JUNK = {"Authorization": "Bearer sbx_not_a_key", "content-type": "application/json"}
BIG = 30 * MB  # declared, never sent: under the 32 MB limit, so only the key can refuse it


def test_an_unknown_key_is_401_with_the_body_unread(api: Api) -> None:
    call = _send(api, Call("/v1/score", JUNK, b"{}", declared=BIG))
    assert call.status == 401
    assert call.pulled == 0  # not a byte of the body was asked for
    assert "unknown API key" in call.detail()
    assert call.header(b"www-authenticate") == b"Bearer"
    assert call.header(b"connection") == b"close"


def test_a_prefixed_deployment_is_gated_alike(api: Api) -> None:
    """Served under ``--root-path /api``: the path carries the prefix, the gate strips it."""
    call = Call("/api/v1/score", JUNK, b"{}", declared=BIG)
    scope = call.scope()
    scope["root_path"] = "/api"

    async def go() -> None:
        await api.client.app(scope, call.receive, call.send)

    _run(go())
    assert call.status == 401
    assert call.pulled == 0


def test_a_revoked_key_is_401_with_the_body_unread(api: Api) -> None:
    new = auth.create_tenant(api.store, "revoked-before-body")
    api.store.revoke_key(new.key.id)
    headers = {"Authorization": f"Bearer {new.secret}", "content-type": "application/json"}
    call = _send(api, Call("/v1/score", headers, b"{}", declared=BIG))
    assert call.status == 401
    assert call.pulled == 0
    assert "was revoked" in call.detail()


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/v1/runs/upload", {"Authorization": "Bearer sbx_junk"}),
        ("/v1/checks/upload", {"Authorization": "Bearer sbx_junk"}),
        ("/v0/scenario_sets_upload", {"api-key": "junk"}),
        ("/v0/scenario_sets_upload", {}),  # no credentials at all: caught by BodyLimit
    ],
)
def test_a_multipart_upload_with_a_junk_key_is_not_spooled(
    api: Api, path: str, headers: dict[str, str]
) -> None:
    part = (
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="rows.jsonl"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + b"x" * 1024 + b"\r\n--b--\r\n"
    )
    headers = {**headers, "content-type": "multipart/form-data; boundary=b"}
    call = _send(api, Call(path, headers, part, declared=200 * MB))
    assert call.status == 401
    assert call.pulled == 0  # nothing read, so nothing spooled to a temporary file
    assert "API key" in call.detail()


def test_admin_routes_take_the_admin_key_before_the_body(make_api: AppFactory) -> None:
    api = make_api(admin_key=ADMIN_KEY)
    body = json.dumps({"name": "made-by-admin"}).encode()
    tenant = {**api.tenant(), "content-type": "application/json"}
    call = _send(api, Call("/v1/admin/tenants", tenant, body))
    assert call.status == 403  # a tenant key on an admin route
    assert call.pulled == 0
    assert "not the admin key" in call.detail()
    admin = {"Authorization": f"Bearer {ADMIN_KEY}", "content-type": "application/json"}
    call = _send(api, Call("/v1/admin/tenants", admin, body))
    assert call.status == 201, call.detail()
    assert call.pulled == 1


def test_every_scheme_still_works_through_the_gate(make_api: AppFactory) -> None:
    api = make_api()
    headers = api.tenant()
    key = headers["Authorization"].removeprefix("Bearer ")
    source = "def evaluate(model_output: str) -> bool:\n    return True\n"
    pushed = api.client.post("/v1/checks", headers=headers, json={"name": "c", "source": source})
    assert pushed.status_code == 201, pushed.text
    okareo = api.client.post(
        "/v0/scenario_sets",
        headers={"api-key": key},
        json={"name": "s", "seed_data": [{"input": "q", "result": "a"}]},
    )
    assert okareo.status_code < 300, okareo.text
    signin = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert signin.status_code == 303, signin.text  # anonymous: the form carries the key
    listed = api.client.get("/ui/checks")
    assert listed.status_code == 200
    assert ">c<" in listed.text or "c</" in listed.text


def test_bodies_in_flight_are_bounded_per_key_and_in_total(make_api: AppFactory) -> None:
    api = make_api(body_inflight_mb_per_key=1, body_inflight_mb=2)
    a, b, c = (api.tenant() for _ in range(3))
    body = b"{}"
    held = int(0.8 * MB)

    async def scenario() -> tuple[Call, Call, Call, Call, Call]:
        app = api.client.app
        release = asyncio.Event()
        first = Call("/v1/score", a, body, declared=held, release=release)
        running = asyncio.create_task(first(app))
        await asyncio.sleep(0.2)  # the first body is admitted and still arriving
        same_key = await Call("/v1/score", a, body, declared=held)(app)
        other = Call("/v1/score", b, body, declared=held, release=release)
        running_b = asyncio.create_task(other(app))
        await asyncio.sleep(0.2)
        third = await Call("/v1/score", c, body, declared=held)(app)  # 2.4 MB in total
        release.set()
        await running
        await running_b
        again = await Call("/v1/score", a, body, declared=held)(app)  # all answered: room
        return first, same_key, other, third, again

    first, same_key, other, third, again = _run(scenario())
    assert same_key.status == 429
    assert same_key.pulled == 0
    assert same_key.header(b"retry-after") == b"2"
    assert "SCOREBOX_BODY_INFLIGHT_MB_PER_KEY" in same_key.detail()
    assert third.status == 429
    assert third.pulled == 0
    assert "SCOREBOX_BODY_INFLIGHT_MB" in third.detail()
    assert "PER_KEY" not in third.detail()
    for answered in (first, other, again):  # admitted: the route read the body and answered
        assert answered.pulled == 1
        assert answered.status not in (401, 429), answered.detail()


def test_a_chunked_body_is_metered_as_it_arrives(make_api: AppFactory) -> None:
    api = make_api(body_inflight_mb_per_key=1, body_inflight_mb=64)
    a = api.tenant()
    chunk = b" " * (256 * 1024)

    async def scenario() -> tuple[Call, list[Message], int]:
        app = api.client.app
        release = asyncio.Event()
        first = Call("/v1/score", a, b"{}", declared=int(0.6 * MB), release=release)
        running = asyncio.create_task(first(app))
        await asyncio.sleep(0.2)  # 0.6 MB of A's admitted and still arriving
        sent: list[Message] = []
        pulled = 0

        async def receive() -> Message:
            nonlocal pulled
            pulled += 1
            return {"type": "http.request", "body": chunk, "more_body": True}  # endless

        async def send(message: Message) -> None:
            sent.append(message)

        scope = Call("/v1/score", a).scope()
        scope["headers"] = [h for h in scope["headers"] if h[0] != b"content-length"]
        scope["headers"].append((b"transfer-encoding", b"chunked"))
        await app(scope, receive, send)
        release.set()
        await running
        return first, sent, pulled

    first, sent, pulled = _run(scenario())
    assert sent[0]["status"] == 429  # cut off once A's bodies passed 1 MB
    assert pulled == 2  # 0.6 + 0.25 fits, 0.6 + 0.5 does not: cut at the second chunk
    detail = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))["detail"]
    assert "SCOREBOX_BODY_INFLIGHT_MB_PER_KEY" in detail
    assert first.status not in (401, 429)


def test_the_budget_never_refuses_a_body_alone() -> None:
    budget = BodyBudget(per_key_bytes=10, total_bytes=20)
    budget.take("a", 100)  # alone: only the route's byte limit bounds it
    with pytest.raises(QuotaExceededError, match="PER_KEY"):
        budget.take("a", 1)
    with pytest.raises(QuotaExceededError, match="SCOREBOX_BODY_INFLIGHT_MB"):
        budget.take("b", 1)  # the server is past its total
    budget.take("a", 5, mine=100)  # a chunk more of the same request
    budget.give("a", 105)
    assert budget.total == 0
    assert budget.held == {}
    budget.take("b", 8)
    budget.take("c", 8)
    with pytest.raises(QuotaExceededError):
        budget.take("d", 8)  # 24 > 20
    budget.take("b", 2)  # 18 in total, 10 for b: both at their bounds, not past
    assert budget.total == 18
