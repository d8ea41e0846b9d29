"""Repository of the Okareo-compatible surface: projects, models, scenario sets, test runs.

Its own tables (:mod:`engine.okareo.tables`) and its own store, beside
scorebox's: checks, runs and results are read and written through the usual
:class:`~engine.storage.Store`. Every method that touches tenant data takes the
tenant id and filters on it; another tenant's object is "not found".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError

from engine.errors import NotFoundError, StorageError
from engine.okareo.tables import (
    OkareoModelRow,
    OkareoProjectRow,
    OkareoScenarioPointRow,
    OkareoScenarioSetRow,
    OkareoTestPointRow,
    OkareoTestRunRow,
)
from engine.storage.database import SqlSessions, one_or_404
from engine.storage.records import aware, utcnow

R = TypeVar("R")

#: The project every tenant has (Okareo's default project is named so).
DEFAULT_PROJECT = "Global"


def new_uuid() -> str:
    """A random UUID string: the ids the Okareo SDK sees."""
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Project:
    id: str
    tenant_id: str
    name: str
    created_at: datetime


@dataclass(frozen=True)
class RegisteredModel:
    id: str
    tenant_id: str
    project_id: str
    name: str
    version: int
    tags: list[str]
    models: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class ScenarioPoint:
    id: str
    position: int
    input: Any
    result: Any
    meta_data: dict[str, Any] | None = None


@dataclass(frozen=True)
class ScenarioSet:
    id: str
    tenant_id: str
    project_id: str
    name: str
    type: str
    tags: list[str]
    created_at: datetime


@dataclass(frozen=True)
class TestPoint:
    """A test run's data point; ``row_index`` is its row in the scorebox run (None: not scored)."""

    id: str
    position: int
    scenario_point_id: str | None
    row_index: int | None
    scenario_input: Any = None
    scenario_result: Any = None
    model_input: Any = None
    model_result: Any = None
    model_metadata: Any = None
    error_message: str | None = None


@dataclass(frozen=True)
class TestRun:
    id: str
    tenant_id: str
    project_id: str
    mut_id: str | None
    scenario_id: str | None
    name: str | None
    type: str | None
    tags: list[str]
    #: One entry per check of the scorebox run, in its order: ``{"name", "id"}`` (id: a UUID).
    checks: list[dict[str, Any]]
    run_id: str | None
    failure_message: str | None
    created_at: datetime
    points: list[TestPoint] = field(default_factory=list)


def _project(row: OkareoProjectRow) -> Project:
    return Project(row.id, row.tenant_id, row.name, aware(row.created_at) or utcnow())


def _model(row: OkareoModelRow) -> RegisteredModel:
    return RegisteredModel(
        row.id,
        row.tenant_id,
        row.project_id,
        row.name,
        row.version,
        list(row.tags or []),
        dict(row.models or {}),
        aware(row.created_at) or utcnow(),
    )


def _scenario(row: OkareoScenarioSetRow) -> ScenarioSet:
    return ScenarioSet(
        row.id,
        row.tenant_id,
        row.project_id,
        row.name,
        row.type,
        list(row.tags or []),
        aware(row.created_at) or utcnow(),
    )


def _point(row: OkareoScenarioPointRow) -> ScenarioPoint:
    return ScenarioPoint(row.id, row.position, row.input, row.result, row.meta_data)


def _test_point(row: OkareoTestPointRow) -> TestPoint:
    return TestPoint(
        row.id,
        row.position,
        row.scenario_point_id,
        row.row_index,
        row.scenario_input,
        row.scenario_result,
        row.model_input,
        row.model_result,
        row.model_metadata,
        row.error_message,
    )


def _test_run(row: OkareoTestRunRow, points: list[TestPoint]) -> TestRun:
    return TestRun(
        row.id,
        row.tenant_id,
        row.project_id,
        row.mut_id,
        row.scenario_id,
        row.name,
        row.type,
        list(row.tags or []),
        [dict(c) for c in row.checks or []],
        row.run_id,
        row.failure_message,
        aware(row.created_at) or utcnow(),
        points,
    )


class OkareoStore(SqlSessions):
    """The ``okareo_*`` tables on a SQLAlchemy engine (SQLite or PostgreSQL)."""

    # ---- projects ---------------------------------------------------------------------

    def _find_or_add(
        self,
        query: Select[R],
        make: Callable[[], R],
        found: Callable[[R], None] | None = None,
    ) -> R | None:
        """The row ``query`` finds (``found`` may change it, in the same transaction), else a
        new one from ``make``; one made meanwhile by a concurrent request is read on the
        second try. None when both tries lost that race."""
        for _ in range(2):
            with self._session() as s:
                row = s.scalar(query)
                if row is not None:
                    if found is not None:
                        found(row)
                    return row
            try:
                row = make()
                with self._session() as s:
                    s.add(row)
                return row
            except IntegrityError:
                continue  # made by a concurrent request: read it
        return None

    def default_project(self, tenant_id: str) -> Project:
        """The tenant's ``Global`` project, made on first use."""
        row = self._find_or_add(
            select(OkareoProjectRow).where(
                OkareoProjectRow.tenant_id == tenant_id, OkareoProjectRow.name == DEFAULT_PROJECT
            ),
            lambda: OkareoProjectRow(
                id=new_uuid(), tenant_id=tenant_id, name=DEFAULT_PROJECT, created_at=utcnow()
            ),
        )
        if row is None:
            raise StorageError(f"could not make the default project of tenant {tenant_id!r}")
        return _project(row)

    def list_projects(self, tenant_id: str) -> list[Project]:
        self.default_project(tenant_id)
        with self._session() as s:
            rows = s.scalars(
                select(OkareoProjectRow)
                .where(OkareoProjectRow.tenant_id == tenant_id)
                .order_by(OkareoProjectRow.created_at)
            )
            return [_project(r) for r in rows]

    def get_project(self, tenant_id: str, project_id: str) -> Project:
        query = select(OkareoProjectRow).where(
            OkareoProjectRow.tenant_id == tenant_id, OkareoProjectRow.id == project_id
        )
        with self._session() as s:
            return _project(
                one_or_404(s, query, f"no project {project_id!r}: see GET /v0/projects")
            )

    # ---- models -----------------------------------------------------------------------

    def register_model(
        self,
        tenant_id: str,
        project_id: str,
        name: str,
        tags: Sequence[str],
        models: dict[str, Any],
        update: bool,
    ) -> RegisteredModel:
        """Register a model by name; an existing one is returned, or updated with ``update``."""

        def updated(row: OkareoModelRow) -> None:
            if update:
                row.tags = list(tags)
                row.models = dict(models)

        row = self._find_or_add(
            self._model_query(tenant_id, project_id, name),
            lambda: OkareoModelRow(
                id=new_uuid(),
                tenant_id=tenant_id,
                project_id=project_id,
                name=name,
                version=1,
                tags=list(tags),
                models=dict(models),
                created_at=utcnow(),
            ),
            updated,
        )
        if row is None:
            raise StorageError(f"could not register model {name!r}: retry")
        return _model(row)

    @staticmethod
    def _model_query(tenant_id: str, project_id: str, name: str) -> Select[OkareoModelRow]:
        return select(OkareoModelRow).where(
            OkareoModelRow.tenant_id == tenant_id,
            OkareoModelRow.project_id == project_id,
            OkareoModelRow.name == name,
        )

    def get_model(self, tenant_id: str, model_id: str) -> RegisteredModel:
        query = select(OkareoModelRow).where(
            OkareoModelRow.tenant_id == tenant_id, OkareoModelRow.id == model_id
        )
        missing = f"no registered model {model_id!r}: call register_model first"
        with self._session() as s:
            return _model(one_or_404(s, query, missing))

    def get_model_by_name(self, tenant_id: str, project_id: str, name: str) -> RegisteredModel:
        with self._session() as s:
            row = one_or_404(
                s,
                self._model_query(tenant_id, project_id, name),
                f"no registered model named {name!r}",
            )
            return _model(row)

    # ---- scenario sets ----------------------------------------------------------------

    def create_scenario_set(
        self,
        tenant_id: str,
        project_id: str,
        name: str,
        type_: str,
        points: Sequence[tuple[Any, Any, dict[str, Any] | None]],
        tags: Sequence[str] = (),
    ) -> tuple[ScenarioSet, list[ScenarioPoint]]:
        """Store a scenario set with its (input, result, meta_data) points, in order."""
        row = OkareoScenarioSetRow(
            id=new_uuid(),
            tenant_id=tenant_id,
            project_id=project_id,
            name=name,
            type=type_,
            tags=list(tags),
            created_at=utcnow(),
        )
        point_rows = [
            OkareoScenarioPointRow(
                id=new_uuid(),
                scenario_id=row.id,
                position=i,
                input=input_,
                result=result,
                meta_data=meta,
            )
            for i, (input_, result, meta) in enumerate(points)
        ]
        with self._session() as s:
            s.add(row)
            s.flush()
            s.add_all(point_rows)
        return _scenario(row), [_point(p) for p in point_rows]

    def get_scenario_set(self, tenant_id: str, scenario_id: str) -> ScenarioSet:
        query = select(OkareoScenarioSetRow).where(
            OkareoScenarioSetRow.tenant_id == tenant_id, OkareoScenarioSetRow.id == scenario_id
        )
        with self._session() as s:
            return _scenario(one_or_404(s, query, f"no scenario set {scenario_id!r}"))

    def scenario_points(self, tenant_id: str, scenario_id: str) -> list[ScenarioPoint]:
        self.get_scenario_set(tenant_id, scenario_id)
        with self._session() as s:
            rows = s.scalars(
                select(OkareoScenarioPointRow)
                .where(OkareoScenarioPointRow.scenario_id == scenario_id)
                .order_by(OkareoScenarioPointRow.position)
            )
            return [_point(r) for r in rows]

    # ---- test runs --------------------------------------------------------------------

    def create_test_run(self, run: TestRun) -> TestRun:
        """Store a test run with its data points."""
        with self._session() as s:
            s.add(
                OkareoTestRunRow(
                    id=run.id,
                    tenant_id=run.tenant_id,
                    project_id=run.project_id,
                    mut_id=run.mut_id,
                    scenario_id=run.scenario_id,
                    name=run.name,
                    type=run.type,
                    tags=list(run.tags),
                    checks=list(run.checks),
                    run_id=run.run_id,
                    failure_message=run.failure_message,
                    created_at=run.created_at,
                )
            )
            s.flush()
            s.add_all(
                OkareoTestPointRow(
                    id=p.id,
                    test_run_id=run.id,
                    position=p.position,
                    scenario_point_id=p.scenario_point_id,
                    row_index=p.row_index,
                    scenario_input=p.scenario_input,
                    scenario_result=p.scenario_result,
                    model_input=p.model_input,
                    model_result=p.model_result,
                    model_metadata=p.model_metadata,
                    error_message=p.error_message,
                )
                for p in run.points
            )
        return run

    def get_test_run(self, tenant_id: str, test_run_id: str) -> TestRun:
        query = select(OkareoTestRunRow).where(
            OkareoTestRunRow.tenant_id == tenant_id, OkareoTestRunRow.id == test_run_id
        )
        with self._session() as s:
            row = one_or_404(s, query, f"no test run {test_run_id!r}")
            points = s.scalars(
                select(OkareoTestPointRow)
                .where(OkareoTestPointRow.test_run_id == test_run_id)
                .order_by(OkareoTestPointRow.position)
            )
            return _test_run(row, [_test_point(p) for p in points])

    def find_test_point(self, tenant_id: str, point_id: str) -> tuple[TestRun, TestPoint]:
        """The test run holding data point ``point_id``, and the point."""
        with self._session() as s:
            run_id = s.scalar(
                select(OkareoTestPointRow.test_run_id)
                .join(OkareoTestRunRow, OkareoTestRunRow.id == OkareoTestPointRow.test_run_id)
                .where(OkareoTestPointRow.id == point_id, OkareoTestRunRow.tenant_id == tenant_id)
            )
        if run_id is None:
            raise NotFoundError(f"no test data point {point_id!r}")
        run = self.get_test_run(tenant_id, run_id)
        return run, next(p for p in run.points if p.id == point_id)


# ---- ids the SDK sees for scorebox's own objects ----------------------------------------

_BUILTIN_NAMESPACE = uuid.UUID("5c0b5c0b-0000-4000-8000-0000b0117125")


def builtin_uuid(name: str) -> str:
    """A stable UUID for a built-in check (the same on every scorebox)."""
    return str(uuid.uuid5(_BUILTIN_NAMESPACE, f"builtin:{name}"))
