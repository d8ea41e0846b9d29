"""The one place domain errors become HTTP: status codes and ``application/problem+json``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import (
    AuthError,
    CheckValidationError,
    ConfigurationError,
    ConflictError,
    DockerUnavailableError,
    ForbiddenError,
    InvalidRequestError,
    LLMError,
    NotFoundError,
    QuotaExceededError,
    SandboxError,
    ScoreboxError,
    StorageError,
)
from engine.row_errors import expected, request_row, row_problem
from engine.validation import ValidationReport

log = logging.getLogger("scorebox.api")

PROBLEM_JSON = "application/problem+json"

#: Most specific first.
STATUS_BY_ERROR: tuple[tuple[type[ScoreboxError], int, str], ...] = (
    (CheckValidationError, 422, "Check is not valid"),
    (InvalidRequestError, 422, "Invalid request"),
    (AuthError, 401, "Unauthorized"),
    (ForbiddenError, 403, "Forbidden"),
    (NotFoundError, 404, "Not found"),
    (ConflictError, 409, "Conflict"),
    (QuotaExceededError, 429, "Quota exceeded"),
    (SandboxError, 503, "Sandbox unavailable"),
    (StorageError, 503, "Database unavailable"),
    (LLMError, 502, "LLM endpoint failed"),
    (ConfigurationError, 503, "Not configured"),
    (ScoreboxError, 500, "Internal error"),
)


def status_for(exc: ScoreboxError) -> tuple[int, str]:
    for cls, status, title in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return status, title
    return 500, "Internal error"  # pragma: no cover - ScoreboxError is last


def problem(
    status: int,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def validation_errors(report: ValidationReport) -> list[dict[str, Any]]:
    """``errors[{code, message, line, col}]`` from a validation report's error issues."""
    out = []
    for issue in report.errors:
        out.append(
            {
                "code": issue.code,
                "message": issue.message,
                "line": issue.line,
                "col": issue.col,
            }
        )
    return out


async def _scorebox_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ScoreboxError)
    status, title = status_for(exc)
    headers: dict[str, str] = {}
    extra: dict[str, Any] = {}
    if isinstance(exc, AuthError):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, QuotaExceededError | StorageError):
        headers["Retry-After"] = str(max(1, int(exc.retry_after_seconds)))
    elif isinstance(exc, DockerUnavailableError):
        headers["Retry-After"] = "5"  # the engine restarting: the request may pass soon
    if isinstance(exc, CheckValidationError):
        extra["errors"] = validation_errors(exc.report)
    if status >= 500:
        log.error("%s %s: %s", request.method, request.url.path, exc)
    return problem(status, title, str(exc), headers, **extra)


def _row_message(body: Any, index: int, fallback: str) -> str:
    """A bad row of a request's ``rows``, worded as the CLI words a data file's row."""
    rows = body.get("rows") if isinstance(body, dict) else None
    raw = rows[index] if isinstance(rows, list) and index < len(rows) else None
    found = row_problem(raw) if raw is not None else None
    return f"{request_row(index)}: {found or fallback}"


async def _request_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors: list[dict[str, Any]] = []
    rows_told: set[int] = set()
    for e in exc.errors():
        loc = tuple(e.get("loc", ()))
        message = str(e.get("msg", "")).removeprefix("Value error, ")
        if loc[:2] == ("body", "rows") and len(loc) > 2 and isinstance(loc[2], int):
            if loc[2] in rows_told:  # one message a row, naming all that is wrong with it
                continue
            rows_told.add(loc[2])
            where = ".".join(str(p) for p in loc[3:])
            text = _row_message(exc.body, loc[2], f"{where}: {message}" if where else message)
        elif loc == ("body", "rows") and e.get("type") == "list_type":  # the CLI's words too
            text = f"rows: expected a JSON list of row objects; {expected()}"
        else:
            text = f"{'.'.join(str(p) for p in loc)}: {message}"
        errors.append(
            {"code": str(e.get("type", "invalid")), "message": text, "line": None, "col": None}
        )
    detail = "; ".join(str(e["message"]) for e in errors[:5]) or "the request is not valid"
    return problem(422, "Invalid request", detail, errors=errors)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if isinstance(exc.__cause__, RecursionError):  # FastAPI's body parser hit the stack's end
        return problem(
            422, "Invalid request", "body: nested too deep to read; flatten it (64 levels at most)"
        )
    headers = dict(exc.headers or {})
    return problem(exc.status_code, "Error", str(exc.detail), headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path)
    return problem(500, "Internal error", f"internal error: {exc.__class__.__name__}")


def install(app: FastAPI) -> None:
    """Register every exception handler on ``app``."""
    app.add_exception_handler(ScoreboxError, _scorebox_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


#: OpenAPI ``responses=`` entries for the errors routes commonly raise.
def responses(
    *statuses: int, ok: dict[int | str, dict[str, Any]] | None = None
) -> dict[int | str, dict[str, Any]]:
    titles = {status: title for _, status, title in STATUS_BY_ERROR}
    titles.setdefault(422, "Invalid request")
    out: dict[int | str, dict[str, Any]] = dict(ok or {})
    out |= {
        status: {
            "description": titles.get(status, "Error"),
            "content": {
                PROBLEM_JSON: {
                    "example": {
                        "type": "about:blank",
                        "title": titles.get(status, "Error"),
                        "status": status,
                        "detail": "what went wrong and how to fix it",
                    }
                }
            },
        }
        for status in statuses
    }
    return out
