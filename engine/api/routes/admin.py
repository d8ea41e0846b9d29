"""``/v1/admin``: tenants and keys, for the operator's admin key (``SCOREBOX_ADMIN_KEY``)."""

from __future__ import annotations

from fastapi import APIRouter

from engine.api.schemas import KeyOut, NewKeyOut, TenantCreate, TenantOut
from engine.audit import hooks
from engine.http.deps import AdminDep, AuditDep, StoreDep
from engine.http.problems import responses
from engine.storage import ApiKey, Tenant
from engine.tenancy import auth
from engine.tenancy.quotas import parse_overrides

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def _tenant(t: Tenant) -> TenantOut:
    return TenantOut(id=t.id, name=t.name, quotas=t.quotas, created_at=t.created_at)


def _key(k: ApiKey) -> KeyOut:
    return KeyOut(
        id=k.id,
        tenant_id=k.tenant_id,
        prefix=k.prefix,
        name=k.name,
        created_at=k.created_at,
        revoked_at=k.revoked_at,
    )


def _new(new: auth.NewKey) -> NewKeyOut:
    return NewKeyOut(tenant=_tenant(new.tenant), key=_key(new.key), api_key=new.secret)


@router.post(
    "/tenants",
    response_model=NewKeyOut,
    status_code=201,
    summary="Create a tenant and its first key",
    responses=responses(401, 403, 409, 422),
)
def create_tenant(body: TenantCreate, store: StoreDep, _: AdminDep, audit: AuditDep) -> NewKeyOut:
    new = auth.create_tenant(store, body.name, parse_overrides(body.quotas))
    hooks.tenant_created(audit, "admin-api", new)
    return _new(new)


@router.get("/tenants", response_model=list[TenantOut], summary="List tenants")
def list_tenants(store: StoreDep, _: AdminDep) -> list[TenantOut]:
    return [_tenant(t) for t in store.list_tenants()]


@router.patch(
    "/tenants/{tenant}/quotas",
    response_model=TenantOut,
    summary="Override a tenant's quotas",
    responses=responses(401, 403, 404, 422),
)
def set_quotas(
    tenant: str, body: dict[str, int], store: StoreDep, _: AdminDep, audit: AuditDep
) -> TenantOut:
    found = store.get_tenant(tenant)
    changed = parse_overrides(body)
    updated = store.set_tenant_quotas(found.id, changed)
    hooks.quotas_changed(audit, "admin-api", updated, changed)
    return _tenant(updated)


@router.post(
    "/tenants/{tenant}/keys",
    response_model=NewKeyOut,
    status_code=201,
    summary="Issue another key for a tenant",
    responses=responses(401, 403, 404),
)
def create_key(
    tenant: str, store: StoreDep, _: AdminDep, audit: AuditDep, name: str | None = None
) -> NewKeyOut:
    new = auth.issue_key(store, tenant, name)
    hooks.key_created(audit, "admin-api", new)
    return _new(new)


@router.get("/tenants/{tenant}/keys", response_model=list[KeyOut], summary="List a tenant's keys")
def list_keys(tenant: str, store: StoreDep, _: AdminDep) -> list[KeyOut]:
    return [_key(k) for k in store.list_keys(store.get_tenant(tenant).id)]


@router.delete(
    "/keys/{key}",
    response_model=KeyOut,
    summary="Revoke a key (by id or prefix)",
    responses=responses(401, 403, 404, 409),
)
def revoke_key(key: str, store: StoreDep, _: AdminDep, audit: AuditDep) -> KeyOut:
    revoked = store.revoke_key(key)
    hooks.key_revoked(audit, "admin-api", revoked)
    return _key(revoked)
