"""Dependencies of ``/v0``: the ``api-key`` header, the Okareo store, the caller's project."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader

from engine.errors import AuthError, NotFoundError
from engine.http.deps import Credentials, ServicesDep, StoreDep
from engine.okareo.store import OkareoStore, Project
from engine.tenancy.auth import Principal, authenticate

_api_key = APIKeyHeader(
    name="api-key",
    auto_error=False,
    description="A scorebox API key, as the Okareo SDK sends it "
    "(`Authorization: Bearer` works too).",
)


def get_okareo_store(request: Request, services: ServicesDep) -> OkareoStore:
    """The ``okareo_*`` tables on the service's database: one store per app, made by the
    first ``/v0`` request (the edges' shared services know nothing of this edge)."""
    store: OkareoStore | None = getattr(request.app.state, "okareo", None)
    if store is None or store.engine is not services.db:
        store = request.app.state.okareo = OkareoStore(services.db)
    return store


def get_okareo_principal(
    store: StoreDep,
    api_key: Annotated[str | None, Depends(_api_key)],
    credentials: Credentials,
) -> Principal:
    """The caller: ``api-key: <key>`` (Okareo's header) or ``Authorization: Bearer <key>``."""
    if api_key and api_key.strip():
        return authenticate(store, f"Bearer {api_key.strip()}")
    if credentials is None:
        raise AuthError(
            "missing API key: pass your scorebox key as Okareo(api_key=...) "
            "(header `api-key: <key>`)"
        )
    return authenticate(store, f"{credentials.scheme} {credentials.credentials}")


OkareoStoreDep = Annotated[OkareoStore, Depends(get_okareo_store)]
OkareoPrincipalDep = Annotated[Principal, Depends(get_okareo_principal)]


def project_of(okareo: OkareoStore, tenant_id: str, project_id: str | None) -> Project:
    """The project a request names, or the tenant's default one."""
    if not project_id:
        return okareo.default_project(tenant_id)
    try:
        return okareo.get_project(tenant_id, str(project_id))
    except NotFoundError:
        raise NotFoundError(
            f"no project {project_id!r}: scorebox has one project per tenant, "
            "see okareo.get_projects()"
        ) from None
