"""Tenants and their API keys in SQL: :class:`~engine.storage.protocols.TenantStore`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from engine.errors import ConflictError, NotFoundError
from engine.storage.database import SqlSessions
from engine.storage.records import ApiKey, Tenant, aware, new_id, utcnow
from engine.storage.tables import (
    ApiKeyRow,
    CheckVersionRow,
    ResultBlockRow,
    RunRow,
    RunRowBlock,
    TenantRow,
)


def _tenant(row: TenantRow) -> Tenant:
    return Tenant(
        row.id,
        row.name,
        dict(row.quotas or {}),
        aware(row.created_at) or utcnow(),
        aware(row.disabled_at),
    )


@dataclass(frozen=True)
class TenantData:
    """What a tenant holds: counted before a delete, and what the delete removed."""

    keys: int
    checks: int
    runs: int
    rows: int
    results: int

    def describe(self) -> str:
        """``3 keys, 2 check versions, 5 runs (1,200 rows, 2,400 results)``."""
        return (
            f"{self.keys} keys, {self.checks} check versions, {self.runs} runs "
            f"({self.rows:,} rows, {self.results:,} results)"
        )


def _key(row: ApiKeyRow) -> ApiKey:
    return ApiKey(
        row.id,
        row.tenant_id,
        row.prefix,
        row.name,
        aware(row.created_at) or utcnow(),
        aware(row.revoked_at),
    )


def _count(s: Session, query: Select[Any]) -> int:
    return int(s.scalar(select(func.count()).select_from(query.subquery())) or 0)


class SqlTenants(SqlSessions):
    """:class:`~engine.storage.protocols.TenantStore` on a SQLAlchemy engine."""

    # ---- tenants and keys -------------------------------------------------------------

    def create_tenant(self, name: str, quotas: Mapping[str, Any] | None = None) -> Tenant:
        row = TenantRow(id=new_id("tnt"), name=name, quotas=dict(quotas or {}), created_at=utcnow())
        try:
            with self._session() as s:
                s.add(row)
        except IntegrityError as exc:
            raise ConflictError(f"a tenant named {name!r} already exists") from exc
        return _tenant(row)

    def get_tenant(self, id_or_name: str) -> Tenant:
        with self._session() as s:
            row = s.get(TenantRow, id_or_name) or s.scalar(
                select(TenantRow).where(TenantRow.name == id_or_name)
            )
            if row is None:
                raise NotFoundError(f"no tenant {id_or_name!r}: see `scorebox tenant list`")
            return _tenant(row)

    def list_tenants(self) -> list[Tenant]:
        with self._session() as s:
            return [_tenant(r) for r in s.scalars(select(TenantRow).order_by(TenantRow.created_at))]

    def set_tenant_quotas(self, tenant_id: str, quotas: Mapping[str, Any]) -> Tenant:
        with self._session() as s:
            row = s.get(TenantRow, tenant_id)
            if row is None:
                raise NotFoundError(f"no tenant {tenant_id!r}")
            row.quotas = {**(row.quotas or {}), **quotas}
            row.quotas = {k: v for k, v in row.quotas.items() if v is not None}
            return _tenant(row)

    def set_tenant_disabled(self, tenant_id: str, disabled: bool) -> Tenant:
        """Disable (its keys then answer 401) or enable a tenant; idempotent."""
        with self._session() as s:
            row = s.get(TenantRow, tenant_id)
            if row is None:
                raise NotFoundError(f"no tenant {tenant_id!r}: see `scorebox tenant list`")
            if disabled and row.disabled_at is None:
                row.disabled_at = utcnow()
            elif not disabled:
                row.disabled_at = None
            return _tenant(row)

    def tenant_data(self, tenant_id: str) -> TenantData:
        """Count what the tenant holds."""
        with self._session() as s:
            runs = select(RunRow.id).where(RunRow.tenant_id == tenant_id)
            return TenantData(
                keys=_count(s, select(ApiKeyRow.id).where(ApiKeyRow.tenant_id == tenant_id)),
                checks=_count(
                    s, select(CheckVersionRow.id).where(CheckVersionRow.tenant_id == tenant_id)
                ),
                runs=_count(s, runs),
                rows=int(
                    s.scalar(
                        select(
                            func.coalesce(func.sum(RunRowBlock.row_stop - RunRowBlock.row_start), 0)
                        ).where(RunRowBlock.run_id.in_(runs))
                    )
                    or 0
                ),
                results=int(
                    s.scalar(
                        select(func.coalesce(func.sum(ResultBlockRow.rows), 0)).where(
                            ResultBlockRow.run_id.in_(runs)
                        )
                    )
                    or 0
                ),
            )

    def delete_tenant(self, tenant_id: str) -> TenantData:
        """Remove the tenant and everything it holds: keys, checks, runs with their rows and
        results, labels, the Okareo edge's records (each table's foreign key cascades).
        The audit log keeps its events: it is the operator's record, deletion included."""
        held = self.tenant_data(tenant_id)
        with self._session() as s:
            gone = s.execute(delete(TenantRow).where(TenantRow.id == tenant_id))
            if not gone.rowcount:  # type: ignore[attr-defined]
                raise NotFoundError(f"no tenant {tenant_id!r}: see `scorebox tenant list`")
        return held

    def add_key(self, tenant_id: str, prefix: str, key_hash: str, name: str | None) -> ApiKey:
        row = ApiKeyRow(
            id=new_id("key"),
            tenant_id=tenant_id,
            prefix=prefix,
            key_hash=key_hash,
            name=name,
            created_at=utcnow(),
        )
        with self._session() as s:
            if s.get(TenantRow, tenant_id) is None:
                raise NotFoundError(f"no tenant {tenant_id!r}")
            s.add(row)
        return _key(row)

    def list_keys(self, tenant_id: str) -> list[ApiKey]:
        with self._session() as s:
            rows = s.scalars(
                select(ApiKeyRow)
                .where(ApiKeyRow.tenant_id == tenant_id)
                .order_by(ApiKeyRow.created_at)
            )
            return [_key(r) for r in rows]

    def revoke_key(self, id_or_prefix: str, tenant_id: str | None = None) -> ApiKey:
        with self._session() as s:
            query = select(ApiKeyRow).where(
                (ApiKeyRow.id == id_or_prefix) | (ApiKeyRow.prefix == id_or_prefix)
            )
            if tenant_id is not None:
                query = query.where(ApiKeyRow.tenant_id == tenant_id)
            rows = list(s.scalars(query))
            if not rows:
                raise NotFoundError(f"no API key {id_or_prefix!r}: see `scorebox tenant keys`")
            if len(rows) > 1:
                raise ConflictError(f"{id_or_prefix!r} matches several keys: pass the key id")
            row = rows[0]
            if row.revoked_at is None:
                row.revoked_at = utcnow()
            return _key(row)

    def find_key(self, key_hash: str) -> tuple[ApiKey, Tenant] | None:
        with self._session() as s:
            found = s.execute(
                select(ApiKeyRow, TenantRow)
                .join(TenantRow, TenantRow.id == ApiKeyRow.tenant_id)
                .where(ApiKeyRow.key_hash == key_hash)
            ).first()
            if found is None:
                return None
            return _key(found[0]), _tenant(found[1])
