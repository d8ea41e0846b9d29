"""rules: which stored spans are scored, by which pinned check versions, and their scores

``rules`` names a tenant's rule; ``rule_versions`` holds each version of it (a change makes
a new one): the check versions pinned at creation, the filter, the sample rate and the
daily LLM token budget. ``span_scores`` records, per span, rule version and pinned check,
the work and its outcome: ``pending`` (waiting for a batch), ``queued`` (in a durable run),
``scored``, ``error``, or a typed skip (``no_content``, ``budget``, ``backlog``), with the
score, whether it passed, the explanation and the run that scored it. ``rule_runs`` ties
each durable run a rule started to that rule, so results are linked back after a restart
and the tokens the run spent count against the rule's budget. ``rule_backfills`` keeps a
backfill's window, cap, progress and state.

No foreign key to ``spans``: scores outlive pruned spans.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def _tenant(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], name=f"fk_{table}_tenant_id_tenants", ondelete="CASCADE"
    )


def _rule(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["rule_id"], ["rules.id"], name=f"fk_{table}_rule_id_rules", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "rules",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        _tenant("rules"),
        sa.PrimaryKeyConstraint("id", name="pk_rules"),
    )
    op.create_index("uq_rules_tenant_name", "rules", ["tenant_id", "name"], unique=True)
    op.create_table(
        "rule_versions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("rule_id", sa.String(40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("filter", sa.JSON(), nullable=False),
        sa.Column("sample_rate", sa.Float(), nullable=False),
        sa.Column("daily_token_budget", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _tenant("rule_versions"),
        _rule("rule_versions"),
        sa.PrimaryKeyConstraint("id", name="pk_rule_versions"),
    )
    op.create_index(
        "uq_rule_versions_rule_version", "rule_versions", ["rule_id", "version"], unique=True
    )
    op.create_table(
        "span_scores",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("rule_id", sa.String(40), nullable=False),
        sa.Column("rule_version_id", sa.String(40), nullable=False),
        sa.Column("rule_version", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=False),
        sa.Column("span_start_unix_nano", sa.BigInteger(), nullable=False),
        sa.Column("check_index", sa.Integer(), nullable=False),
        sa.Column("check_name", sa.String(200), nullable=False),
        sa.Column("check_version", sa.Integer(), nullable=True),
        sa.Column("check_key", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("run_id", sa.String(40), nullable=True),
        sa.Column("row_index", sa.Integer(), nullable=True),
        sa.Column("origin", sa.String(40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scored_at", sa.DateTime(timezone=True), nullable=True),
        _tenant("span_scores"),
        _rule("span_scores"),
        sa.ForeignKeyConstraint(
            ["rule_version_id"],
            ["rule_versions.id"],
            name="fk_span_scores_rule_version_id_rule_versions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_span_scores"),
    )
    op.create_index(
        "uq_span_scores_version_check_span",
        "span_scores",
        ["rule_version_id", "check_key", "trace_id", "span_id"],
        unique=True,
    )
    op.create_index("ix_span_scores_tenant_trace", "span_scores", ["tenant_id", "trace_id"])
    op.create_index("ix_span_scores_tenant_status", "span_scores", ["tenant_id", "status"])
    op.create_index("ix_span_scores_rule_start", "span_scores", ["rule_id", "span_start_unix_nano"])
    op.create_index("ix_span_scores_run", "span_scores", ["run_id"])
    op.create_table(
        "rule_runs",
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("rule_id", sa.String(40), nullable=False),
        sa.Column("rule_version_id", sa.String(40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("linked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        _tenant("rule_runs"),
        _rule("rule_runs"),
        sa.PrimaryKeyConstraint("run_id", name="pk_rule_runs"),
    )
    op.create_index("ix_rule_runs_rule_created", "rule_runs", ["rule_id", "created_at"])
    op.create_index("ix_rule_runs_linked", "rule_runs", ["linked_at"])
    op.create_table(
        "rule_backfills",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("rule_id", sa.String(40), nullable=False),
        sa.Column("rule_version_id", sa.String(40), nullable=False),
        sa.Column("since_unix_nano", sa.BigInteger(), nullable=False),
        sa.Column("until_unix_nano", sa.BigInteger(), nullable=False),
        sa.Column("row_cap", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cursor_unix_nano", sa.BigInteger(), nullable=True),
        sa.Column("cursor_span_pk", sa.String(40), nullable=True),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        _tenant("rule_backfills"),
        _rule("rule_backfills"),
        sa.PrimaryKeyConstraint("id", name="pk_rule_backfills"),
    )
    op.create_index("ix_rule_backfills_status", "rule_backfills", ["status"])


def downgrade() -> None:
    # new tables only: dropping them touches no other table's rows
    op.drop_index("ix_rule_backfills_status", table_name="rule_backfills")
    op.drop_table("rule_backfills")
    op.drop_index("ix_rule_runs_linked", table_name="rule_runs")
    op.drop_index("ix_rule_runs_rule_created", table_name="rule_runs")
    op.drop_table("rule_runs")
    for name in (
        "ix_span_scores_run",
        "ix_span_scores_rule_start",
        "ix_span_scores_tenant_status",
        "ix_span_scores_tenant_trace",
        "uq_span_scores_version_check_span",
    ):
        op.drop_index(name, table_name="span_scores")
    op.drop_table("span_scores")
    op.drop_index("uq_rule_versions_rule_version", table_name="rule_versions")
    op.drop_table("rule_versions")
    op.drop_index("uq_rules_tenant_name", table_name="rules")
    op.drop_table("rules")
