"""Reading the fields the providers' requests share: message text, numbers, the model's
name, a JSON-schema ``response_format``. Each refuses a wrong value with
:class:`~engine.gateway.providers.request.GatewayRequestError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.gateway.providers.request import GatewayRequestError


def text_of(content: Any, where: str) -> str:
    """A message's text: a string, or a list of text parts (``{"type": "text", "text"}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                raise GatewayRequestError(f"{where}: only text parts are supported")
        return "".join(pieces)
    raise GatewayRequestError(f"{where}: the content must be text")


def number(document: Mapping[str, Any], *names: str) -> float | None:
    """The first of ``names`` present, as a float (None: none is)."""
    for name in names:
        value = document.get(name)
        if value is None:
            continue
        if type(value) not in (int, float):
            raise GatewayRequestError(f"{name} must be a number")
        return float(value)
    return None


def integer(document: Mapping[str, Any], *names: str) -> int | None:
    """The first of ``names`` present, as a positive integer (None: none is)."""
    for name in names:
        value = document.get(name)
        if value is None:
            continue
        if type(value) is not int or value < 1:
            raise GatewayRequestError(f"{name} must be a positive integer")
        return int(value)
    return None


def model_of(document: Mapping[str, Any]) -> str | None:
    """The model the client asked for, if it named one."""
    model = document.get("model")
    if model is None:
        return None
    if not isinstance(model, str) or not model or len(model) > 128:
        raise GatewayRequestError("model must be a non-empty string")
    return model


def json_schema_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for JSON that fits ``schema``."""
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": dict(schema)}}
