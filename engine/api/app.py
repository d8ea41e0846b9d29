"""The app factory: ``create_app(settings) -> FastAPI``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI
from sqlalchemy import Engine as SAEngine

from engine import web
from engine.api import docs, okareo, openapi, problems
from engine.api.guard import SurrogateGuard, reject_unknown_query
from engine.api.routes import admin, checks, generate, health, judge, runs, score
from engine.api.routes import compare as compare_routes
from engine.api.services import Services
from engine.builtins import build_builtins
from engine.distributed.preflight import check_distributed
from engine.errors import RuntimeUnavailableError, ScoreboxError
from engine.gateway import ModelGateway
from engine.judging.usage import MeteredClient
from engine.llm import LLMClient
from engine.openai_client import create_llm_client
from engine.runs.executors import CodeExecutor, EngineHolder, Executors, ModelExecutor
from engine.runs.metrics import Metrics
from engine.runs.quotas import effective_quotas
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import SqlStore, Store, create_db_engine, upgrade
from engine.storage.llm_cache import SqlResponseCache, TenantResponseCache

if TYPE_CHECKING:
    from engine.runner import SandboxRunner

log = logging.getLogger("scorebox.api")

DESCRIPTION = """\
Score LLM outputs with checks: your own Python (run in hardened, network-less
containers), built-ins, and LLM judges.

Authenticate with `Authorization: Bearer <api key>` (an operator creates tenants
and keys with `scorebox tenant create NAME`). Errors are
`application/problem+json`; check validation errors carry
`errors[{code, message, line, col}]`; quota errors are 429 with `Retry-After`.
"""


def _llm_client(settings: Settings, db: SAEngine) -> LLMClient | None:
    """The one LLM client (judges, pairwise, generator): cached in the database and metered.

    None when no endpoint is configured; judges then answer ``judge_error`` saying so.
    """
    if settings.llm_base_url is None and settings.llm_api_key is None:
        return None
    try:
        cache = TenantResponseCache(SqlResponseCache(db))  # one tenant never reads another's
        return MeteredClient(create_llm_client(settings, cache=cache))
    except ScoreboxError as exc:
        log.warning("LLM judges unavailable: %s", exc)
        return None


def model_gateway(settings: Settings, store: Store, llm: LLMClient | None) -> ModelGateway | None:
    """The checks' model gateway over the one LLM client (None without a model)."""
    if llm is None:
        return None

    def quota_of(tenant_id: str) -> int:
        try:
            overrides = store.get_tenant(tenant_id).quotas
        except ScoreboxError:
            overrides = None
        return effective_quotas(settings, overrides).llm_tokens_per_run

    return ModelGateway(llm, settings, quota_of)


def create_app(
    settings: Settings,
    *,
    engine_factory: Callable[[Settings], SandboxRunner] | None = None,
) -> FastAPI:
    """The scorebox HTTP API. Storage, workers and the sandbox start with the app's lifespan."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.broker_url:
            check_distributed(settings)  # PostgreSQL and a reachable broker, or refuse to start
        db = create_db_engine(settings.effective_database_url)
        if settings.migrate_on_start:
            upgrade(db)
        store = SqlStore(db)
        engines = EngineHolder(settings, engine_factory)
        try:
            if not settings.broker_url:  # distributed API nodes run no sandbox work
                engines.get()  # start the warm pool now; scoring retries later if Docker is down
        except RuntimeUnavailableError:
            raise  # SCOREBOX_RUNTIME the engine lacks: refuse to start, the message names the fix
        except ScoreboxError as exc:
            log.warning("sandbox not available yet: %s", exc)
        metrics = Metrics()
        llm = _llm_client(settings, db)
        builtins = build_builtins(llm)
        executors = Executors(
            CodeExecutor(engines, model_gateway(settings, store, llm)),
            model=ModelExecutor(llm, settings.llm_concurrency),
        )
        service = RunService(settings, store, executors, metrics, builtins)
        if settings.broker_url:
            from engine.distributed.celery_app import create_celery  # noqa: PLC0415 (lazy: celery is the optional [distributed] extra)
            from engine.distributed.service import DistributedRunService  # noqa: PLC0415 (lazy: celery/redis are the optional [distributed] extra)

            service = DistributedRunService(
                settings, store, executors, metrics, builtins, create_celery(settings), db
            )
        metrics.watch(service.queue_depth, engines.pool_sizes, service.jobs_in_flight)
        app.state.services = Services(settings, store, service, engines, metrics, db, llm)
        service.start()
        try:
            yield
        finally:
            service.stop()
            engines.close()
            db.dispose()

    app = FastAPI(
        dependencies=[Depends(reject_unknown_query)],  # ?limt=5 is a 422, not ignored
        title="scorebox",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=openapi.operation_id,
        docs_url=None,  # served from the package by engine.api.docs (works offline)
        redoc_url=None,
        openapi_tags=[
            {"name": "checks", "description": "Create, version, validate, list, delete checks."},
            {"name": "scoring", "description": "Score a small batch now."},
            {"name": "runs", "description": "Durable asynchronous runs of any size."},
            {"name": "admin", "description": "Tenants and keys (operator's admin key)."},
            {"name": "health", "description": "Liveness, readiness, metrics."},
            {"name": okareo.TAG, "description": okareo.TAG_DESCRIPTION},
        ],
    )
    problems.install(app)
    app.add_middleware(SurrogateGuard)  # a lone "\ud800" in any JSON body is a 422, not a 500
    app.include_router(checks.router)
    app.include_router(generate.router)
    app.include_router(judge.router)
    app.include_router(score.router)
    app.include_router(runs.router)
    app.include_router(compare_routes.router)
    app.include_router(admin.router)
    app.include_router(health.router)
    app.include_router(okareo.router)
    web.install(app)  # the dashboard under /ui
    docs.install(app)  # /docs with its assets from the package
    openapi.install(app)  # every error documented as application/problem+json
    return app
