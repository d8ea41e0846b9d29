"""``/docs`` (Swagger UI) served from the package: it works offline.

FastAPI's default page loads Swagger UI from a CDN, so it is blank on a machine
without internet access. The assets come from the ``fastapi-offline`` package
(PyPI), which ships ``swagger-ui-bundle.js``, ``swagger-ui.css`` and a favicon;
scorebox serves that directory under :data:`ASSETS_URL` and points the page
there. Swagger UI's online validator badge is off (``validatorUrl: null``), so
the page contacts no other host. There is no ``/redoc``: ReDoc's page loads its
logo from a CDN whatever its options.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"


def assets_dir() -> Path:
    """The directory of the Swagger UI files that ``fastapi-offline`` ships."""
    return Path(str(files("fastapi_offline") / "static"))


def install(app: FastAPI) -> None:
    """Serve ``/docs`` and its assets (create the app with docs_url=None, redoc_url=None)."""
    app.mount(ASSETS_URL, StaticFiles(directory=assets_dir()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},
        )
