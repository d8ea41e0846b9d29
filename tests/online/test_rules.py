"""Rules score received spans through durable runs, and the scores come back on the spans:
CRUD and pinning, live scoring, filters and sampling live and in a backfill, idempotent
backfills, the budget, required agreements, tenant isolation; SQLite and PostgreSQL.

Built-in checks (no Docker): the path from span to run to score is the same for code
checks, which tests/online/test_rules_docker.py scores in real containers.
"""

from __future__ import annotations

import csv
import io
import json
import time
from typing import Any

from sqlalchemy import delete, select

from engine.online.sampling import sampled
from engine.online.scorer import OnlineLimits, OnlineScorer
from engine.storage.rule_tables import SpanScoreRow
from engine.storage.tables import SpanRow
from tests.api.conftest import Api
from tests.online.otlp_requests import GZIP_PROTOBUF, gz, new_ids, span, traces

START = 1_795_677_253_708_726_650  # the spans' start (2026-11-26), within the backfill window
WINDOW = {"since": "2026-11-01T00:00:00Z", "until": "2027-01-01T00:00:00Z"}


def send(api: Api, h: dict[str, str], *spans: Any, service: str = "support-bot") -> None:
    reply = api.client.post(
        "/v1/traces", content=gz(traces(*spans, service=service)), headers={**h, **GZIP_PROTOBUF}
    )
    assert reply.status_code == 200, reply.text


def scores_of(api: Api, h: dict[str, str], trace_id: bytes) -> list[dict[str, Any]]:
    reply = api.client.get(f"/v1/traces/{trace_id.hex()}", headers=h)
    assert reply.status_code == 200, reply.text
    return [s for sp in reply.json()["spans"] for s in sp["scores"]]


def wait_scored(
    api: Api, h: dict[str, str], trace_id: bytes, count: int = 1, timeout: float = 60
) -> list[dict[str, Any]]:
    """The trace's scores once ``count`` of them are final (not pending or queued)."""
    deadline = time.monotonic() + timeout
    while True:
        found = scores_of(api, h, trace_id)
        final = [s for s in found if s["status"] not in ("pending", "queued")]
        if len(final) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def rule(api: Api, h: dict[str, str], **body: Any) -> dict[str, Any]:
    document = {"name": "json-answers", "checks": ["builtin:is_json"], **body}
    reply = api.client.post("/v1/rules", headers=h, json=document)
    assert reply.status_code == 201, reply.text
    return dict(reply.json())


def wait_backfill(
    api: Api, h: dict[str, str], name: str, backfill_id: str, timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = api.client.get(f"/v1/rules/{name}/backfills/{backfill_id}", headers=h).json()
        waiting = got["scores"].get("pending", 0) + got["scores"].get("queued", 0)
        if (got["status"] != "running" and not waiting) or time.monotonic() > deadline:
            return dict(got)
        time.sleep(0.1)


def test_rules_are_created_pinned_versioned_listed_and_deleted(api: Api) -> None:
    h = api.tenant()
    api.push(h, "says_yes", "def evaluate(model_output: str) -> bool:\n    return True\n")
    made = rule(
        api,
        h,
        name="support",
        checks=["says_yes", "builtin:is_json"],
        filter={"service.name": "support-bot", "model": {"regex": "^gpt"}},
        sample_rate=0.5,
    )
    assert made["version"] == 1
    assert made["checks"] == [
        {"name": "says_yes", "version": 1, "kind": "code"},
        {"name": "is_json", "version": None, "kind": "builtin"},
    ]
    # a new version of the check does not move the rule: it stays pinned to version 1
    api.push(h, "says_yes", "def evaluate(model_output: str) -> bool:\n    return False\n")
    got = api.client.get("/v1/rules/support", headers=h).json()
    assert got["checks"][0]["version"] == 1
    assert got["counts"] == {} and got["backlog"] == 0
    # disabling alone makes no new version; a new filter does, and re-pinning moves it
    off = api.client.patch("/v1/rules/support", headers=h, json={"enabled": False}).json()
    assert (off["enabled"], off["version"]) == (False, 1)
    changed = api.client.patch(
        "/v1/rules/support", headers=h, json={"filter": {}, "checks": ["says_yes"]}
    ).json()
    assert changed["version"] == 2
    assert changed["checks"] == [{"name": "says_yes", "version": 2, "kind": "code"}]
    assert [r["name"] for r in api.client.get("/v1/rules", headers=h).json()["rules"]] == [
        "support"
    ]
    # refused: a taken name, a bad filter (named), an unknown check
    taken = api.client.post(
        "/v1/rules", headers=h, json={"name": "support", "checks": ["says_yes"]}
    )
    assert taken.status_code == 409 and "PATCH /v1/rules/support" in taken.json()["detail"]
    bad = api.client.post(
        "/v1/rules",
        headers=h,
        json={"name": "x", "checks": ["says_yes"], "filter": {"model": {"like": "g"}}},
    )
    assert bad.status_code == 422 and "unknown operator 'like'" in bad.text
    unknown = api.client.post("/v1/rules", headers=h, json={"name": "y", "checks": ["nope"]})
    assert unknown.status_code == 404
    # another tenant sees none of it
    other = api.tenant()
    assert api.client.get("/v1/rules/support", headers=other).status_code == 404
    assert api.client.get("/v1/rules", headers=other).json()["rules"] == []
    assert api.client.patch("/v1/rules/support", headers=other, json={}).status_code == 404
    assert api.client.get("/v1/rules/support/series", headers=other).status_code == 404
    assert api.client.delete("/v1/rules/support", headers=other).status_code == 404
    assert api.client.delete("/v1/rules/support", headers=h).status_code == 204
    assert api.client.get("/v1/rules/support", headers=h).status_code == 404


def test_live_spans_are_scored_and_written_back(api: Api) -> None:
    h = api.tenant()
    rule(api, h, filter={"service.name": "support-bot"})
    trace_id, span_id = new_ids()
    skipped_trace, skipped_span = new_ids()
    empty_trace, empty_span = new_ids()
    send(api, h, span(trace_id, span_id))
    send(api, h, span(skipped_trace, skipped_span), service="billing")  # filtered out
    send(api, h, span(empty_trace, empty_span, attributes={"gen_ai.operation.name": "chat"}))
    (score,) = wait_scored(api, h, trace_id)
    assert score == {
        "rule": "json-answers",
        "rule_version": 1,
        "check": "is_json",
        "check_version": None,
        "status": "scored",
        "score": 0.0,
        "passed": False,
        "explanation": score["explanation"],
    }
    assert scores_of(api, h, skipped_trace) == []
    (empty,) = scores_of(api, h, empty_trace)
    assert (empty["status"], empty["score"]) == ("no_content", None)
    # an exporter's retry of the same span queues nothing twice
    send(api, h, span(trace_id, span_id))
    time.sleep(0.5)
    assert len(scores_of(api, h, trace_id)) == 1
    # the span list filters on scores, and exports them
    listed = api.client.get(
        "/v1/spans", headers=h, params={"rule": "json-answers", "passed": "false"}
    ).json()["spans"]
    assert [(s["trace_id"], s["scores"][0]["status"]) for s in listed] == [
        (trace_id.hex(), "scored")
    ]
    skips = api.client.get("/v1/spans", headers=h, params={"status": "no_content"}).json()
    assert [s["trace_id"] for s in skips["spans"]] == [empty_trace.hex()]
    assert api.client.get("/v1/spans", headers=h, params={"passed": "true"}).json()["spans"] == []
    assert api.client.get("/v1/spans", headers=h, params={"rule": "nope"}).status_code == 404
    exported = api.client.get(
        "/v1/spans", headers={**h, "accept": "text/csv"}, params={"rule": "json-answers"}
    )
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert sorted((r["trace_id"], r["status"], r["passed"]) for r in rows) == sorted(
        [(trace_id.hex(), "scored", "false"), (empty_trace.hex(), "no_content", "")]
    )
    lines = api.client.get(
        "/v1/spans",
        headers={**h, "accept": "application/x-ndjson"},
        params={"status": "scored"},
    ).text.splitlines()
    assert [json.loads(x)["score"] for x in lines] == [0.0]
    # the rule counts every status; its series has the scored one
    got = api.client.get("/v1/rules/json-answers", headers=h).json()
    assert got["counts"] == {"scored": 1, "no_content": 1} and got["backlog"] == 0
    series = api.client.get(
        "/v1/rules/json-answers/series",
        headers=h,
        params={"bucket": "1h", **WINDOW},
    ).json()
    (line,) = series["series"]
    assert (line["check"], line["check_version"]) == ("is_json", None)
    assert [(p["count"], p["mean"], p["pass_rate"]) for p in line["points"]] == [(1, 0.0, 0.0)]
    assert p_start_hour(line["points"][0]["start"])
    metrics = api.client.get("/metrics").text
    assert 'scorebox_online_scores_total{status="queued"}' in metrics
    assert 'scorebox_online_scores_total{status="no_content"}' in metrics
    assert "scorebox_online_backlog 0.0" in metrics


def p_start_hour(text: str) -> bool:
    """A bucket of 1 h starts on the hour."""
    return text.endswith(":00:00Z") or text.endswith(":00:00+00:00")


def _trace_ids(n: int) -> list[tuple[bytes, bytes]]:
    return [new_ids() for _ in range(n)]


def test_same_spans_are_picked_live_and_in_a_backfill_and_twice_is_nothing(api: Api) -> None:
    h = api.tenant()
    ids = _trace_ids(40)
    # stored before any rule exists: only a backfill can score them
    models = ["gpt-4o-mini", "gpt-4o", "claude"]
    for n, (t, s) in enumerate(ids):
        send(api, h, span(t, s, attributes=_chat(models[n % 3])))
    rate = 0.5
    rule(
        api, h, filter={"gen_ai.request.model": {"in": ["gpt-4o-mini", "gpt-4o"]}}, sample_rate=rate
    )
    expected = {
        t.hex()
        for n, (t, _) in enumerate(ids)
        if models[n % 3] != "claude" and sampled(t.hex(), rate)
    }
    assert 0 < len(expected) < 27  # sampling kept some and dropped some
    # live: the same spans again under new ids of the same traces get the same decision
    live = [(t, new_ids()[1]) for t, _ in ids]
    for n, (t, s) in enumerate(live):
        send(api, h, span(t, s, attributes=_chat(models[n % 3]), start=START + 1))
    started = api.client.post("/v1/rules/json-answers/backfill", headers=h, json=WINDOW)
    assert started.status_code == 202, started.text
    first = wait_backfill(api, h, "json-answers", started.json()["id"])
    assert first["status"] == "done"
    assert first["scores"] == {"scored": len(expected)}  # the backfill's own spans
    by_span: dict[str, set[str]] = {}
    for t, _ in ids:
        for sp in api.client.get(f"/v1/traces/{t.hex()}", headers=h).json()["spans"]:
            if sp["scores"]:
                assert [x["status"] for x in sp["scores"]] in (["scored"], ["pending"], ["queued"])
                by_span.setdefault(sp["trace_id"], set()).add(sp["span_id"])
    # every picked trace has both its spans scored (live and backfill); no other trace
    assert set(by_span) == expected
    assert all(len(v) == 2 for v in by_span.values())
    # a second backfill of the same window scores nothing
    again = api.client.post("/v1/rules/json-answers/backfill", headers=h, json=WINDOW).json()
    second = wait_backfill(api, h, "json-answers", again["id"])
    assert second["status"] == "done"
    assert second["scores"] == {}
    assert second["progress"].get("queued", 0) == 0
    assert second["progress"]["already"] == 2 * len(expected)


def _chat(model: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Say hi"}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}]
        ),
    }


def test_a_spent_budget_skips_spans_and_a_backfill_scores_them_later(api: Api) -> None:
    h = api.tenant()
    rule(api, h, daily_token_budget=0)
    trace_id, span_id = new_ids()
    send(api, h, span(trace_id, span_id))
    (skipped,) = wait_scored(api, h, trace_id)
    assert skipped["status"] == "budget"
    assert "daily LLM token budget (0) is spent" in skipped["explanation"]
    assert api.client.get("/v1/rules/json-answers", headers=h).json()["counts"] == {"budget": 1}
    listed = api.client.get("/v1/spans", headers=h, params={"status": "budget"}).json()
    assert [s["trace_id"] for s in listed["spans"]] == [trace_id.hex()]
    # the budget raised: a backfill scores what the budget skipped
    patched = api.client.patch(
        "/v1/rules/json-answers", headers=h, json={"daily_token_budget": 1000}
    )
    assert patched.json()["version"] == 2
    backfill = api.client.post("/v1/rules/json-answers/backfill", headers=h, json=WINDOW).json()
    done = wait_backfill(api, h, "json-answers", backfill["id"])
    assert done["scores"] == {"scored": 1}
    statuses = sorted((s["rule_version"], s["status"]) for s in scores_of(api, h, trace_id))
    assert statuses == [(1, "budget"), (2, "scored")]


def test_a_backfill_has_a_cap_and_can_be_cancelled(api: Api) -> None:
    h = api.tenant()
    ids = _trace_ids(12)
    for t, s in ids:
        send(api, h, span(t, s))
    rule(api, h)
    capped = api.client.post(
        "/v1/rules/json-answers/backfill", headers=h, json={**WINDOW, "row_cap": 5}
    ).json()
    done = wait_backfill(api, h, "json-answers", capped["id"])
    assert done["progress"]["rows"] == 5 and done["scores"] == {"scored": 5}
    cancelled = api.client.post(
        f"/v1/rules/json-answers/backfills/{capped['id']}/cancel", headers=h
    )
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "done"
    listed = api.client.get("/v1/rules/json-answers/backfills", headers=h).json()["backfills"]
    assert [b["id"] for b in listed] == [capped["id"]]
    other = api.tenant()
    assert (
        api.client.get(
            f"/v1/rules/json-answers/backfills/{capped['id']}", headers=other
        ).status_code
        == 404
    )


def test_a_rule_is_refused_for_a_required_agreement_not_met(api: Api) -> None:
    h = api.tenant()
    api.push(h, "is_helpful", "def evaluate(model_output: str) -> bool:\n    return True\n")
    api.client.put("/v1/label-names/helpful", headers=h, json={"type": "bool"})
    put = api.client.put(
        "/v1/checks/is_helpful/required-agreement",
        headers=h,
        json={"requirement": "helpful:tpr=0.8,tnr=0.8"},
    )
    assert put.status_code == 200, put.text
    refused = api.client.post(
        "/v1/rules", headers=h, json={"name": "helpful", "checks": ["is_helpful"]}
    )
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert "required of is_helpful@1" in detail
    assert "ignore_required_agreement=true" in detail
    assert api.client.get("/v1/rules/helpful", headers=h).status_code == 404
    opted = api.client.post(
        "/v1/rules",
        headers=h,
        json={"name": "helpful", "checks": ["is_helpful"]},
        params={"ignore_required_agreement": "true"},
    )
    assert opted.status_code == 201, opted.text


def test_another_tenants_traces_spans_and_scores_are_not_seen(api: Api) -> None:
    h, other = api.tenant(), api.tenant()
    rule(api, h)
    rule(api, other)  # the same rule name in another tenant is its own rule
    trace_id, span_id = new_ids()
    send(api, h, span(trace_id, span_id))
    assert wait_scored(api, h, trace_id)[0]["status"] == "scored"
    assert api.client.get(f"/v1/traces/{trace_id.hex()}", headers=other).status_code == 404
    assert api.client.get("/v1/spans", headers=other).json()["spans"] == []
    assert api.client.get("/v1/rules/json-answers", headers=other).json()["counts"] == {}
    series = api.client.get("/v1/rules/json-answers/series", headers=other, params=WINDOW).json()
    assert series["series"] == []


def test_past_the_backlog_bound_spans_are_marked_backlog_and_backfilled_later(api: Api) -> None:
    h = api.tenant()
    app = api.client.app.state  # type: ignore[attr-defined]
    app.online.stop()  # scores stay pending: the backlog fills
    rule(api, h)
    first, second = new_ids(), new_ids()
    send(api, h, span(*first))
    services = app.services
    bounded = OnlineScorer(
        services.store, services.runs, services.db, limits=OnlineLimits(backlog_max=1)
    )
    app.online = bounded  # ingestion queues through it: one score waits, the bound is hit
    send(api, h, span(*second))
    (late,) = scores_of(api, h, second[0])
    assert late["status"] == "backlog"
    assert api.client.get("/v1/rules/json-answers", headers=h).json()["counts"] == {
        "pending": 1,
        "backlog": 1,
    }
    bounded.start()  # the backlog drains; a backfill then scores the skipped span
    try:
        assert wait_scored(api, h, first[0])[0]["status"] == "scored"
        backfill = api.client.post("/v1/rules/json-answers/backfill", headers=h, json=WINDOW)
        done = wait_backfill(api, h, "json-answers", backfill.json()["id"])
        assert done["scores"] == {"scored": 1}
        assert scores_of(api, h, second[0])[0]["status"] == "scored"
    finally:
        bounded.stop()


def test_a_preview_counts_the_recent_spans_a_rule_would_score(api: Api) -> None:
    h = api.tenant()
    now = time.time_ns()
    ids = _trace_ids(30)
    models = ["gpt-4o-mini", "claude"]
    for n, (t, s) in enumerate(ids):
        send(api, h, span(t, s, attributes=_chat(models[n % 2]), start=now - 60_000_000_000))
    empty_trace, empty_span = new_ids()
    send(
        api,
        h,
        span(
            empty_trace, empty_span, attributes={"gen_ai.request.model": "gpt-4o-mini"}, start=now
        ),
    )
    send(api, h, span(*new_ids(), attributes=_chat("gpt-4o-mini"), start=now - 2 * 86_400 * 10**9))
    rate = 0.5
    expected = {t.hex() for n, (t, _) in enumerate(ids) if n % 2 == 0 and sampled(t.hex(), rate)}
    document = {
        "filter": {"gen_ai.request.model": "gpt-4o-mini"},
        "sample_rate": rate,
        "sample": 50,
    }
    got = api.client.post("/v1/rules/preview", headers=h, json=document).json()
    assert got["spans_seen"] == 31  # the span of two days ago is not looked at
    assert got["would_score"] == len(expected)
    assert got["no_content"] == (1 if sampled(empty_trace.hex(), rate) else 0)
    assert {x["trace_id"] for x in got["sample"]} == expected
    # nothing was stored: no rule, no score
    assert api.client.get("/v1/rules", headers=h).json()["rules"] == []
    bad = api.client.post("/v1/rules/preview", headers=h, json={"filter": {"m": {"in": 1}}})
    assert bad.status_code == 422 and "filter['m'].in" in bad.text


def test_a_span_pruned_before_its_batch_is_an_error_and_the_others_are_scored(api: Api) -> None:
    h = api.tenant()
    app = api.client.app.state  # type: ignore[attr-defined]
    app.online.stop()  # the scores stay pending while a span goes
    rule(api, h)
    (gone_trace, gone_span), (kept_trace, kept_span) = new_ids(), new_ids()
    send(api, h, span(gone_trace, gone_span), span(kept_trace, kept_span))
    with app.services.db.begin() as conn:
        conn.execute(delete(SpanRow).where(SpanRow.trace_id == gone_trace.hex()))
    scorer = OnlineScorer(app.services.store, app.services.runs, app.services.db)
    scorer.start()
    try:
        assert wait_scored(api, h, kept_trace)[0]["status"] == "scored"
        counts = api.client.get("/v1/rules/json-answers", headers=h).json()["counts"]
        assert counts == {"scored": 1, "error": 1}
        # the span itself is gone; its score is kept, saying why
        with app.services.db.connect() as conn:
            kept = conn.execute(
                select(SpanScoreRow.status, SpanScoreRow.explanation).where(
                    SpanScoreRow.trace_id == gone_trace.hex()
                )
            ).all()
        assert kept == [
            ("error", "the span was pruned (SCOREBOX_SPAN_RETENTION_DAYS) before it was scored")
        ]
    finally:
        scorer.stop()


def test_two_nodes_stepping_one_backfill_count_its_page_once(api: Api) -> None:
    h = api.tenant()
    app = api.client.app.state  # type: ignore[attr-defined]
    app.online.stop()  # two scorers of their own step it, as two API nodes would
    for t, s in _trace_ids(6):
        send(api, h, span(t, s))
    rule(api, h)
    started = api.client.post("/v1/rules/json-answers/backfill", headers=h, json=WINDOW).json()
    services = app.services
    nodes = [
        OnlineScorer(
            services.store, services.runs, services.db, limits=OnlineLimits(backfill_page=3)
        )
        for _ in range(2)
    ]
    (b,) = nodes[0].backfills.running()
    assert nodes[0].stepper.step(b) is True  # the first page of 3: more to come
    assert nodes[1].stepper.step(b) is False  # the same page, from the same cursor: refused
    got = api.client.get(f"/v1/rules/json-answers/backfills/{started['id']}", headers=h).json()
    assert got["status"] == "running"
    assert got["progress"] == {"scanned": 3, "matched": 3, "rows": 3, "queued": 3}
    assert got["scores"] == {"pending": 3}
