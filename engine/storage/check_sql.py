"""Check versions in SQL: :class:`~engine.storage.protocols.CheckStore`."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import and_, func, select, update
from sqlalchemy.exc import IntegrityError

from engine.errors import ConflictError, NotFoundError
from engine.storage.database import SqlSessions, one_or_404
from engine.storage.records import CheckVersion, aware, utcnow
from engine.storage.tables import CheckVersionRow


def _check(row: CheckVersionRow) -> CheckVersion:
    return CheckVersion(
        id=row.id,
        tenant_id=row.tenant_id,
        name=row.name,
        version=row.version,
        kind=row.kind,
        description=row.description,
        tags=list(row.tags or []),
        source=row.source,
        prompt_template=row.prompt_template,
        check_type=row.check_type,
        policy=row.policy,
        output_data_type=row.output_data_type,
        requires_scenario_input=row.requires_scenario_input,
        requires_scenario_result=row.requires_scenario_result,
        limits=row.limits,
        sha256=row.sha256,
        author_key_id=row.author_key_id,
        created_at=aware(row.created_at) or utcnow(),
        deleted_at=aware(row.deleted_at),
        entry=row.entry,
        config=row.config,
        origin=row.origin or "pushed",
    )


class SqlChecks(SqlSessions):
    """:class:`~engine.storage.protocols.CheckStore` on a SQLAlchemy engine."""

    # ---- checks -----------------------------------------------------------------------

    def latest_check(self, tenant_id: str, name: str) -> CheckVersion | None:
        with self._session() as s:
            row = s.scalar(
                select(CheckVersionRow)
                .where(
                    CheckVersionRow.tenant_id == tenant_id,
                    CheckVersionRow.name == name,
                    CheckVersionRow.deleted_at.is_(None),
                )
                .order_by(CheckVersionRow.version.desc())
                .limit(1)
            )
            return None if row is None else _check(row)

    def max_check_version(self, tenant_id: str, name: str) -> int:
        """The highest version of the name's current life: since its oldest live version,
        deleted ones included (so a number is not reused while the name lives); 0 when no
        version is live (a name deleted whole starts again at 1, as in Okareo)."""
        of_name = and_(CheckVersionRow.tenant_id == tenant_id, CheckVersionRow.name == name)
        with self._session() as s:
            since = s.scalar(
                select(func.min(CheckVersionRow.created_at)).where(
                    of_name, CheckVersionRow.deleted_at.is_(None)
                )
            )
            if since is None:
                return 0
            value = s.scalar(
                select(func.max(CheckVersionRow.version)).where(
                    of_name, CheckVersionRow.created_at >= since
                )
            )
            return int(value or 0)

    def insert_check(self, check: CheckVersion) -> CheckVersion:
        row = CheckVersionRow(**asdict(check))
        try:
            with self._session() as s:
                s.add(row)
        except IntegrityError as exc:
            raise ConflictError(
                f"check {check.name!r} version {check.version} was saved concurrently; retry"
            ) from exc
        return _check(row)

    def get_check(self, tenant_id: str, name: str, version: int | None = None) -> CheckVersion:
        if version is None:
            found = self.latest_check(tenant_id, name)
            if found is None:
                raise NotFoundError(f"no check named {name!r}")
            return found
        query = select(CheckVersionRow).where(
            CheckVersionRow.tenant_id == tenant_id,
            CheckVersionRow.name == name,
            CheckVersionRow.version == version,
            CheckVersionRow.deleted_at.is_(None),
        )
        with self._session() as s:
            return _check(one_or_404(s, query, f"no check {name!r} version {version}"))

    def get_check_by_id(
        self, tenant_id: str, check_id: str, include_deleted: bool = False
    ) -> CheckVersion:
        query = select(CheckVersionRow).where(
            CheckVersionRow.tenant_id == tenant_id, CheckVersionRow.id == check_id
        )
        if not include_deleted:
            query = query.where(CheckVersionRow.deleted_at.is_(None))
        with self._session() as s:
            return _check(one_or_404(s, query, f"no check with id {check_id!r}"))

    def list_checks(self, tenant_id: str, all_versions: bool = False) -> list[CheckVersion]:
        with self._session() as s:
            live = and_(
                CheckVersionRow.tenant_id == tenant_id, CheckVersionRow.deleted_at.is_(None)
            )
            query = select(CheckVersionRow).where(live)
            if not all_versions:
                latest = (
                    select(CheckVersionRow.name, func.max(CheckVersionRow.version).label("v"))
                    .where(live)
                    .group_by(CheckVersionRow.name)
                    .subquery()
                )
                query = query.join(
                    latest,
                    and_(
                        CheckVersionRow.name == latest.c.name, CheckVersionRow.version == latest.c.v
                    ),
                )
            query = query.order_by(CheckVersionRow.name, CheckVersionRow.version)
            return [_check(r) for r in s.scalars(query)]

    def delete_check(self, tenant_id: str, name: str, version: int | None = None) -> int:
        with self._session() as s:
            stmt = update(CheckVersionRow).where(
                CheckVersionRow.tenant_id == tenant_id,
                CheckVersionRow.name == name,
                CheckVersionRow.deleted_at.is_(None),
            )
            if version is not None:
                stmt = stmt.where(CheckVersionRow.version == version)
            count = s.execute(stmt.values(deleted_at=utcnow())).rowcount  # type: ignore[attr-defined]
            if not count:
                what = name if version is None else f"{name}@{version}"
                raise NotFoundError(f"no check {what!r}")
            return int(count)
