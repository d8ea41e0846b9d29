"""row_results indexes for the dashboard's row table (filter by status, sort by score)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_row_results_run_check_status_row",
        "row_results",
        ["run_id", "check_index", "status", "row_index"],
    )
    op.create_index(
        "ix_row_results_run_check_score_row",
        "row_results",
        ["run_id", "check_index", "score_num", "row_index"],
    )


def downgrade() -> None:
    op.drop_index("ix_row_results_run_check_score_row", table_name="row_results")
    op.drop_index("ix_row_results_run_check_status_row", table_name="row_results")
