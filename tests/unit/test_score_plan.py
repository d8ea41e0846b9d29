"""What queueing spans for a rule version plans for each (span, pinned check)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engine.storage.rule_records import RuleVersion, ScoreStatus, SpanRef, check_key
from engine.storage.score_plan import new_score_rows, plan_scores

CHECKS: list[dict[str, Any]] = [
    {"id": "chv_a", "name": "a"},
    {"kind": "builtin", "name": "b", "params": {"x": 1}},
]
VERSION = RuleVersion("rv_1", "rule_1", 3, CHECKS, {}, 1.0, None, datetime(2026, 1, 1, tzinfo=UTC))


def span(n: int, *, no_content: bool = False) -> SpanRef:
    return SpanRef(f"trace{n}", f"span{n}", 1000 + n, no_content)


def test_each_span_and_check_once_with_its_starting_status() -> None:
    spans = [span(1), span(1), span(2, no_content=True)]
    plan = plan_scores(spans, VERSION, {}, backlog_full=False, revive=())
    assert [(s.span_id, i, key, st) for s, i, _, key, st in plan.new] == [
        ("span1", 0, "chv_a", ScoreStatus.PENDING),
        ("span1", 1, "builtin:b:x=1", ScoreStatus.PENDING),
        ("span2", 0, "chv_a", ScoreStatus.NO_CONTENT),
        ("span2", 1, "builtin:b:x=1", ScoreStatus.NO_CONTENT),
    ]
    assert dict(plan.counts) == {"queued": 2, "no_content": 2}
    full = plan_scores([span(3)], VERSION, {}, backlog_full=True, revive=())
    assert dict(full.counts) == {"backlog": 2}


def test_a_stored_score_is_queued_again_only_when_revived_or_its_span_now_has_content() -> None:
    key_a, key_b = (check_key(c) for c in CHECKS)
    existing = {
        ("trace1", "span1", key_a): ("score_err", ScoreStatus.ERROR.value),
        ("trace1", "span1", key_b): ("score_nc", ScoreStatus.NO_CONTENT.value),
        ("trace2", "span2", key_a): ("score_ok", ScoreStatus.SCORED.value),
    }
    plan = plan_scores(
        [span(1), span(2)], VERSION, existing, backlog_full=False, revive=(ScoreStatus.ERROR,)
    )
    assert plan.revived == ["score_err", "score_nc"]
    assert [(s.span_id, key) for s, _, _, key, _ in plan.new] == [("span2", key_b)]
    assert dict(plan.counts) == {"queued": 3, "already": 1}
    # with a full backlog nothing is queued again
    held = plan_scores([span(1)], VERSION, existing, backlog_full=True, revive=(ScoreStatus.ERROR,))
    assert held.revived == [] and dict(held.counts) == {"already": 2}


def test_new_rows_carry_the_version_the_check_and_distinct_ids() -> None:
    plan = plan_scores([span(1), span(2)], VERSION, {}, backlog_full=False, revive=())
    now = datetime(2026, 2, 2, tzinfo=UTC)
    rows = new_score_rows(plan.new, "ten_1", "rule_1", VERSION, "x" * 50, now)
    assert len({r["id"] for r in rows}) == 4
    assert rows[1] | {"id": None} == {
        "id": None,
        "tenant_id": "ten_1",
        "rule_id": "rule_1",
        "rule_version_id": "rv_1",
        "rule_version": 3,
        "trace_id": "trace1",
        "span_id": "span1",
        "span_start_unix_nano": 1001,
        "check_index": 1,
        "check_name": "b",
        "check_version": None,
        "check_key": "builtin:b:x=1",
        "status": "pending",
        "origin": "x" * 40,
        "created_at": now,
    }
