"""A rule's filter: which spans it scores. Pure: no database, no clock.

A filter is a JSON object; each key names a span field and all keys must match (AND)::

    {"service.name": "support-bot", "gen_ai.request.model": {"in": ["gpt-4o", "gpt-4o-mini"]}}

A key is looked up, first found wins, in: the span's own fields (``name`` or
``span.name``, ``service.name``, ``model``, ``status``, ``kind``), the span's attributes
(any key, for example ``gen_ai.request.model``), then the row's metadata (any key of
``row.metadata``, for example ``environment`` or ``session_id``).

A value is either a JSON scalar (equality) or an object of operators, all of which must
hold: ``eq``, ``ne``, ``in`` (a list), ``exists`` (true or false) and ``regex`` (Python
``re.search`` on the value as text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_KEYS",
    "OPERATORS",
    "FilterError",
    "SpanFields",
    "check_filter",
    "matches",
]

OPERATORS = ("eq", "ne", "in", "exists", "regex")
MAX_KEYS = 50
MAX_REGEX_CHARS = 500
MAX_IN_VALUES = 1_000
_MISSING = object()


class FilterError(ValueError):
    """A filter that cannot be used; the message names the key and the fix."""


@dataclass(frozen=True)
class SpanFields:
    """What a filter sees of a span: the same for a span arriving and a span stored."""

    name: str
    service: str | None
    model: str | None
    status: str
    kind: int
    attributes: Mapping[str, Any]
    metadata: Mapping[str, Any]

    def get(self, key: str) -> Any:
        """The value of ``key`` (span field, then attribute, then metadata), or missing."""
        if key in ("name", "span.name"):
            return self.name
        if key in ("service.name", "service"):
            return _MISSING if self.service is None else self.service
        if key == "model":
            return _MISSING if self.model is None else self.model
        if key == "status":
            return self.status
        if key == "kind":
            return self.kind
        if key in self.attributes:
            return self.attributes[key]
        if key in self.metadata:
            return self.metadata[key]
        return _MISSING


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def check_filter(document: Any) -> dict[str, Any]:
    """``document`` as a filter, or :class:`FilterError` naming what is wrong."""
    if not isinstance(document, dict):
        raise FilterError(
            'filter: a JSON object of field names, for example {"service.name": "support-bot"}'
        )
    if len(document) > MAX_KEYS:
        raise FilterError(f"filter: at most {MAX_KEYS} keys")
    for key, condition in document.items():
        if not isinstance(key, str) or not key or len(key) > 500:
            raise FilterError("filter: each key is a field name of 1 to 500 characters")
        if _scalar(condition):
            continue
        if not isinstance(condition, dict) or not condition:
            raise FilterError(
                f"filter[{key!r}]: a value to equal, or an object of operators "
                f"({', '.join(OPERATORS)})"
            )
        for op, operand in condition.items():
            _check_operator(key, op, operand)
    return dict(document)


def _check_operator(key: str, op: Any, operand: Any) -> None:
    where = f"filter[{key!r}].{op}"
    if op not in OPERATORS:
        raise FilterError(f"filter[{key!r}]: unknown operator {op!r}; use one of {OPERATORS}")
    if op in ("eq", "ne") and not _scalar(operand):
        raise FilterError(f"{where}: a string, number, boolean or null")
    if op == "in" and (
        not isinstance(operand, list)
        or len(operand) > MAX_IN_VALUES
        or not all(_scalar(v) for v in operand)
    ):
        raise FilterError(f"{where}: a list of at most {MAX_IN_VALUES} scalar values")
    if op == "exists" and not isinstance(operand, bool):
        raise FilterError(f"{where}: true or false")
    if op == "regex":
        if not isinstance(operand, str) or len(operand) > MAX_REGEX_CHARS:
            raise FilterError(f"{where}: a regular expression of at most {MAX_REGEX_CHARS} chars")
        try:
            re.compile(operand)
        except re.error as exc:
            raise FilterError(f"{where}: not a regular expression: {exc}") from exc


def _equal(value: Any, wanted: Any) -> bool:
    if value is _MISSING:
        return False
    # booleans are not numbers here: true does not equal 1
    if isinstance(value, bool) or isinstance(wanted, bool):
        return isinstance(value, bool) and isinstance(wanted, bool) and value == wanted
    return bool(value == wanted)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is None:
        if len(_REGEX_CACHE) > 1_000:
            _REGEX_CACHE.clear()
        compiled = _REGEX_CACHE[pattern] = re.compile(pattern)
    return compiled


def _holds(value: Any, op: str, operand: Any) -> bool:
    if op == "eq":
        return _equal(value, operand)
    if op == "ne":
        return not _equal(value, operand)
    if op == "in":
        return any(_equal(value, v) for v in operand)
    if op == "exists":
        return (value is not _MISSING and value is not None) is operand
    # regex
    if value is _MISSING or value is None:
        return False
    text = value if isinstance(value, str) else str(value)
    return _regex(operand).search(text) is not None


def matches(fields: SpanFields, document: Mapping[str, Any]) -> bool:
    """Whether the span ``fields`` passes the (checked) filter ``document``."""
    for key, condition in document.items():
        value = fields.get(key)
        if isinstance(condition, dict):
            if not all(_holds(value, op, operand) for op, operand in condition.items()):
                return False
        elif not _equal(value, condition):
            return False
    return True
