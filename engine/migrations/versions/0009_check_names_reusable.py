"""check names reusable after a delete: versions unique among live rows only

A deleted name starts again at version 1 (as Okareo does), so a soft-deleted
version may share (tenant, name, version) with a live one. The unique constraint
``uq_check_version`` becomes a partial unique index over the rows not deleted
(SQLite and PostgreSQL both support ``WHERE deleted_at IS NULL``); deleted rows
stay, readable by id, and runs keep pointing at them.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_LIVE = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("check_versions") as batch:
        batch.drop_constraint("uq_check_version", type_="unique")
    op.create_index(
        "uq_check_versions_live",
        "check_versions",
        ["tenant_id", "name", "version"],
        unique=True,
        sqlite_where=_LIVE,
        postgresql_where=_LIVE,
    )


def downgrade() -> None:
    """Back to one row per (tenant, name, version): of a reused number, the live row (or the
    newest deleted one) is kept and the older deleted rows are dropped."""
    op.drop_index("uq_check_versions_live", table_name="check_versions")
    op.execute(
        "DELETE FROM check_versions WHERE deleted_at IS NOT NULL AND EXISTS ("
        "SELECT 1 FROM check_versions AS other WHERE other.tenant_id = check_versions.tenant_id "
        "AND other.name = check_versions.name AND other.version = check_versions.version "
        "AND other.id <> check_versions.id AND (other.deleted_at IS NULL "
        "OR other.created_at > check_versions.created_at))"
    )
    with op.batch_alter_table("check_versions") as batch:
        batch.create_unique_constraint("uq_check_version", ["tenant_id", "name", "version"])
