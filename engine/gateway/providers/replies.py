"""What the check gets of the model's reply when it asked for a shape: an enum's bare value,
or JSON checked against its schema (with ``jsonschema``, by the schema's own ``$schema``,
else Draft 2020-12). A reply that does not fit is an error naming where, never a silent
wrong value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from engine.errors import ScoreboxError
from engine.gateway.providers.request import Expectation


class ReplyMismatch(ScoreboxError):
    """The model's reply does not fit the schema the check asked for."""


def short(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def conform(expect: Expectation | None, text: str) -> str:
    """The text the check gets: for an enum, the bare value; for JSON, the checked JSON.

    Raises :class:`ReplyMismatch` when the reply fits no allowed value or is not the JSON asked
    for (the check then gets an error, never a silent wrong value).
    """
    if expect is None:
        return text
    stripped = text.strip()
    if expect.values is not None:
        return _enum_value(expect.values, stripped)
    try:
        parsed = json.loads(stripped)
    except ValueError as exc:
        raise ReplyMismatch(
            f"the model's reply is not the JSON asked for: {short(stripped)!r}"
        ) from exc
    if expect.schema:
        problem = schema_problem(expect.schema, parsed, "$")
        if problem:
            raise ReplyMismatch(f"the model's reply does not fit the schema: {problem}")
    return json.dumps(parsed, ensure_ascii=False)


def _enum_value(values: tuple[str, ...], stripped: str) -> str:
    """The allowed value in the reply: bare, quoted, or ``{"value": ...}`` as asked."""
    candidate: Any = stripped
    try:
        parsed = json.loads(stripped)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "value" in parsed:
        candidate = parsed["value"]
    elif isinstance(parsed, str | int | float) and not isinstance(parsed, bool):
        candidate = parsed
    value = str(candidate).strip().strip('"')
    if value in values:
        return value
    raise ReplyMismatch(
        f"the model answered {short(stripped)!r}, which is none of the allowed values "
        f"{list(values)}"
    )


def schema_error(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` is not a valid JSON schema (of its ``$schema``'s draft), or None."""
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(dict(schema))
    except SchemaError as exc:
        return f"{exc.message} (at {exc.json_path})"
    return None


def schema_problem(schema: Mapping[str, Any], value: Any, where: str = "$") -> str | None:
    """The way ``value`` breaks ``schema`` that matters most, naming where (``$.score``,
    ``$[0]``), or None when it fits."""
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    try:
        error = best_match(validator.iter_errors(value))
    except Unresolvable as exc:
        return f"{where}: the schema refers to what it does not hold ({exc})"
    return None if error is None else _described(error, where + error.json_path[1:])


def _described(error: ValidationError, where: str) -> str:
    """One error in the words the check's author reads: what the value is, what it lacks."""
    expected: Any = error.validator_value
    if error.validator == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        return f"{where} is {type(error.instance).__name__}, not {'/'.join(map(str, names))}"
    if error.validator == "enum":
        return f"{where} is {error.instance!r}, none of {expected}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in expected if name not in error.instance]
        if missing:
            return f"{where} lacks {missing[0]!r}"
    return f"{where}: {error.message}"
