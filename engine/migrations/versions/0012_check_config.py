"""check configuration: a code check version's JSON configuration

``check_versions.config`` is what the version passes its scorer: promptfoo's
``context["config"]``, the keyword parameters of reward-kit and Braintrust scorers
(null: none). It is part of the version's identity, so a new configuration makes a new
version.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("check_versions", sa.Column("config", sa.JSON(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # Not a batch operation: batch mode would copy and drop ``check_versions``, and
        # dropping it cascades to the labels and requirements that name a version.
        # SQLite (3.35 on) drops a column in place.
        op.execute(sa.text("ALTER TABLE check_versions DROP COLUMN config"))
    else:
        op.drop_column("check_versions", "config")
