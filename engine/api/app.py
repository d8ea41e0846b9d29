"""The app factory: ``create_app(settings) -> FastAPI``."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from engine.api import problems
from engine.api.routes import admin, checks, generate, health, judge, runs, score
from engine.api.services import Services
from engine.errors import ScoreboxError
from engine.runs.executors import CodeExecutor, EngineHolder, Executors, ModelExecutor
from engine.runs.metrics import Metrics
from engine.runs.registry import Builtin, load_builtins
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import SqlStore, create_db_engine, upgrade

if TYPE_CHECKING:
    from engine.runner import Engine

log = logging.getLogger("scorebox.api")

DESCRIPTION = """\
Score LLM outputs with checks: your own Python (run in hardened, network-less
containers), built-ins, and LLM judges.

Authenticate with `Authorization: Bearer <api key>` (an operator creates tenants
and keys with `scorebox tenant create NAME`). Errors are
`application/problem+json`; check validation errors carry
`errors[{code, message, line, col}]`; quota errors are 429 with `Retry-After`.
"""


def _llm_client(settings: Settings, db: Any) -> Any:
    """The one LLM client (judges, pairwise, generator): cached in the database and metered.

    None when no endpoint is configured; judges then answer ``judge_error`` saying so.
    """
    if settings.llm_base_url is None and settings.llm_api_key is None:
        return None
    try:
        from engine.judging.usage import MeteredClient
        from engine.llm import create_llm_client
        from engine.storage.llm_cache import SqlResponseCache

        return MeteredClient(create_llm_client(settings, cache=SqlResponseCache(db)))
    except ScoreboxError as exc:
        log.warning("LLM judges unavailable: %s", exc)
        return None


def create_app(
    settings: Settings,
    *,
    engine_factory: Callable[[Settings], Engine] | None = None,
) -> FastAPI:
    """The scorebox HTTP API. Storage, workers and the sandbox start with the app's lifespan."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = create_db_engine(settings.effective_database_url)
        if settings.migrate_on_start:
            upgrade(db)
        store = SqlStore(db)
        engines = EngineHolder(settings, engine_factory)
        try:
            engines.get()  # start the warm pool now; scoring retries later if Docker is down
        except ScoreboxError as exc:
            log.warning("sandbox not available yet: %s", exc)
        metrics = Metrics()
        llm = _llm_client(settings, db)
        app.state.llm = llm
        builtins: Callable[[], Mapping[str, Builtin]] = functools.cache(
            functools.partial(load_builtins, llm=llm)
        )
        executors = Executors(
            CodeExecutor(engines), model=ModelExecutor(llm, settings.llm_concurrency)
        )
        service = RunService(settings, store, executors, metrics, builtins)
        metrics.watch(service.scheduler.depth, engines.pool_sizes, service.scheduler.inflight)
        app.state.services = Services(settings, store, service, engines, metrics)
        service.start()
        try:
            yield
        finally:
            service.stop()
            engines.close()
            db.dispose()

    app = FastAPI(
        title="scorebox",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_tags=[
            {"name": "checks", "description": "Create, version, validate, list, delete checks."},
            {"name": "scoring", "description": "Score a small batch now."},
            {"name": "runs", "description": "Durable asynchronous runs of any size."},
            {"name": "admin", "description": "Tenants and keys (operator's admin key)."},
            {"name": "health", "description": "Liveness, readiness, metrics."},
        ],
    )
    problems.install(app)
    app.include_router(checks.router)
    app.include_router(generate.router)
    app.include_router(judge.router)
    app.include_router(score.router)
    app.include_router(runs.router)
    app.include_router(admin.router)
    app.include_router(health.router)
    return app
