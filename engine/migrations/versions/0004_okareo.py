"""okareo_*: projects, models, scenario sets and test runs of the Okareo-compatible /v0 API

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _tenant(table: str) -> list[sa.schema.SchemaItem]:
    """The tenant column with its named foreign key (cascading delete)."""
    return [
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=f"fk_{table}_tenant_id_tenants", ondelete="CASCADE"
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "okareo_projects",
        sa.Column("id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_okareo_projects"),
        *_tenant("okareo_projects"),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "name", name="uq_okareo_project_name"),
    )
    op.create_table(
        "okareo_models",
        sa.Column("id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_okareo_models"),
        *_tenant("okareo_models"),
        sa.Column("project_id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("models", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "project_id", "name", name="uq_okareo_model_name"),
    )
    op.create_table(
        "okareo_scenario_sets",
        sa.Column("id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_okareo_scenario_sets"),
        *_tenant("okareo_scenario_sets"),
        sa.Column("project_id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_okareo_scenario_sets_tenant", "okareo_scenario_sets", ["tenant_id"])
    op.create_table(
        "okareo_scenario_points",
        sa.Column("id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_okareo_scenario_points"),
        sa.Column("scenario_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["okareo_scenario_sets.id"],
            name="fk_okareo_scenario_points_scenario_id_okareo_scenario_sets",
            ondelete="CASCADE",
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("input", sa.JSON(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("meta_data", sa.JSON(), nullable=True),
    )
    op.create_index(
        "ix_okareo_scenario_points_set", "okareo_scenario_points", ["scenario_id", "position"]
    )
    op.create_table(
        "okareo_test_runs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_okareo_test_runs"),
        *_tenant("okareo_test_runs"),
        sa.Column("project_id", sa.String(36), nullable=False),
        sa.Column("mut_id", sa.String(36), nullable=True),
        sa.Column("scenario_id", sa.String(36), nullable=True),
        sa.Column("name", sa.String(400), nullable=True),
        sa.Column("type", sa.String(40), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=True),
        sa.Column("failure_message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_okareo_test_runs_tenant", "okareo_test_runs", ["tenant_id"])
    op.create_table(
        "okareo_test_points",
        sa.Column("id", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_okareo_test_points"),
        sa.Column("test_run_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(
            ["test_run_id"],
            ["okareo_test_runs.id"],
            name="fk_okareo_test_points_test_run_id_okareo_test_runs",
            ondelete="CASCADE",
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("scenario_point_id", sa.String(36), nullable=True),
        sa.Column("row_index", sa.Integer(), nullable=True),
        sa.Column("scenario_input", sa.JSON(), nullable=True),
        sa.Column("scenario_result", sa.JSON(), nullable=True),
        sa.Column("model_input", sa.JSON(), nullable=True),
        sa.Column("model_result", sa.JSON(), nullable=True),
        sa.Column("model_metadata", sa.JSON(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
    )
    op.create_index("ix_okareo_test_points_run", "okareo_test_points", ["test_run_id", "position"])


def downgrade() -> None:
    op.drop_table("okareo_test_points")
    op.drop_table("okareo_test_runs")
    op.drop_table("okareo_scenario_points")
    op.drop_table("okareo_scenario_sets")
    op.drop_table("okareo_models")
    op.drop_table("okareo_projects")
