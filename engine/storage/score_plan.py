"""What queueing spans for a rule version does to each (span, pinned check): a new score,
a stored one queued again, or left as it is; and the new scores as rows to insert. Pure:
``engine.storage.score_queue_sql`` reads the stored scores and writes the plan.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.storage.rule_records import RuleVersion, ScoreStatus, SpanRef, check_key

__all__ = ["ScorePlan", "new_score_rows", "plan_scores", "span_status"]


def span_status(span: SpanRef, backlog_full: bool) -> ScoreStatus:
    """The status a new score of ``span`` starts in: a typed skip, or pending."""
    if span.no_content:
        return ScoreStatus.NO_CONTENT
    if backlog_full:
        return ScoreStatus.BACKLOG
    return ScoreStatus.PENDING


@dataclass
class ScorePlan:
    """What enqueueing does: the scores to insert (span, check index, check, key, status),
    the stored ones queued again, and the counts by what happened."""

    new: list[tuple[SpanRef, int, dict[str, Any], str, ScoreStatus]] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def plan_scores(
    spans: Sequence[SpanRef],
    version: RuleVersion,
    existing: dict[tuple[str, str, str], tuple[str, str]],
    *,
    backlog_full: bool,
    revive: Sequence[ScoreStatus],
) -> ScorePlan:
    """For each span and pinned check once: a new score, a stored one queued again (its
    status in ``revive``, or ``no_content`` and the span now has content), or left as it
    is (``already``)."""
    plan = ScorePlan()
    counts, new, revived = plan.counts, plan.new, plan.revived  # locals: once a row
    pinned = [(index, check, check_key(check)) for index, check in enumerate(version.checks)]
    seen: set[tuple[str, str, str]] = set()
    for span in spans:
        status = span_status(span, backlog_full)
        for index, check, key in pinned:
            ident = (span.trace_id, span.span_id, key)
            if ident in seen:
                continue
            seen.add(ident)
            found = existing.get(ident)
            if found is None:
                counts[status.value if status is not ScoreStatus.PENDING else "queued"] += 1
                new.append((span, index, check, key, status))
                continue
            row_id, old = found
            wakes = old in revive or (old == ScoreStatus.NO_CONTENT and not span.no_content)
            if wakes and status is ScoreStatus.PENDING:
                revived.append(row_id)
                counts["queued"] += 1
            else:
                counts["already"] += 1
    return plan


def new_score_rows(
    new: Sequence[tuple[SpanRef, int, dict[str, Any], str, ScoreStatus]],
    tenant_id: str,
    rule_id: str,
    version: RuleVersion,
    origin: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """The planned new scores as rows to insert."""
    # one random part per call and a counter: ids as unique as new_id's, without a
    # call for random bytes per row (a backfill page makes thousands)
    base = f"score_{secrets.token_hex(7)}"
    return [
        {
            "id": f"{base}{number:06x}",
            "tenant_id": tenant_id,
            "rule_id": rule_id,
            "rule_version_id": version.id,
            "rule_version": version.version,
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "span_start_unix_nano": span.start_unix_nano,
            "check_index": index,
            "check_name": str(check.get("name", ""))[:200],
            "check_version": check.get("version"),
            "check_key": key,
            "status": status.value,
            "origin": origin[:40],
            "created_at": now,
        }
        for number, (span, index, check, key, status) in enumerate(new)
    ]
