"""audit_events: the append-only audit log

Triggers refuse ``UPDATE`` and ``DELETE`` on the table (and ``TRUNCATE`` on
PostgreSQL): the application has no such path, and the database holds the line
against one added by mistake.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_REFUSAL = "audit_events is append-only"


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant_id", sa.String(64), nullable=True),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_key_id", sa.String(64), nullable=True),
        sa.Column("via", sa.String(16), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_events"),
    )
    op.create_index("ix_audit_events_tenant_seq", "audit_events", ["tenant_id", "seq"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION audit_events_append_only() RETURNS trigger AS $$ BEGIN "
            f"RAISE EXCEPTION '{_REFUSAL}'; END $$ LANGUAGE plpgsql"
        )
        op.execute(
            "CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events "
            "FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()"
        )
        op.execute(
            "CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events "
            "FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()"
        )
    else:
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER audit_events_no_{verb.lower()} BEFORE {verb} ON audit_events "
                f"BEGIN SELECT RAISE(ABORT, '{_REFUSAL}'); END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TABLE audit_events")
        op.execute("DROP FUNCTION audit_events_append_only()")
    else:
        op.drop_table("audit_events")
