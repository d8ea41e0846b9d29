"""``/healthz``, ``/readyz``, ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from engine.api.deps import ServicesDep
from engine.distributed.preflight import check_broker
from engine.errors import ScoreboxError
from engine.runs.metrics import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    summary="Liveness",
    responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}}},
)
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: Docker engine, sandbox image, database",
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {
                        "ready": True,
                        "checks": {
                            "database": {"ok": True, "detail": "ok"},
                            "docker": {"ok": True, "detail": "ok"},
                            "image": {"ok": True, "detail": "scorebox-sandbox:latest"},
                        },
                    }
                }
            }
        },
        503: {"description": "Not ready; `checks` says what is wrong"},
    },
)
def readyz(services: ServicesDep) -> JSONResponse:
    checks: dict[str, dict[str, Any]] = {}
    try:
        services.store.ping()
        checks["database"] = {"ok": True, "detail": "ok"}
    except ScoreboxError as exc:
        checks["database"] = {"ok": False, "detail": str(exc)}
    if services.settings.broker_url:
        try:
            check_broker(services.settings.broker_url, timeout_seconds=2.0)
            checks["broker"] = {"ok": True, "detail": "ok"}
        except ScoreboxError as exc:
            checks["broker"] = {"ok": False, "detail": str(exc)}
        ready = all(c["ok"] for c in checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)
    try:
        health = services.runners.health()
        checks["docker"] = {"ok": health.engine_ok, "detail": health.detail}
        checks["image"] = {
            "ok": health.image_ok,
            "detail": services.settings.image if health.image_ok else health.detail,
        }
    except ScoreboxError as exc:
        checks["docker"] = {"ok": False, "detail": str(exc)}
        checks["image"] = {"ok": False, "detail": "unknown: the Docker engine is not reachable"}
    ready = all(c["ok"] for c in checks.values())
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(services: ServicesDep) -> Response:
    return Response(services.metrics.render(), media_type=CONTENT_TYPE)
