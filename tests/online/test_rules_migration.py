"""Migration 0014 (rules, rule versions, span scores, rule runs, backfills) goes up and
down on SQLite and PostgreSQL, leaving every other table's rows as they were."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import func, insert, inspect, select

from engine.storage.database import alembic_config, create_db_engine, current_revision, upgrade
from engine.storage.rule_tables import RuleRow, RuleVersionRow, SpanScoreRow
from engine.storage.tables import TenantRow

NEW = {"rules", "rule_versions", "span_scores", "rule_runs", "rule_backfills"}


def test_migration_0014_goes_down_and_up_again(database_url: str) -> None:
    db = create_db_engine(database_url)
    try:
        upgrade(db, "0013")
        assert not NEW & set(inspect(db).get_table_names())
        now = datetime.now(UTC)
        with db.begin() as conn:
            conn.execute(
                insert(TenantRow).values(id="ten_1", name="acme", quotas={}, created_at=now)
            )
        upgrade(db, "0014")
        assert set(inspect(db).get_table_names()) >= NEW
        with db.begin() as conn:
            conn.execute(
                insert(RuleRow).values(
                    id="rul_1",
                    tenant_id="ten_1",
                    name="r",
                    enabled=True,
                    version=1,
                    created_at=now,
                    updated_at=now,
                )
            )
            conn.execute(
                insert(RuleVersionRow).values(
                    id="rv_1",
                    tenant_id="ten_1",
                    rule_id="rul_1",
                    version=1,
                    checks=[],
                    filter={},
                    sample_rate=1.0,
                    daily_token_budget=None,
                    created_at=now,
                )
            )
            conn.execute(
                insert(SpanScoreRow).values(
                    id="ss_1",
                    tenant_id="ten_1",
                    rule_id="rul_1",
                    rule_version_id="rv_1",
                    rule_version=1,
                    trace_id="a" * 32,
                    span_id="b" * 16,
                    span_start_unix_nano=2**62,
                    check_index=0,
                    check_name="c",
                    check_version=1,
                    check_key="chk_1",
                    status="pending",
                    origin="live",
                    created_at=now,
                )
            )
        command.downgrade(alembic_config(db), "0013")
        assert current_revision(db) == "0013"
        assert not NEW & set(inspect(db).get_table_names())
        with db.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(TenantRow)) == 1
        upgrade(db, "0014")
        with db.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(SpanScoreRow)) == 0
            assert conn.scalar(select(func.count()).select_from(TenantRow)) == 1
    finally:
        db.dispose()
