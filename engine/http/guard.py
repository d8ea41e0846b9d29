"""Refuse what no route can use: lone surrogates in JSON bodies, unknown query parameters.

``"\\ud800"`` is valid JSON, but no UTF-8 encoder, database or sandbox accepts the
string it decodes to. Rows' free-form values are checked by their models
(:data:`engine.json_limits.FreeJSON`); this middleware covers every other string
of every JSON body (sources, names, templates, labels). It parses a body only
when its raw bytes hold a ``\\uD800``-``\\uDFFF`` escape, so ordinary requests pay
one byte scan.

:func:`reject_unknown_query` (an app-wide dependency) answers 422 for a query
parameter the operation does not take, so ``?all_version=true`` or ``?limt=5``
names the typo instead of being silently ignored.
"""

from __future__ import annotations

import collections.abc
import json
import re
import typing
from typing import Any

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import InvalidRequestError
from engine.http.problems import PROBLEM_JSON
from engine.json_limits import json_problem
from engine.nul import nul_problem

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\\u0000")


def body_problem(body: bytes) -> str | None:
    """The lone surrogate or NUL in a JSON body, as a message naming its field; None if none.

    PostgreSQL's text cannot hold ``\\u0000``: a NUL is refused here, with its field.
    """
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the route's own parser reports what is wrong with it
    return json_problem(value, "body", max_depth=None) or nul_problem(value, "body")


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind: bytes = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or kind.endswith(b"+json")
    return False


class SurrogateGuard:
    """ASGI middleware: a 422 problem for a JSON body with a lone surrogate."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunks.append(message.get("body", b""))
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        problem = body_problem(body)
        if problem is not None:
            await _send_problem(send, problem)
            return
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
        await self.app(scope, _replay(replay, receive), send)


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    async def receive() -> Message:
        if messages:
            return messages.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive


def _code(detail: str) -> str:
    return "nul_character" if "NUL character" in detail else "lone_surrogate"


async def _send_problem(send: Send, detail: str) -> None:
    document: dict[str, Any] = {
        "type": "about:blank",
        "title": "Invalid request",
        "status": 422,
        "detail": detail,
        "errors": [{"code": _code(detail), "message": detail, "line": None, "col": None}],
    }
    payload = json.dumps(document).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 422,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


_KNOWN_QUERY: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
_SEQUENCES = {list, tuple, set, frozenset, collections.abc.Sequence}


def _repeatable(annotation: Any) -> bool:
    """Whether a query parameter's type takes several values (``list[str] | None``)."""
    if typing.get_origin(annotation) in _SEQUENCES or annotation in _SEQUENCES:
        return True
    return any(_repeatable(arg) for arg in typing.get_args(annotation))


def _declared_query(dependant: Dependant) -> tuple[set[str], set[str]]:
    names = {p.alias for p in dependant.query_params}
    many = {p.alias for p in dependant.query_params if _repeatable(p.field_info.annotation)}
    for sub in dependant.dependencies:
        sub_names, sub_many = _declared_query(sub)
        names |= sub_names
        many |= sub_many
    return names, many


def _query_names(route: APIRoute) -> tuple[frozenset[str], frozenset[str]]:
    found = _KNOWN_QUERY.get(id(route))
    if found is None:
        names, many = _declared_query(route.dependant)
        found = _KNOWN_QUERY[id(route)] = (frozenset(names), frozenset(many))
    return found


async def reject_unknown_query(request: Request) -> None:
    """App-wide dependency: a 422 naming any query parameter the operation does not take,
    or one given several times that takes one value (the last would win, unseen)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known, many = _query_names(route)
    unknown = sorted(set(request.query_params.keys()) - known)
    if unknown:
        takes = ", ".join(sorted(known)) if known else "none"
        shown = ", ".join(repr(name[:40]) for name in unknown[:5])
        raise InvalidRequestError(
            f"unknown query parameter {shown}: {request.method} {route.path} takes {takes}"
        )
    for name in known - many:
        given = len(request.query_params.getlist(name))
        if given > 1:
            raise InvalidRequestError(
                f"query parameter {name!r} given {given} times: it takes one value"
            )
