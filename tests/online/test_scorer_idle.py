"""The online scorer's idle pass: one read says whether anything waits (a pending score, a
run not linked to its spans, a running backfill), and with nothing waiting a pass reads
nothing else; each of the three alone is work. SQLite and PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import update

from engine.online.scorer import OnlineScorer
from engine.storage.rule_records import BackfillStatus
from engine.storage.rule_tables import RuleBackfillRow, RuleRunRow
from engine.storage.score_queue_sql import ScoreQueue, score_queue
from tests.api.conftest import Api
from tests.online.otlp_requests import new_ids, span
from tests.online.test_rules import WINDOW, rule, send, wait_backfill


class _Counted:
    """Counts the linker's passes (the first read of a pass that found work)."""

    def __init__(self, scorer: OnlineScorer) -> None:
        self.passes = 0
        link = scorer.linker.link

        def counted() -> Any:
            self.passes += 1
            return link()

        scorer.linker.link = counted  # type: ignore[method-assign]


def _drain(online: OnlineScorer, scores: ScoreQueue) -> None:
    """Passes until nothing waits (a minute at most)."""
    deadline = time.monotonic() + 60
    while scores.has_work() and time.monotonic() < deadline:
        online.tick()
        time.sleep(0.05)


def test_has_work_sees_each_kind_of_work_alone_and_an_idle_pass_reads_no_further(
    api: Api,
) -> None:
    online: OnlineScorer = api.client.app.state.online  # type: ignore[attr-defined]
    online.stop()  # this test drives the passes
    scores = score_queue(online.db)
    counted = _Counted(online)
    assert not scores.has_work()
    online.tick()
    assert counted.passes == 0  # idle: the one probe, nothing else

    h = api.tenant()
    rule(api, h)
    trace_id, span_id = new_ids()
    send(api, h, span(trace_id, span_id))
    assert scores.has_work()  # a pending score
    _drain(online, scores)  # claim, run and link it
    assert counted.passes >= 1
    assert not scores.has_work()  # scored and linked: idle again
    passes = counted.passes
    online.tick()
    assert counted.passes == passes

    with online.db.begin() as conn:  # a run whose results are not on its spans yet
        conn.execute(update(RuleRunRow).values(linked_at=None))
    assert scores.has_work()
    online.tick()
    assert counted.passes == passes + 1
    assert not scores.has_work()  # that pass linked it again

    started = api.client.post("/v1/rules/json-answers/backfill", headers=h, json=WINDOW)
    assert started.status_code in (200, 201, 202), started.text
    assert scores.has_work()  # a running backfill
    _drain(online, scores)
    done = wait_backfill(api, h, "json-answers", started.json()["id"], timeout=1)
    assert done["status"] != BackfillStatus.RUNNING.value
    with online.db.begin() as conn:
        conn.execute(update(RuleBackfillRow).values(status=BackfillStatus.RUNNING.value))
    assert scores.has_work()
