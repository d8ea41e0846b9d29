"""Tenants and their API keys in SQL: :class:`~engine.storage.protocols.TenantStore`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from engine.errors import ConflictError, NotFoundError
from engine.storage.database import SqlSessions
from engine.storage.records import ApiKey, Tenant, aware, new_id, utcnow
from engine.storage.tables import ApiKeyRow, TenantRow


def _tenant(row: TenantRow) -> Tenant:
    return Tenant(row.id, row.name, dict(row.quotas or {}), aware(row.created_at) or utcnow())


def _key(row: ApiKeyRow) -> ApiKey:
    return ApiKey(
        row.id,
        row.tenant_id,
        row.prefix,
        row.name,
        aware(row.created_at) or utcnow(),
        aware(row.revoked_at),
    )


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
