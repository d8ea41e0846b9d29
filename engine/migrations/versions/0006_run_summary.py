"""runs.results_done and runs.summary: a run's result count and its stored summary

``results_done`` is kept by every write of results (the same transaction), so a
run's progress is one primary-key read instead of a count over its results.
``summary`` holds a finished run's per-check aggregates and histograms, computed
once; it is used only while ``summary["done"]`` equals ``results_done``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column("results_done", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("summary", sa.JSON(), nullable=True))
    op.execute(
        "UPDATE runs SET results_done = "
        "(SELECT COUNT(*) FROM row_results WHERE row_results.run_id = runs.id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("summary")
        batch.drop_column("results_done")
