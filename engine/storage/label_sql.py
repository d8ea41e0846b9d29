"""Human labels in SQL: label names (a type per tenant) and the labels themselves.

Every query filters on the tenant. Labels are appended, one row per annotator and
item, and never merged: agreement reports read them all. An item is a run's row or a
received span (``target_kind`` ``"row"`` or ``"span"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select

from engine.errors import ConflictError, NotFoundError
from engine.storage.database import SqlSessions, once_per_engine, one_or_404
from engine.storage.records import aware, new_id, utcnow
from engine.storage.tables import AgreementRequirementRow, LabelNameRow, LabelRow

MAX_PAGE = 10_000


@dataclass(frozen=True)
class LabelName:
    """A declared label name."""

    name: str
    type: str
    levels: list[Any] | None
    created_at: datetime


ROW, SPAN = "row", "span"


@dataclass(frozen=True)
class NewLabel:
    """A label to store, its value already checked against the name's type: on a run's
    row (``run_id``, ``row``) or, with ``trace_id`` and ``span_id``, on a span."""

    name: str
    run_id: str | None
    row: int | None
    value: Any
    annotator: str
    comment: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


@dataclass(frozen=True)
class Label:
    """A stored label on a run's row, or on a span (``kind`` ``"span"``: ``run_id`` is
    empty and ``row`` 0, ``trace_id`` and ``span_id`` name it)."""

    id: str
    name: str
    run_id: str
    row: int
    value: Any
    annotator: str
    comment: str | None
    created_at: datetime
    kind: str = ROW
    trace_id: str | None = None
    span_id: str | None = None

    @property
    def target(self) -> dict[str, Any]:
        """``{"run", "row"}`` or ``{"trace_id", "span_id"}``, as the API writes it."""
        if self.kind == SPAN:
            return {"trace_id": self.trace_id, "span_id": self.span_id}
        return {"run": self.run_id, "row": self.row}


def _name(row: LabelNameRow) -> LabelName:
    return LabelName(row.name, row.type, row.levels, aware(row.created_at) or utcnow())


def _label(row: LabelRow) -> Label:
    return Label(
        id=row.id,
        name=row.name,
        run_id=row.run_id or "",
        row=int(row.row_index or 0),
        value=row.value,
        annotator=row.annotator,
        comment=row.comment,
        created_at=aware(row.created_at) or utcnow(),
        kind=row.target_kind,
        trace_id=row.trace_id,
        span_id=row.span_id,
    )


class LabelStore(SqlSessions):
    """Label names and labels of every tenant, each call for one tenant."""

    def declare_name(
        self, tenant_id: str, name: str, type_: str, levels: Sequence[Any] | None
    ) -> tuple[LabelName, bool]:
        """Declare ``name``'s type; the same declaration again is a no-op (``False``).

        A different type is refused once labels exist under the name (their values were
        checked against the old one); before that it replaces the declaration.
        """
        wanted = list(levels) if levels else None
        with self._session() as s:
            row = s.scalar(
                select(LabelNameRow).where(
                    LabelNameRow.tenant_id == tenant_id, LabelNameRow.name == name
                )
            )
            if row is not None:
                if row.type == type_ and (row.levels or None) == wanted:
                    return _name(row), False
                used = s.scalar(
                    select(func.count())
                    .select_from(LabelRow)
                    .where(LabelRow.tenant_id == tenant_id, LabelRow.name == name)
                )
                if used:
                    raise ConflictError(
                        f"label name {name!r} is declared {row.type} and has {used} labels: "
                        "delete them first (DELETE /v1/labels?name=...) or use a new name"
                    )
                row.type, row.levels = type_, wanted
                s.flush()
                return _name(row), True
            row = LabelNameRow(
                id=new_id("lbn"),
                tenant_id=tenant_id,
                name=name,
                type=type_,
                levels=wanted,
                created_at=utcnow(),
            )
            s.add(row)
            s.flush()
            return _name(row), True

    def get_name(self, tenant_id: str, name: str) -> LabelName:
        """The declared name, or NotFoundError naming how to declare it."""
        with self._session() as s:
            row = one_or_404(
                s,
                select(LabelNameRow).where(
                    LabelNameRow.tenant_id == tenant_id, LabelNameRow.name == name
                ),
                f"label name {name!r} is not declared: PUT /v1/label-names/{name} "
                '{"type": "bool"} (or --type on `scorebox labels import`)',
            )
            return _name(row)

    def list_names(self, tenant_id: str) -> list[LabelName]:
        with self._session() as s:
            rows = s.scalars(
                select(LabelNameRow)
                .where(LabelNameRow.tenant_id == tenant_id)
                .order_by(LabelNameRow.name)
            )
            return [_name(r) for r in rows]

    def add_labels(self, tenant_id: str, labels: Sequence[NewLabel]) -> list[Label]:
        """Append ``labels`` in one transaction (all or none)."""
        now = utcnow()
        rows = [
            LabelRow(
                id=new_id("lbl"),
                tenant_id=tenant_id,
                name=label.name,
                target_kind=ROW if label.trace_id is None else SPAN,
                run_id=label.run_id,
                row_index=label.row,
                trace_id=label.trace_id,
                span_id=label.span_id,
                value=label.value,
                annotator=label.annotator,
                comment=label.comment,
                created_at=now,
            )
            for label in labels
        ]
        with self._session() as s:
            s.add_all(rows)
            s.flush()
            return [_label(r) for r in rows]

    def list_labels(
        self,
        tenant_id: str,
        *,
        name: str | None = None,
        run_id: str | None = None,
        row: int | None = None,
        annotator: str | None = None,
        limit: int = MAX_PAGE,
        offset: int = 0,
        kind: str | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
    ) -> list[Label]:
        """Labels in the order they were given (a batch in row order), filtered; ``kind``
        ``"row"`` or ``"span"`` keeps one kind of target."""
        query = select(LabelRow).where(LabelRow.tenant_id == tenant_id)
        if kind is not None:
            query = query.where(LabelRow.target_kind == kind)
        if trace_id is not None:
            query = query.where(LabelRow.trace_id == trace_id.lower())
        if span_id is not None:
            query = query.where(LabelRow.span_id == span_id.lower())
        if name is not None:
            query = query.where(LabelRow.name == name)
        if run_id is not None:
            query = query.where(LabelRow.run_id == run_id)
        if row is not None:
            query = query.where(LabelRow.row_index == row)
        if annotator is not None:
            query = query.where(LabelRow.annotator == annotator)
        query = (
            query.order_by(
                LabelRow.created_at,
                LabelRow.run_id,
                LabelRow.row_index,
                LabelRow.trace_id,
                LabelRow.span_id,
                LabelRow.id,
            )
            .limit(limit)
            .offset(offset)
        )
        with self._session() as s:
            return [_label(r) for r in s.scalars(query)]

    def delete_label(self, tenant_id: str, label_id: str) -> None:
        """Delete one label; NotFoundError when it is not the tenant's."""
        with self._session() as s:
            done = s.execute(
                delete(LabelRow).where(LabelRow.tenant_id == tenant_id, LabelRow.id == label_id)
            )
            if not getattr(done, "rowcount", 0):
                raise NotFoundError(f"label {label_id!r} not found")

    def delete_labels(
        self,
        tenant_id: str,
        *,
        name: str,
        run_id: str | None = None,
        annotator: str | None = None,
        trace_id: str | None = None,
    ) -> int:
        """Delete a name's labels (of one run or one trace, of one annotator); how many
        went."""
        query = delete(LabelRow).where(LabelRow.tenant_id == tenant_id, LabelRow.name == name)
        if run_id is not None:
            query = query.where(LabelRow.run_id == run_id)
        if trace_id is not None:
            query = query.where(LabelRow.trace_id == trace_id.lower())
        if annotator is not None:
            query = query.where(LabelRow.annotator == annotator)
        with self._session() as s:
            return int(getattr(s.execute(query), "rowcount", 0) or 0)

    # ---- required agreement of check versions -------------------------------------------

    def set_requirement(self, tenant_id: str, check_id: str, requirement: str) -> None:
        """Require ``requirement`` of the check version ``check_id`` (replacing any)."""
        with self._session() as s:
            row = s.scalar(
                select(AgreementRequirementRow).where(
                    AgreementRequirementRow.tenant_id == tenant_id,
                    AgreementRequirementRow.check_id == check_id,
                )
            )
            if row is None:
                s.add(
                    AgreementRequirementRow(
                        id=new_id("req"),
                        tenant_id=tenant_id,
                        check_id=check_id,
                        requirement=requirement,
                        created_at=utcnow(),
                    )
                )
            else:
                row.requirement = requirement

    def requirements(self, tenant_id: str) -> dict[str, str]:
        """Every check version's requirement: ``{check_id: requirement}``."""
        with self._session() as s:
            rows = s.scalars(
                select(AgreementRequirementRow).where(
                    AgreementRequirementRow.tenant_id == tenant_id
                )
            )
            return {r.check_id: r.requirement for r in rows}

    def delete_requirement(self, tenant_id: str, check_id: str) -> int:
        """Drop the version's requirement; how many went (0 or 1)."""
        with self._session() as s:
            done = s.execute(
                delete(AgreementRequirementRow).where(
                    AgreementRequirementRow.tenant_id == tenant_id,
                    AgreementRequirementRow.check_id == check_id,
                )
            )
            return int(getattr(done, "rowcount", 0) or 0)


#: The label store on ``engine``, made once (the API and the dashboard share it).
label_store = once_per_engine(LabelStore)
