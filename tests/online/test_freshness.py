"""How soon online scores are readable: a queued span wakes the scorer at once, a partial
batch leaves after its linger, and spans gather behind a run of their rule version that
waits to start instead of becoming a run each; SQLite and PostgreSQL."""

from __future__ import annotations

import time

from sqlalchemy import func, select

from engine.online.scorer import OnlineLimits, OnlineScorer
from engine.storage.rule_tables import RuleRunRow, SpanScoreRow
from engine.storage.tables import RunRow
from tests.api.conftest import Api
from tests.online.otlp_requests import new_ids, span
from tests.online.test_rules import rule, scores_of, send, wait_scored


def _scorer(api: Api, limits: OnlineLimits) -> OnlineScorer:
    """A scorer of the test's own in place of the app's (ingestion queues through it)."""
    app = api.client.app.state  # type: ignore[attr-defined]
    app.online.stop()
    services = app.services
    scorer = OnlineScorer(services.store, services.runs, services.db, limits=limits)
    app.online = scorer
    return scorer


def _runs(api: Api) -> list[int]:
    """The row counts of the rules' runs, oldest first."""
    db = api.client.app.state.services.db  # type: ignore[attr-defined]
    with db.connect() as conn:
        return list(
            conn.scalars(
                select(RunRow.row_count)
                .join(RuleRunRow, RuleRunRow.run_id == RunRow.id)
                .order_by(RunRow.created_at)
            )
        )


def test_a_queued_span_wakes_the_scorer_without_waiting_for_its_poll(api: Api) -> None:
    h = api.tenant()
    rule(api, h)
    # idle, the scorer would look again only in a minute: the span must wake it
    scorer = _scorer(api, OnlineLimits(tick_seconds=60))
    scorer.start()
    try:
        time.sleep(0.3)  # its first pass is over: it sleeps
        trace_id, span_id = new_ids()
        sent = time.monotonic()
        send(api, h, span(trace_id, span_id))
        (score,) = wait_scored(api, h, trace_id, timeout=20)
        assert score["status"] == "scored"
        assert time.monotonic() - sent < 10
    finally:
        scorer.stop()


def test_a_partial_batch_leaves_after_its_linger(api: Api) -> None:
    h = api.tenant()
    rule(api, h)
    scorer = _scorer(api, OnlineLimits(linger_seconds=30))
    trace_id, span_id = new_ids()
    send(api, h, span(trace_id, span_id))
    due = scorer._dispatch()
    assert 25 < due <= 30  # the next pass is due when the linger ends
    assert _runs(api) == []
    assert scores_of(api, h, trace_id)[0]["status"] == "pending"
    scorer.limits.linger_seconds = 0.0
    assert scorer._dispatch() == float("inf")  # gone: nothing left waiting
    assert _runs(api) == [1]


def test_spans_gather_behind_a_run_of_their_rule_that_waits_to_start(api: Api) -> None:
    h = api.tenant()
    rule(api, h)
    scorer = _scorer(api, OnlineLimits(linger_seconds=0.0, batch_spans=5))
    db = api.client.app.state.services.db  # type: ignore[attr-defined]
    send(api, h, *(span(*new_ids()) for _ in range(3)))
    with db.connect() as conn:
        version_id = conn.scalar(select(SpanScoreRow.rule_version_id).limit(1))
    assert version_id is not None
    # a run of the rule version waits to start: the spans stay pending, more join them
    scorer._waiting_runs = {version_id: 1}
    assert scorer._dispatch() < 0  # held back: the caller polls
    send(api, h, span(*new_ids()))
    assert _runs(api) == []
    # it started: the four spans leave as one run, not one a request
    scorer._waiting_runs = {}
    scorer._dispatch()
    assert _runs(api) == [4]
    # full batches may leave while one run waits, up to two
    send(api, h, *(span(*new_ids()) for _ in range(12)))
    scorer._waiting_runs = {version_id: 1}
    scorer._dispatch()
    assert _runs(api) == [4, 5]
    with db.connect() as conn:
        pending = conn.scalar(select(func.count()).where(SpanScoreRow.status == "pending"))
    assert pending == 12 - 5
