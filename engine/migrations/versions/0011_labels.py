"""human labels: label names (a type per tenant) and labels on run rows

``label_names`` declares, once per tenant, what a label name's values may be (bool,
ordinal with its levels, float, or a category set). ``labels`` keeps every label people
give, one row each (several annotators per item, never merged on write), on a run's row;
``target_kind`` leaves room for span targets. ``agreement_requirements`` holds the
agreement a check version must reach with a label name before a run may use it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "label_names",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("levels", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name="fk_label_names_tenant_id_tenants",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_label_names"),
    )
    op.create_index("uq_label_names_tenant_name", "label_names", ["tenant_id", "name"], unique=True)
    op.create_table(
        "labels",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("target_kind", sa.String(8), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=True),
        sa.Column("row_index", sa.Integer(), nullable=True),
        sa.Column("value", sa.JSON(), nullable=True),
        sa.Column("annotator", sa.String(200), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name="fk_labels_tenant_id_tenants", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_labels_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_labels"),
    )
    op.create_index(
        "ix_labels_tenant_name_run_row", "labels", ["tenant_id", "name", "run_id", "row_index"]
    )
    op.create_table(
        "agreement_requirements",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("check_id", sa.String(40), nullable=False),
        sa.Column("requirement", sa.String(500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name="fk_agreement_requirements_tenant_id_tenants",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["check_id"],
            ["check_versions.id"],
            name="fk_agreement_requirements_check_id_check_versions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_agreement_requirements"),
    )
    op.create_index(
        "uq_agreement_requirements_check",
        "agreement_requirements",
        ["tenant_id", "check_id"],
        unique=True,
    )


def downgrade() -> None:
    # new tables only: dropping them touches no other table's rows
    op.drop_index("uq_agreement_requirements_check", table_name="agreement_requirements")
    op.drop_table("agreement_requirements")
    op.drop_index("ix_labels_tenant_name_run_row", table_name="labels")
    op.drop_table("labels")
    op.drop_index("uq_label_names_tenant_name", table_name="label_names")
    op.drop_table("label_names")
