"""The dashboard's rules and a rule's Live page (SQLite and PostgreSQL): pass rate and mean
over time with axes, one line per check version, the latest failing spans linked to their
traces, the scores by status with the backlog; a trace's page shows its span's scores;
another tenant's rule is a 404 page."""

from __future__ import annotations

import re
import secrets
import time

from engine.tenancy.auth import authenticate
from tests.api.conftest import Api
from tests.online.otlp_requests import PROTOBUF, new_ids, span, traces
from tests.online.score_rows import add_scores, make_rule

HOUR_NS = 3600 * 10**9


def _sign_in(api: Api, headers: dict[str, str]) -> None:
    key = headers["Authorization"].removeprefix("Bearer ")
    reply = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert reply.status_code == 303


def test_live_page_draws_each_check_version_and_lists_failures(api: Api) -> None:
    h = api.tenant()
    tenant_id = authenticate(api.store, h["Authorization"]).tenant_id
    db = api.store.engine
    rule = make_rule(db, tenant_id, name="support-quality")
    now = time.time_ns()
    add_scores(db, tenant_id, rule, 10, check_version=3, start_ns=now - 3 * HOUR_NS)
    add_scores(db, tenant_id, rule, 6, check_version=4, start_ns=now - HOUR_NS)
    add_scores(db, tenant_id, rule, 1, check_version=4, start_ns=now, status="budget")
    _sign_in(api, h)
    listing = api.client.get("/ui/rules")
    assert listing.status_code == 200
    row = listing.text[listing.text.index('data-rule="support-quality"') :]
    assert re.search(r'data-field="backlog">0<', row) and re.search(r'data-field="scored">12<', row)
    assert "budget: 1" in row
    page = api.client.get("/ui/rules/support-quality")
    assert page.status_code == 200
    # two lines, one per check version, on both charts; each point says what it is
    assert page.text.count("■ is_helpful@3") == 2 and page.text.count("■ is_helpful@4") == 2
    # version 3: 8 scored of 10 (2 erred), 4 pass; version 4: 4 scored of 6, 2 pass
    assert re.search(r"is_helpful@3, [^<]*: 50\.0% of 8</title>", page.text)
    assert re.search(r"is_helpful@4, [^<]*: 50\.0% of 4</title>", page.text)
    assert "0%</text>" in page.text and "100%</text>" in page.text  # the rate axis
    assert '<span id="scored">12</span>' in page.text
    assert '<span id="backlog">0</span>' in page.text
    assert re.search(r'data-status="error">.*?<td>4</td>', page.text, re.S)
    failing = page.text[page.text.index('aria-label="failing spans"') :]
    assert failing.count("/ui/traces/") == 10  # 6 fails and 4 errors across both versions
    assert "fail (0)" in failing
    week = api.client.get("/ui/rules/support-quality", params={"window": "7d"})
    assert week.status_code == 200 and "is_helpful@4" in week.text
    assert api.client.get("/ui/rules/support-quality", params={"window": "1y"}).status_code == 422


def test_a_trace_page_shows_its_span_s_scores(api: Api) -> None:
    h = api.tenant()
    tenant_id = authenticate(api.store, h["Authorization"]).tenant_id
    trace_id, span_id = new_ids()
    sent = api.client.post(
        "/v1/traces",
        content=traces(span(trace_id, span_id)).SerializeToString(),
        headers={**h, **PROTOBUF},
    )
    assert sent.status_code == 200
    rule = make_rule(api.store.engine, tenant_id, name="tone")
    key = [(trace_id.hex(), span_id.hex())]
    add_scores(api.store.engine, tenant_id, rule, 1, check_version=1, spans=key)  # erred
    add_scores(api.store.engine, tenant_id, rule, 1, check_version=2, spans=key, status="scored")
    _sign_in(api, h)
    page = api.client.get(f"/ui/traces/{trace_id.hex()}")
    scores = page.text[page.text.index(f'aria-label="scores of {span_id.hex()}"') :]
    assert 'data-score="tone/is_helpful"' in scores
    assert "is_helpful@1" in scores and "is_helpful@2" in scores
    assert ">error<" in scores and ">fail<" in scores and "reason 0" in scores


def test_another_tenants_rule_is_a_404_page(api: Api) -> None:
    owner, other = api.tenant(), api.tenant()
    tenant_id = authenticate(api.store, owner["Authorization"]).tenant_id
    name = f"private-{secrets.token_hex(3)}"
    make_rule(api.store.engine, tenant_id, name=name)
    _sign_in(api, other)
    assert api.client.get(f"/ui/rules/{name}").status_code == 404
    assert name not in api.client.get("/ui/rules").text
