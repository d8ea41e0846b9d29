"""A request's rows checked by one pass of plain checks, into the form a run stores them.

A run submitted through the service reads its input rows back as whole
``Row.model_dump(mode="json")`` dumps (every field, defaults filled in) and makes them
Rows again with :meth:`~engine.models.Row.stored`. Making a :class:`~engine.models.Row` per row
of a big ``POST /v1/runs``, and dumping it again, was most of the server's work on the
request; yet almost every row is a JSON object whose values already are what the model
would keep. :func:`stored_rows_of` sees that with a few type checks a field, and the rows
are stored as they were sent (their own fields only: a fifth of a whole dump's bytes to
write and to read), in blocks marked so that they are read back whole
(:data:`engine.storage.run_blocks.SENT_MARK`): the model's dumps.

It answers only when it is sure: a row it cannot vouch for (a wrong type, an unknown
field, a float that is not finite, a free-form value too deep or holding a lone
surrogate, a tuple from a Python caller) makes it answer None, and the caller validates
the rows with the model as before, which words the error (:mod:`engine.row_errors`) or
makes the Rows. A property test holds the two ways to equal answers
(``tests/unit/test_row_dumps.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.json_limits import MAX_JSON_DEPTH, has_lone_surrogate
from engine.models import Row

__all__ = ["StoredRows", "stored_rows_of"]


@dataclass(frozen=True)
class StoredRows:
    """Rows already checked, each in the form a run stores it (the row as it was sent, its
    own fields only; read back whole, it is what ``model_dump(mode="json")`` of its Row
    makes): handed to the run service and stored as they are."""

    rows: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)


#: The fields a row may give (Row's).
_FIELDS = frozenset(Row.__pydantic_fields__)
#: Fields by what their value may be: free-form JSON (FreeJSON), an object of free-form
#: values, an optional such object, an optional list of them, an optional string.
_FREE = frozenset({"scenario_input", "scenario_result", "ground_truth", "output"})
_OBJECTS = frozenset({"item", "sample", "vars"})
_STRINGS = frozenset({"model_input"})


def stored_rows_of(rows: Any) -> StoredRows | None:
    """``rows`` (a list of JSON objects) as a run stores them, or None when any row needs
    the model's own validation (to word its error, or to convert a value)."""
    if type(rows) is not list or not rows:
        return None
    for row in rows:
        if type(row) is not dict or type(row.get("model_output")) is not str:
            return None
        if len(row) > 1 and (not _FIELDS.issuperset(row) or not _fields_ok(row)):
            return None
    return StoredRows(rows)


def _fields_ok(row: dict[str, Any]) -> bool:
    """Whether every field but ``model_output`` is one its type keeps as it is."""
    for name, value in row.items():
        if name == "model_output":
            continue
        if name in _FREE:
            if not _free_ok(value):
                return False
        elif name == "id":
            if value is not None and type(value) is not str and type(value) is not int:
                return False
        elif name in _STRINGS:
            if value is not None and type(value) is not str:
                return False
        elif name == "metadata":
            if not _object_ok(value):
                return False
        elif name in _OBJECTS:
            if value is not None and not _object_ok(value):
                return False
        elif name == "messages":
            if value is not None and (
                type(value) is not list or not all(_object_ok(item) for item in value)
            ):
                return False
        else:  # pragma: no cover - every Row field is named above
            return False
    return True


def _object_ok(value: Any) -> bool:
    """A ``dict[str, FreeJSON]``: an object whose every value is a free-form value."""
    return type(value) is dict and all(
        type(key) is str and _text_ok(key) and _free_ok(item) for key, item in value.items()
    )


def _text_ok(text: str) -> bool:
    """No lone UTF-16 surrogate (what :func:`engine.json_limits.json_problem` refuses)."""
    return not has_lone_surrogate(text)


def _free_ok(value: Any) -> bool:
    """A FreeJSON value its model keeps as it is and dumps unchanged: JSON types only,
    finite floats, no lone surrogate, nested less than :data:`MAX_JSON_DEPTH` deep."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if not _text_ok(item):
                return False
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif item is None or kind is bool or kind is int:
            continue
        elif kind is dict or kind is list:
            if depth >= MAX_JSON_DEPTH:
                return False
            if kind is dict:
                for key, child in item.items():
                    if type(key) is not str or not _text_ok(key):
                        return False
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            return False
    return True
