"""The Okareo-compatible API: ``/v0`` routes the unmodified ``okareo`` SDK talks to.

``Okareo(api_key=KEY, base_path=URL)`` works against scorebox: same keys and
tenants as ``/v1`` (sent as ``api-key``), UUID ids, and the one success code
the SDK's generated client accepts per route. The routes translate Okareo's
field names at this edge and call the same services as ``/v1``; what ``/v1``
has no place for (projects, registered models, scenario sets, test runs) lives
in :mod:`engine.okareo.store`.
"""

from __future__ import annotations

from fastapi import APIRouter

from engine.okareo.routes import checks, runs

TAG = checks.TAG
TAG_DESCRIPTION = (
    "Okareo-compatible API for the unmodified `okareo` Python SDK: "
    "`Okareo(api_key=KEY, base_path=URL)`. Authenticate with `api-key: <key>`."
)

router = APIRouter()
router.include_router(checks.router)
router.include_router(runs.router)

__all__ = ["TAG", "TAG_DESCRIPTION", "router"]
