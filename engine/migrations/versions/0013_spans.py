"""spans: LLM spans received over OTLP, and the GenAI content log records for them

``spans`` holds each span once per ``(tenant, trace id, span id)`` (an exporter's retry
changes nothing), with the span mapped to a scorebox row and a ``no_content`` flag.
``span_logs`` keeps ``gen_ai.client.inference.operation.details`` (and the older
per-message) log records, joined to their span by its ids whichever arrives first.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "spans",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=False),
        sa.Column("parent_span_id", sa.String(16), nullable=True),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("service", sa.String(500), nullable=True),
        sa.Column("model", sa.String(500), nullable=True),
        sa.Column("start_unix_nano", sa.BigInteger(), nullable=False),
        sa.Column("end_unix_nano", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("row", sa.JSON(), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("is_llm", sa.Boolean(), nullable=False),
        sa.Column("no_content", sa.Boolean(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name="fk_spans_tenant_id_tenants", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_spans"),
    )
    op.create_index(
        "uq_spans_tenant_trace_span", "spans", ["tenant_id", "trace_id", "span_id"], unique=True
    )
    op.create_index("ix_spans_tenant_start", "spans", ["tenant_id", "start_unix_nano"])
    op.create_table(
        "span_logs",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=False),
        sa.Column("event_name", sa.String(200), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name="fk_span_logs_tenant_id_tenants",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_span_logs"),
    )
    op.create_index(
        "ix_span_logs_tenant_trace_span", "span_logs", ["tenant_id", "trace_id", "span_id"]
    )


def downgrade() -> None:
    # new tables only: dropping them touches no other table's rows
    op.drop_index("ix_span_logs_tenant_trace_span", table_name="span_logs")
    op.drop_table("span_logs")
    op.drop_index("ix_spans_tenant_start", table_name="spans")
    op.drop_index("uq_spans_tenant_trace_span", table_name="spans")
    op.drop_table("spans")
