"""Dependencies of the routes of every edge (API, dashboard, Okareo), as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from engine.audit.store import AuditLog
from engine.http.gate import principal_of_scope
from engine.http.services import Services
from engine.llm.client import LLMClient
from engine.llm.openai_client import create_llm_client
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import Store
from engine.storage.cached import CachedStore
from engine.tenancy.auth import Principal, authenticate, authenticate_cached, authorize_admin

_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer sbx_...`")


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def get_services(request: Request) -> Services:
    return _services(request)


ServicesDep = Annotated[Services, Depends(get_services)]


# The store, the runs and the settings are read off the request, not through ServicesDep:
# each dependency FastAPI solves costs every request that uses it (tens of microseconds).


async def get_store(request: Request) -> Store:
    return _services(request).store


async def get_runs(request: Request) -> RunService:
    return _services(request).runs


async def get_settings(request: Request) -> Settings:
    return _services(request).settings


StoreDep = Annotated[Store, Depends(get_store)]
RunsDep = Annotated[RunService, Depends(get_runs)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _header(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    if credentials is None:
        return None
    return f"{credentials.scheme} {credentials.credentials}"


async def get_principal(request: Request, credentials: Credentials) -> Principal:
    """The caller: as :class:`~engine.http.gate.KeyGate` resolved it before the body was read,
    else from the key cache on the event loop when it holds the key (no thread hop, no
    database read), else :func:`authenticate` in a worker thread."""
    resolved = principal_of_scope(request.scope)
    if resolved is not None:
        return resolved
    store = _services(request).store  # the store only when the gate did not resolve it
    header = _header(credentials)
    if isinstance(store, CachedStore):
        cached = authenticate_cached(store, header)
        if cached is not None:
            return cached
    return await run_in_threadpool(authenticate, store, header)


async def require_admin(settings: SettingsDep, credentials: Credentials) -> None:
    expected = settings.admin_key.get_secret_value() if settings.admin_key else None
    authorize_admin(expected, _header(credentials))


PrincipalDep = Annotated[Principal, Depends(get_principal)]
AdminDep = Annotated[None, Depends(require_admin)]


def get_llm(request: Request, services: ServicesDep) -> LLMClient:
    """The app's LLM client (``services.llm``, set by the app factory).

    Without a configured endpoint this raises ConfigurationError naming
    SCOREBOX_LLM_BASE_URL / SCOREBOX_LLM_API_KEY. ``request`` is unused (the dashboard's
    generate form calls this directly with it).
    """
    if services.llm is None:
        services.llm = create_llm_client(services.settings)
    return services.llm


LLMDep = Annotated[LLMClient, Depends(get_llm)]


def get_audit(services: ServicesDep) -> AuditLog:
    """The app's audit log (``Services.audit``)."""
    return services.audit


AuditDep = Annotated[AuditLog, Depends(get_audit)]
