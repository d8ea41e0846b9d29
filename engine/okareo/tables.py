"""Tables of the Okareo-compatible surface (``/v0``): what ``/v1`` has no place for.

Projects, registered models, scenario sets with their data points, and test
runs with their data points. A test run points at the scorebox run that scored
it (``run_id``); check versions and results stay in scorebox's own tables.
Ids are UUID strings, as the Okareo SDK expects. Migration ``0004`` creates them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from engine.storage.tables import Base


class OkareoProjectRow(Base):
    """A project of a tenant (the SDK needs at least one; each tenant gets ``Global``)."""

    __tablename__ = "okareo_projects"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_okareo_project_name"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OkareoModelRow(Base):
    """A registered model under test: a name and the model descriptions the SDK sent."""

    __tablename__ = "okareo_models"
    __table_args__ = (
        UniqueConstraint("tenant_id", "project_id", "name", name="uq_okareo_model_name"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(String(36))
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer, default=1)
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    models: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OkareoScenarioSetRow(Base):
    """A named list of (input, result) data points."""

    __tablename__ = "okareo_scenario_sets"
    __table_args__ = (Index("ix_okareo_scenario_sets_tenant", "tenant_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(String(36))
    name: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(40))
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OkareoScenarioPointRow(Base):
    """One data point of a scenario set, in upload order."""

    __tablename__ = "okareo_scenario_points"
    __table_args__ = (Index("ix_okareo_scenario_points_set", "scenario_id", "position"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    scenario_id: Mapped[str] = mapped_column(
        ForeignKey("okareo_scenario_sets.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(Integer)
    input: Mapped[Any] = mapped_column(JSON, nullable=True)
    result: Mapped[Any] = mapped_column(JSON, nullable=True)
    meta_data: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class OkareoTestRunRow(Base):
    """A test run: a scorebox run (``run_id``) plus what the SDK needs to read it back."""

    __tablename__ = "okareo_test_runs"
    __table_args__ = (Index("ix_okareo_test_runs_tenant", "tenant_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(String(36))
    mut_id: Mapped[str | None] = mapped_column(String(36))
    scenario_id: Mapped[str | None] = mapped_column(String(36))
    name: Mapped[str | None] = mapped_column(String(400))
    type: Mapped[str | None] = mapped_column(String(40))
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    checks: Mapped[list[Any]] = mapped_column(JSON, default=list)
    run_id: Mapped[str | None] = mapped_column(String(40))
    failure_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class OkareoTestPointRow(Base):
    """One data point of a test run: the model's output for one scenario data point.

    ``row_index`` is the row's index in the scorebox run, or null when the model
    failed on the client (``error_message``) and the row was not scored.
    """

    __tablename__ = "okareo_test_points"
    __table_args__ = (Index("ix_okareo_test_points_run", "test_run_id", "position"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    test_run_id: Mapped[str] = mapped_column(ForeignKey("okareo_test_runs.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    scenario_point_id: Mapped[str | None] = mapped_column(String(36))
    row_index: Mapped[int | None] = mapped_column(Integer)
    scenario_input: Mapped[Any] = mapped_column(JSON, nullable=True)
    scenario_result: Mapped[Any] = mapped_column(JSON, nullable=True)
    model_input: Mapped[Any] = mapped_column(JSON, nullable=True)
    model_result: Mapped[Any] = mapped_column(JSON, nullable=True)
    model_metadata: Mapped[Any] = mapped_column(JSON, nullable=True)
    error_message: Mapped[str | None] = mapped_column(Text)
