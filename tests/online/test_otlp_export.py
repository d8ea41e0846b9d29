"""The OTLP score export: every span score reaches the tenant's endpoint as a
``gen_ai.evaluation.result`` log record on the scored span, once, in order, after the
endpoint was down for a while; refusals are counted; a tenant cannot point it at a
private address, see another tenant's export, or read the headers back. SQLite and
PostgreSQL; the endpoint is a real HTTP server speaking OTLP/HTTP protobuf."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from engine.tenancy.auth import authenticate
from tests.api.conftest import Api, AppFactory
from tests.online.score_rows import add_scores, make_rule

SECRET = "Bearer collector-secret-" + secrets.token_hex(8)


class Collector:
    """An OTLP/HTTP logs endpoint on 127.0.0.1: records what arrives; ``answer`` sets the
    status it replies with, ``rejected`` a partial success."""

    def __init__(self, port: int = 0) -> None:
        self.records: list[tuple[Any, dict[str, str]]] = []
        self.answer = 200
        self.rejected = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.path != "/otel/v1/logs":
                    self.send_response(404)
                    self.end_headers()
                    return
                if outer.answer == 200:
                    request = ExportLogsServiceRequest()
                    request.ParseFromString(body)
                    for rl in request.resource_logs:
                        for sl in rl.scope_logs:
                            outer.records.extend((r, dict(self.headers)) for r in sl.log_records)
                reply = ExportLogsServiceResponse()
                if outer.rejected:
                    reply.partial_success.rejected_log_records = outer.rejected
                    reply.partial_success.error_message = "too old"
                payload = reply.SerializeToString()
                self.send_response(outer.answer)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/otel"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.close()


@pytest.fixture
def export_api(make_api: AppFactory) -> Api:
    return make_api(
        otlp_export_allow_hosts=["127.0.0.1"],
        otlp_export_interval_seconds=0.05,
        otlp_export_max_backoff_seconds=0.3,
    )


def _tenant_id(api: Api, headers: dict[str, str]) -> str:
    return authenticate(api.store, headers["Authorization"]).tenant_id


def _scores(api: Api, tenant_id: str, n: int) -> list[dict[str, Any]]:
    return add_scores(api.store.engine, tenant_id, make_rule(api.store.engine, tenant_id), n)


def _wait(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _attributes(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in record.attributes:
        out[kv.key] = getattr(kv.value, kv.value.WhichOneof("value"))
    return out


def test_every_score_arrives_on_its_span_with_the_convention_s_attributes(
    export_api: Api, collector: Collector
) -> None:
    api = export_api
    h = api.tenant()
    put = api.client.put(
        "/v1/otlp-export",
        headers=h,
        json={"endpoint": collector.url, "headers": {"Authorization": SECRET}},
    )
    assert put.status_code == 200, put.text
    assert put.json()["endpoint"] == f"http://127.0.0.1:{collector.port}/otel/v1/logs"
    assert put.json()["header_names"] == ["authorization"]
    assert SECRET not in put.text
    scores = _scores(api, _tenant_id(api, h), 12)
    _wait(lambda: len(collector.records) >= 12)
    got = {bytes(r.span_id).hex(): (r, headers) for r, headers in collector.records}
    assert len(collector.records) == 12  # each once
    for s in scores:
        record, headers = got[s["span_id"]]
        assert bytes(record.trace_id).hex() == s["trace_id"]
        assert record.event_name == "gen_ai.evaluation.result"
        assert headers["authorization"] == SECRET  # the tenant's header, sent
        a = _attributes(record)
        assert a["gen_ai.evaluation.name"] == "is_helpful"
        assert a["scorebox.rule"].startswith("helpful-replies") and a["scorebox.rule_version"] == 2
        assert a["scorebox.check_version"] == 3 and a["scorebox.score_id"] == s["id"]
        assert a["gen_ai.evaluation.explanation"] == s["explanation"]
        if s["status"] == "error":
            assert "gen_ai.evaluation.score.value" not in a and a["scorebox.status"] == "error"
        else:
            assert a["gen_ai.evaluation.score.value"] == s["score"]
            assert a["gen_ai.evaluation.score.label"] == ("pass" if s["passed"] else "fail")
    # in the order they were scored
    order = [bytes(r.span_id).hex() for r, _ in collector.records]
    assert order == [s["span_id"] for s in scores]
    # the marks follow the endpoint's answer
    _wait(lambda: api.client.get("/v1/otlp-export", headers=h).json()["sent"] == 12)
    state = api.client.get("/v1/otlp-export", headers=h).json()
    assert (state["pending"], state["sent"], state["failures"]) == (0, 12, 0)
    assert SECRET not in api.client.get("/v1/otlp-export", headers=h).text


def test_an_endpoint_down_for_a_while_gets_every_score_once_it_is_back(
    export_api: Api,
) -> None:
    api = export_api
    h = api.tenant()
    down = Collector()
    port = down.port
    down.close()  # nothing listens there now
    reply = api.client.put(
        "/v1/otlp-export", headers=h, json={"endpoint": f"http://127.0.0.1:{port}/otel"}
    )
    assert reply.status_code == 200, reply.text
    scores = _scores(api, _tenant_id(api, h), 30)

    def backing_off() -> bool:
        state = api.client.get("/v1/otlp-export", headers=h).json()
        return bool(state["failures"] >= 2 and state["pending"] == 30 and state["last_error"])

    _wait(backing_off)
    back = Collector(port)
    try:
        _wait(lambda: api.client.get("/v1/otlp-export", headers=h).json()["pending"] == 0)
        ids = [_attributes(r)["scorebox.score_id"] for r, _ in back.records]
        assert sorted(ids) == sorted(s["id"] for s in scores)  # every one, once
        state = api.client.get("/v1/otlp-export", headers=h).json()
        assert state["failures"] == 0 and state["sent"] == 30
    finally:
        back.close()


def test_a_400_is_not_retried_and_a_partial_success_is_counted(
    export_api: Api, collector: Collector
) -> None:
    api = export_api
    h = api.tenant()
    collector.answer = 400
    api.client.put("/v1/otlp-export", headers=h, json={"endpoint": collector.url})
    _scores(api, _tenant_id(api, h), 4)
    _wait(lambda: api.client.get("/v1/otlp-export", headers=h).json()["rejected"] == 4)
    state = api.client.get("/v1/otlp-export", headers=h).json()
    assert state["pending"] == 0 and "HTTP 400" in state["last_error"]
    collector.answer, collector.rejected = 200, 2
    _scores(api, _tenant_id(api, h), 5)
    _wait(lambda: api.client.get("/v1/otlp-export", headers=h).json()["sent"] == 3)
    state = api.client.get("/v1/otlp-export", headers=h).json()
    assert state["rejected"] == 6 and "too old" in state["last_error"]


def test_private_addresses_and_credentials_in_the_url_are_refused(api: Api) -> None:
    h = api.tenant()
    for endpoint, words in [
        ("http://127.0.0.1:4318", "SCOREBOX_OTLP_EXPORT_ALLOW_HOSTS"),
        ("http://169.254.169.254/latest", "non-public address"),
        ("http://10.1.2.3:4318", "non-public address"),
        ("http://[::1]:4318", "non-public address"),
        ("http://user:pw@collector.example.com", "headers"),
        ("ftp://collector.example.com", "http:// or https://"),
        ("http://collector.example.com/?x=1", "query"),
    ]:
        reply = api.client.put("/v1/otlp-export", headers=h, json={"endpoint": endpoint})
        assert reply.status_code == 422, (endpoint, reply.text)
        assert words in reply.json()["detail"], (endpoint, reply.text)
    bad_header = api.client.put(
        "/v1/otlp-export",
        headers=h,
        json={"endpoint": "http://127.0.0.1:1", "headers": {"x-a": "b\r\nInjected: 1"}},
    )
    assert bad_header.status_code == 422
    assert api.client.get("/v1/otlp-export", headers=h).status_code == 404


def test_tenants_see_and_send_only_their_own(export_api: Api, collector: Collector) -> None:
    api = export_api
    a, b = api.tenant(), api.tenant()
    api.client.put(
        "/v1/otlp-export",
        headers=a,
        json={"endpoint": collector.url, "headers": {"authorization": SECRET}},
    )
    assert api.client.get("/v1/otlp-export", headers=b).status_code == 404
    assert api.client.delete("/v1/otlp-export", headers=b).status_code == 404
    theirs = _scores(api, _tenant_id(api, b), 3)
    mine = _scores(api, _tenant_id(api, a), 2)
    _wait(lambda: len(collector.records) >= 2)
    time.sleep(0.3)  # several passes more: nothing of b's comes
    sent = {_attributes(r)["scorebox.score_id"] for r, _ in collector.records}
    assert sent == {s["id"] for s in mine}
    assert not sent & {s["id"] for s in theirs}
    assert api.client.delete("/v1/otlp-export", headers=a).status_code == 204
    assert api.client.get("/v1/otlp-export", headers=a).status_code == 404
