"""Rows from a caller's data: request JSON, Python dicts or :class:`Row` values.

The kernel's one way to turn what a caller sends into :class:`~engine.models.Row`
values: ``POST /v1/runs`` and ``/v1/score`` (through the run service), the CLI's data
files and the Python API all parse rows here, and a bad row is an
:class:`~engine.errors.InvalidRequestError` worded by :mod:`engine.row_errors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from engine.errors import InvalidRequestError
from engine.models import Row
from engine.row_errors import request_row, shape_problem, value_problem


def as_rows(rows: Iterable[Row | Mapping[str, Any]]) -> list[Row]:
    """Rows from dicts or :class:`Row` values; a bad row raises InvalidRequestError naming it."""
    return [as_row(index, row) for index, row in enumerate(rows)]


def row_chunks(rows: Iterable[Row | Mapping[str, Any]], size: int) -> Iterator[list[Row]]:
    """``rows`` as lists of at most ``size`` :class:`Row` values, made a chunk at a time.

    A bad row raises InvalidRequestError naming its index. (Rows given as columns stay
    columns: ``engine.sandbox.columns``.)
    """
    chunk: list[Row] = []
    for index, row in enumerate(rows):
        chunk.append(as_row(index, row))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def as_row(index: int, row: Row | Mapping[str, Any]) -> Row:
    """A :class:`Row` from a dict or a Row; a bad row raises InvalidRequestError naming it."""
    if isinstance(row, Row):
        return row
    try:
        return Row.model_validate(row)
    except ValidationError as exc:
        problem = shape_problem(row) or value_problem(exc)
        raise InvalidRequestError(f"{request_row(index)}: {problem}") from exc


#: Rows dumped by one serializer call: a list's call, not one per row, yet a run's rows
#: are not all held again as dicts at once.
DUMPED_PER_CALL = 1000
_ROW_LIST = TypeAdapter(list[Row])


def stored_rows(rows: Sequence[Row], per_call: int = DUMPED_PER_CALL) -> Iterator[dict[str, Any]]:
    """What a run stores of its rows: each one's ``model_dump(mode="json")`` (what
    :meth:`Row.stored` reads back), dumped ``per_call`` rows a serializer call."""
    for start in range(0, len(rows), per_call):
        yield from _ROW_LIST.dump_python(list(rows[start : start + per_call]), mode="json")
