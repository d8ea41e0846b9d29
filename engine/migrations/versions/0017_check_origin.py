"""check origin: where a check version comes from, stored beside what it is

``check_versions.origin`` is ``pushed`` (a tenant's push) or ``generated`` (written by
the check generator and pushed as such). Every version stored before is ``pushed``.
Built-ins are never stored: their origin ``builtin`` is said, not kept.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Not a batch operation on SQLite (see 0012): batch mode would copy and drop
    # ``check_versions``, and dropping it cascades to the rows that name a version.
    op.add_column(
        "check_versions",
        sa.Column("origin", sa.String(16), nullable=False, server_default="pushed"),
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite (3.35 on) drops a column in place, as in 0012
        op.execute(sa.text("ALTER TABLE check_versions DROP COLUMN origin"))
    else:
        op.drop_column("check_versions", "origin")
