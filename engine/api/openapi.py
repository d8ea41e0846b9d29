"""The OpenAPI document, made to say what the service really answers (checked by schemathesis).

FastAPI documents a 422 as ``application/json`` with its own ``HTTPValidationError``
body and knows nothing of the errors the app raises itself. scorebox answers every
error as ``application/problem+json`` (:mod:`engine.http.problems`), so this pass:

- gives every 4xx and 5xx response the ``Problem`` schema under that media type;
- adds the statuses any operation can get: 401 behind an API key, 403 on admin
  routes, 404 with a path parameter, 400 for a body that is not JSON at all, 422
  for a request that fails validation.

``tests/api/test_api_fuzz.py`` holds the document to the service's behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from engine.http.problems import PROBLEM_JSON

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "An error (RFC 9457): what went wrong and how to fix it.",
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "examples": ["about:blank"]},
        "title": {"type": "string", "examples": ["Invalid request"]},
        "status": {"type": "integer", "examples": [422]},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "description": "Validation errors: what to fix, and where in a check's source.",
            "items": {
                "type": "object",
                "properties": {
                    "code": {"type": ["string", "null"]},
                    "message": {"type": ["string", "null"]},
                    "line": {"type": ["integer", "null"]},
                    "col": {"type": ["integer", "null"]},
                },
            },
        },
    },
}

_DESCRIPTIONS = {
    "400": "Malformed body (not JSON, or not UTF-8)",
    "401": "Unauthorized: no API key, or an unknown one",
    "403": "Forbidden: not the admin key, or admin routes are off",
    "404": "Not found (or another tenant's)",
    "422": "Invalid request",
}
_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def _needs(path: str, operation: dict[str, Any]) -> set[str]:
    """Error statuses this operation can answer whatever its route declares."""
    statuses: set[str] = set()
    if path.startswith(("/v1/", "/v0/")):
        statuses.add("401")
    if path.startswith("/v1/admin"):
        statuses.add("403")
    parameters = operation.get("parameters") or []
    if any(p.get("in") == "path" for p in parameters):
        statuses.add("404")
    if "requestBody" in operation:
        statuses |= {"400", "422"}
    if parameters:
        statuses.add("422")
    return statuses


#: An operation whose error bodies are its own (documented in its ``responses``) besides
#: the Problem the outer layers may answer: the OTLP receivers (``engine.api.routes.traces``).
OWN_ERRORS = "x-own-error-bodies"


def problem_responses(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every error response a Problem, and the missing statuses added."""
    components = document.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = PROBLEM_SCHEMA
    reference = {"$ref": "#/components/schemas/Problem"}
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            responses: dict[str, Any] = operation.setdefault("responses", {})
            for status in _needs(path, operation):
                responses.setdefault(status, {"description": _DESCRIPTIONS[status]})
            for status, response in responses.items():
                if not (status.isdigit() and int(status) >= 400):
                    continue
                example = None
                for media in (response.get("content") or {}).values():
                    example = media.get("example", example)
                content: dict[str, Any] = {"schema": reference}
                if example is not None:
                    content["example"] = example
                # OTLP routes answer a google.rpc.Status in the request's encoding, as
                # OTLP/HTTP says; the layers before them (401, 413) answer a Problem
                declared = (response.get("content") or {}) if operation.get(OWN_ERRORS) else {}
                own = {media: v for media, v in declared.items() if media != PROBLEM_JSON}
                response["content"] = {PROBLEM_JSON: content, **own}
                if status == "422":
                    response["description"] = _DESCRIPTIONS["422"]
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    return document


def operation_id(route: APIRoute) -> str:
    """An operation's id: the handler's name (``okareo_`` before the /v0 ones), not FastAPI's
    generated ``upload_check_v1_checks_upload_post``."""
    return ("okareo_" if route.path.startswith("/v0") else "") + route.name


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def form_names(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with FastAPI's generated form schemas (``Body_upload_check``) renamed
    after their operation (``UploadCheckForm``), every reference updated."""
    schemas = document.get("components", {}).get("schemas", {})
    renames = {
        name: _pascal(name.removeprefix("Body_")) + "Form"
        for name in schemas
        if name.startswith("Body_")
    }
    for old, new in renames.items():
        if new in schemas:
            raise RuntimeError(f"OpenAPI: cannot rename {old} to {new}, which exists")
        schema = schemas.pop(old)
        schema["title"] = new
        schemas[new] = schema
    prefix = "#/components/schemas/"

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.removeprefix(prefix) in renames:
                node["$ref"] = prefix + renames[ref.removeprefix(prefix)]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    return document


def install(app: FastAPI) -> None:
    """Serve the adjusted document at ``/openapi.json`` (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                tags=app.openapi_tags,
            )
            app.openapi_schema = form_names(problem_responses(document))
        return app.openapi_schema

    setter: Callable[[], dict[str, Any]] = openapi
    app.openapi = setter  # type: ignore[method-assign]
