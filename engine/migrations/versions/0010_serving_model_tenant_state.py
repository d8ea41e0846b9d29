"""a result's serving model; a tenant's disabled state

``row_results.model`` is the model that served the row (a judge's or a check's model
calls through the gateway; null for checks that call none), kept so that a stored run
says what ``/v1/score`` says. ``tenants.disabled_at`` marks a tenant an operator has
disabled: its keys stop working, its data stays until it is deleted.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("row_results") as batch:
        batch.add_column(sa.Column("model", sa.String(200), nullable=True))
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # Not a batch operation: batch mode would copy and drop ``tenants``, and dropping
        # it cascades to every row that names a tenant. SQLite drops a column in place.
        op.execute(sa.text("ALTER TABLE tenants DROP COLUMN disabled_at"))
    else:
        op.drop_column("tenants", "disabled_at")
    with op.batch_alter_table("row_results") as batch:
        batch.drop_column("model")
