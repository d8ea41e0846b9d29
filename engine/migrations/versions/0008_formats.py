"""scorer formats: a check version's named entry, a result's pass flag and metadata

``check_versions.entry`` is the entry function named at upload (other tools' scorer
files; null: found by name or by its parameters). ``row_results.passed`` is a
format's own pass flag (promptfoo's ``pass``, a bool score) and
``row_results.result_metadata`` its sub-scores and extra result keys.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("check_versions") as batch:
        batch.add_column(sa.Column("entry", sa.String(200), nullable=True))
    with op.batch_alter_table("row_results") as batch:
        batch.add_column(sa.Column("passed", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("result_metadata", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("row_results") as batch:
        batch.drop_column("result_metadata")
        batch.drop_column("passed")
    with op.batch_alter_table("check_versions") as batch:
        batch.drop_column("entry")
