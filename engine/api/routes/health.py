"""``/healthz``, ``/readyz``, ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from engine.http.deps import ServicesDep
from engine.readiness import readiness
from engine.runs.metrics import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    summary="Liveness",
    responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}}},
)
async def healthz() -> dict[str, str]:
    # async: liveness needs none of the request threads that slow requests may hold
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
    found = readiness(services.settings, services.store, services.runners, services.db)
    return JSONResponse(found.as_json(), status_code=200 if found.ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(services: ServicesDep) -> Response:
    return Response(services.metrics.render(), media_type=CONTENT_TYPE)
