"""labels on spans: a label's target may be a received span

``labels`` gains ``trace_id`` and ``span_id``: a label with ``target_kind = "span"``
names a span received over OTLP by its ids (no foreign key: spans are pruned by
retention, their labels are kept, as their scores are). Row labels leave both empty.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("labels") as batch:
        batch.add_column(sa.Column("trace_id", sa.String(32), nullable=True))
        batch.add_column(sa.Column("span_id", sa.String(16), nullable=True))
    op.create_index(
        "ix_labels_tenant_name_trace_span", "labels", ["tenant_id", "name", "trace_id", "span_id"]
    )


def downgrade() -> None:
    # span labels have no place in the older table: they go with their columns
    op.drop_index("ix_labels_tenant_name_trace_span", table_name="labels")
    op.execute("DELETE FROM labels WHERE target_kind = 'span'")
    with op.batch_alter_table("labels") as batch:
        batch.drop_column("span_id")
        batch.drop_column("trace_id")
