"""Span scores written straight into the store, as a rule's scoring writes them: for the
tests of what reads scores back (the OTLP export, the Live page, retention)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert

from engine.storage.records import new_id
from engine.storage.rule_tables import RuleRow, RuleVersionRow, SpanScoreRow


def make_rule(
    db: Engine, tenant_id: str, name: str | None = None, version: int = 2
) -> tuple[str, str]:
    """A rule and its current version (no pinned checks); their ids."""
    now = datetime.now(UTC)
    rule, rule_version = new_id("rul"), new_id("rv")
    with db.begin() as conn:
        conn.execute(
            insert(RuleRow).values(
                id=rule,
                tenant_id=tenant_id,
                name=name or f"helpful-replies-{rule[-4:]}",
                enabled=True,
                version=version,
                created_at=now,
                updated_at=now,
            )
        )
        conn.execute(
            insert(RuleVersionRow).values(
                id=rule_version,
                tenant_id=tenant_id,
                rule_id=rule,
                version=version,
                checks=[],
                filter={},
                sample_rate=1.0,
                daily_token_budget=None,
                created_at=now,
            )
        )
    return rule, rule_version


def add_scores(
    db: Engine,
    tenant_id: str,
    rule: tuple[str, str],
    n: int,
    *,
    version: int = 2,
    check_version: int = 3,
    spans: list[tuple[str, str]] | None = None,
    start_ns: int = 1,
    status: Any = None,
) -> list[dict[str, Any]]:
    """``n`` scores of ``rule`` scored a millisecond apart: every fifth an ``error`` with no
    score, the others alternately failing and passing (score 0.0 and 1.0)."""
    now = datetime.now(UTC)
    out = []
    with db.begin() as conn:
        for i in range(n):
            trace_id, span_id = spans[i] if spans else (secrets.token_hex(16), secrets.token_hex(8))
            erred = i % 5 == 0 if status is None else status == "error"
            row = {
                "id": new_id("ss"),
                "tenant_id": tenant_id,
                "rule_id": rule[0],
                "rule_version_id": rule[1],
                "rule_version": version,
                "trace_id": trace_id,
                "span_id": span_id,
                "span_start_unix_nano": start_ns,
                "check_index": 0,
                "check_name": "is_helpful",
                "check_version": check_version,
                "check_key": f"is_helpful@{check_version}",
                "status": status or ("error" if erred else "scored"),
                "score": None if erred else float(i % 2),
                "passed": None if erred else bool(i % 2),
                "explanation": f"reason {i}",
                "run_id": None,
                "row_index": i,
                "origin": "live",
                "created_at": now,
                "scored_at": now + timedelta(milliseconds=i),
            }
            conn.execute(insert(SpanScoreRow).values(**row))
            out.append(row)
    return out
