"""The composition root: ``create_app(settings) -> FastAPI`` stacks the edges' kit
(:mod:`engine.http`) and mounts every edge: the API's routes, the dashboard, the Okareo edge."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI
from sqlalchemy import Engine as SAEngine

from engine import web
from engine.api import docs, openapi
from engine.api.routes import admin, checks, generate, health, judge, runs, score
from engine.api.routes import agreement as agreement_routes
from engine.api.routes import audit as audit_api
from engine.api.routes import compare as compare_routes
from engine.api.routes import labels as labels_routes
from engine.api.routes import otlp_export as otlp_export_routes
from engine.api.routes import rules as rules_routes
from engine.api.routes import traces as traces_routes
from engine.distributed.preflight import check_distributed
from engine.errors import RuntimeUnavailableError, ScoreboxError
from engine.http import problems
from engine.http.body import BodyLimit, BodyLimits
from engine.http.budget import BodyBudget
from engine.http.gate import KeyGate
from engine.http.guard import SurrogateGuard, reject_unknown_query
from engine.http.metrics import HttpMetrics
from engine.http.nul_guard import NulGuard
from engine.http.request_ids import RequestContext
from engine.http.services import Services
from engine.okareo import routes as okareo
from engine.online.exporter import ScoreExporter
from engine.online.pruner import SpanPruner
from engine.online.scorer import OnlineScorer
from engine.runs.service import RunService
from engine.runs.wiring import Scoring, build_scoring
from engine.settings import Settings
from engine.storage import SqlStore, create_db_engine, upgrade
from engine.storage.cached import CachedStore
from engine.storage.database import check_schema_at_start
from engine.tenancy.admin_key import check_admin_key

if TYPE_CHECKING:
    from engine.sandbox.runner import SandboxRunner

log = logging.getLogger("scorebox.api")

DESCRIPTION = """\
Score LLM outputs with checks: your own Python (run in hardened, network-less
containers), built-ins, and LLM judges.

Authenticate with `Authorization: Bearer <api key>` (an operator creates tenants
and keys with `scorebox tenant create NAME`). Errors are
`application/problem+json`; check validation errors carry
`errors[{code, message, line, col}]`; quota errors are 429 with `Retry-After`.
"""


def _run_service(scoring: Scoring, store: SqlStore, db: SAEngine) -> RunService:
    """Runs scored here, or, with a broker (``SCOREBOX_BROKER_URL``), dispatched to
    ``scorebox worker`` hosts (this node then runs no sandbox work)."""
    settings = scoring.settings
    dispatch = None  # the service's default: this process's threads
    if settings.broker_url:
        from engine.distributed.celery_app import create_celery  # noqa: PLC0415 (lazy: celery is the optional [distributed] extra)
        from engine.distributed.celery_dispatch import CeleryDispatch  # noqa: PLC0415 (lazy: celery/redis are the optional [distributed] extra)

        dispatch = CeleryDispatch(settings, store, scoring.metrics, create_celery(settings), db)
    return RunService(
        settings,
        store,
        scoring.executors,
        scoring.metrics,
        scoring.builtins,
        dispatch=dispatch,
    )


def create_app(
    settings: Settings,
    *,
    runner_factory: Callable[[Settings], SandboxRunner] | None = None,
) -> FastAPI:
    """The scorebox HTTP API. Storage, workers and the sandbox start with the app's lifespan."""
    check_admin_key(settings.admin_key.get_secret_value() if settings.admin_key else None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.broker_url:
            check_distributed(settings)  # PostgreSQL and a reachable broker, or refuse to start
        db = create_db_engine(settings.effective_database_url)
        if settings.migrate_on_start:
            upgrade(db)
        check_schema_at_start(db)  # a schema of another version: refuse to serve, name the fix
        store = CachedStore(  # key -> tenant, name -> check version: not read per request
            db,
            key_seconds=settings.key_cache_seconds,
            check_seconds=settings.check_cache_seconds,
        )
        scoring = build_scoring(settings, db=db, store=store, runner_factory=runner_factory)
        try:
            if not settings.broker_url:  # distributed API nodes run no sandbox work
                # the warm pool of the configured limits fills now; scoring retries if
                # Docker is down
                scoring.runners.get().prewarm()
        except RuntimeUnavailableError:
            raise  # SCOREBOX_RUNTIME the engine lacks: refuse to start, the message names the fix
        except ScoreboxError as exc:
            log.warning("sandbox not available yet: %s", exc)
        service = _run_service(scoring, store, db)
        scoring.metrics.watch(
            service.queue_depth, scoring.runners.pool_sizes, service.jobs_in_flight
        )
        app.state.services = Services(
            settings, store, service, scoring.runners, scoring.metrics, db, scoring.llm
        )
        service.start()
        online = OnlineScorer(store, service, db, scoring.metrics)  # rules score spans
        app.state.online = online
        online.start()
        exporter = ScoreExporter(settings, db)  # the online scores' OTLP export, if set
        exporter.start()
        pruner = SpanPruner(settings, db)  # spans past SCOREBOX_SPAN_RETENTION_DAYS, if set
        pruner.start()
        try:
            yield
        finally:
            online.stop()
            pruner.stop()
            exporter.stop()
            service.stop()
            scoring.close()
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
            {"name": "audit", "description": audit_api.TAG_DESCRIPTION},
            {"name": "labels", "description": labels_routes.TAG_DESCRIPTION},
            {"name": "traces", "description": traces_routes.TAG_DESCRIPTION},
            {"name": "rules", "description": rules_routes.TAG_DESCRIPTION},
            {"name": "health", "description": "Liveness, readiness, metrics."},
            {"name": okareo.TAG, "description": okareo.TAG_DESCRIPTION},
        ],
    )
    problems.install(app)
    app.add_middleware(SurrogateGuard)  # a lone "\ud800" in any JSON body is a 422, not a 500
    app.add_middleware(NulGuard)  # a %00 in the path or query: PostgreSQL cannot hold it
    # the caller is known from the headers before any layer reads the body: a junk key is
    # a 401 with the body unread; bodies in flight are bounded per key and in total
    app.add_middleware(KeyGate, budget=BodyBudget.from_settings(settings))
    # outermost: bodies are bounded before SurrogateGuard buffers them and before auth
    app.add_middleware(BodyLimit, limits=BodyLimits.from_settings(settings))
    app.add_middleware(HttpMetrics)  # outermost of all: refused requests are counted too
    # around everything: each answer's X-Request-ID, and each log line's req= and tenant=
    app.add_middleware(RequestContext)
    # routes are matched in the order included: /v1/score, the hot path, is tried first
    # (each router before it costs every call a match of each of its routes)
    app.include_router(score.router)
    app.include_router(checks.router)
    app.include_router(generate.router)
    app.include_router(judge.router)
    app.include_router(runs.router)
    app.include_router(compare_routes.router)
    app.include_router(labels_routes.router)
    app.include_router(agreement_routes.router)
    app.include_router(traces_routes.router)
    app.include_router(rules_routes.router)
    app.include_router(otlp_export_routes.router)
    app.include_router(admin.router)
    app.include_router(audit_api.router)
    app.include_router(health.router)
    app.include_router(okareo.router)
    web.install(app)  # the dashboard under /ui
    docs.install(app)  # /docs with its assets from the package
    openapi.install(app)  # every error documented as application/problem+json
    return app
