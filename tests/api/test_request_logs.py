"""Each request has an id (the caller's X-Request-ID, or a new one), echoed in the answer,
and every log line written while it is handled names it and, once the key resolved, the
tenant: in the text format and in JSON (SCOREBOX_LOG_FORMAT=json)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from engine import logs
from engine.http.deps import PrincipalDep
from tests.api.conftest import Api

PROBE = logging.getLogger("scorebox.probe")


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What the JSON format writes while the test runs."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.JsonFormatter())
    PROBE.addHandler(handler)
    PROBE.setLevel(logging.INFO)
    try:
        yield out
    finally:
        PROBE.removeHandler(handler)


def _add_probe(api: Api) -> None:
    def probe(principal: PrincipalDep) -> dict[str, str]:
        # a sync route: runs in a worker thread, after the key resolved in another context
        PROBE.info("probe for %s", principal.tenant.name)
        return {}

    api.client.app.router.add_api_route("/v1/_probe", probe, methods=["GET"])  # type: ignore[attr-defined]


def test_a_log_line_names_the_request_and_the_tenant(api: Api, lines: io.StringIO) -> None:
    _add_probe(api)
    headers = api.tenant("probe-team")
    tenant_id = next(t.id for t in api.store.list_tenants() if t.name == "probe-team")
    answer = api.client.get("/v1/_probe", headers={**headers, "X-Request-ID": "rq-42"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["X-Request-ID"] == "rq-42"
    (line,) = [json.loads(x) for x in lines.getvalue().splitlines()]
    assert line["message"] == "probe for probe-team"
    assert (line["request_id"], line["tenant"], line["run"]) == ("rq-42", tenant_id, None)


def test_a_request_without_a_sane_id_gets_a_new_one(api: Api) -> None:
    first = api.client.get("/healthz").headers["X-Request-ID"]
    second = api.client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert len(first) == 16 and first != second.headers["X-Request-ID"]
    assert second.headers["X-Request-ID"] != "bad id\twith spaces"
