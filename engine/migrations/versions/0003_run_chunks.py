"""run_chunks: distributed mode's chunk ledger (state, epoch, lease)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_chunks",
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("check_index", sa.Integer(), nullable=False),
        sa.Column("chunk_no", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("row_start", sa.Integer(), nullable=False),
        sa.Column("row_stop", sa.Integer(), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_chunks_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "check_index", "chunk_no", name="pk_run_chunks"),
    )
    op.create_index("ix_run_chunks_state_tenant", "run_chunks", ["state", "tenant_id"])
    op.create_index("ix_run_chunks_run_state", "run_chunks", ["run_id", "state"])


def downgrade() -> None:
    op.drop_index("ix_run_chunks_run_state", table_name="run_chunks")
    op.drop_index("ix_run_chunks_state_tenant", table_name="run_chunks")
    op.drop_table("run_chunks")
