"""otlp_exports: where a tenant's scores go as OTLP log records, and what was sent

``otlp_exports`` holds one tenant's export: the endpoint, the headers sent with each
request (secrets: never shown back), the delivery state (failures in a row, the next
attempt, the last error, counts) and a lease, so that one API node at a time sends a
tenant's scores. ``score_exports`` marks each span score sent (or refused by the
endpoint for good): the scores themselves are the durable outbox, and a score without a
mark is sent on the next pass, however long the endpoint was down.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "otlp_exports",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("endpoint", sa.String(2000), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent", sa.BigInteger(), nullable=False),
        sa.Column("rejected", sa.BigInteger(), nullable=False),
        sa.Column("lease_owner", sa.String(80), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name="fk_otlp_exports_tenant_id_tenants",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name="pk_otlp_exports"),
    )
    op.create_table(
        "score_exports",
        sa.Column("span_score_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name="fk_score_exports_tenant_id_tenants",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["span_score_id"],
            ["span_scores.id"],
            name="fk_score_exports_span_score_id_span_scores",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("span_score_id", name="pk_score_exports"),
    )
    op.create_index("ix_score_exports_tenant_sent", "score_exports", ["tenant_id", "sent_at"])
    op.create_index("ix_span_scores_tenant_scored_at", "span_scores", ["tenant_id", "scored_at"])


def downgrade() -> None:
    op.drop_index("ix_span_scores_tenant_scored_at", table_name="span_scores")
    op.drop_index("ix_score_exports_tenant_sent", table_name="score_exports")
    op.drop_table("score_exports")
    op.drop_table("otlp_exports")
