"""Rows from a caller's data: request JSON, Python dicts, :class:`Row` values or columns.

The kernel's one way to turn what a caller sends into :class:`~engine.models.Row`
values: ``POST /v1/runs`` and ``/v1/score`` (through the run service), the CLI's data
files and the Python API all parse rows here, and a bad row is an
:class:`~engine.errors.InvalidRequestError` worded by :mod:`engine.row_errors`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from engine.errors import InvalidRequestError
from engine.models import Row, unchecked
from engine.row_errors import request_row, shape_problem, value_problem


def as_rows(rows: Iterable[Row | Mapping[str, Any]]) -> list[Row]:
    """Rows from dicts or :class:`Row` values; a bad row raises InvalidRequestError naming it."""
    return [as_row(index, row) for index, row in enumerate(rows)]


def row_chunks(
    rows: Iterable[Row | Mapping[str, Any]] | Mapping[str, Sequence[Any]], size: int
) -> Iterator[list[Row]]:
    """``rows`` as lists of at most ``size`` :class:`Row` values, made a chunk at a time.

    ``rows`` is an iterable of rows (dicts or Row values), or columns: a mapping of field
    name to a sequence (list, numpy array, pandas Series) with one entry per row, which
    must hold ``model_output``. A bad row raises InvalidRequestError naming its index.
    """
    if isinstance(rows, Mapping) and not isinstance(rows.get("model_output"), str):
        yield from _column_chunks(rows, size)
        return
    chunk: list[Row] = []
    for index, row in enumerate(rows):
        chunk.append(as_row(index, row))  # type: ignore[arg-type]  # the mapping case is above
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


def _column_chunks(columns: Mapping[str, Sequence[Any]], size: int) -> Iterator[list[Row]]:
    """Columns as Row chunks: each column checked in one pydantic call per chunk, each Row
    then made without validating it again (a Row a row costs more than scoring it)."""
    fields = Row.__pydantic_fields__
    unknown = sorted(str(name) for name in columns if name not in fields)
    if unknown:
        raise InvalidRequestError(
            f"unknown row field(s) {', '.join(unknown)}; a row may have {', '.join(fields)}"
        )
    if "model_output" not in columns:
        raise InvalidRequestError("columns need a model_output column, one entry per row")
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidRequestError(f"the columns differ in length: {lengths}")
    total = lengths["model_output"]
    names = list(columns)
    absent = {name: info.get_default() for name, info in fields.items() if name not in columns}
    absent.pop("metadata", None)  # a dict of its own for each row, below
    given = frozenset(names)
    for start in range(0, total, size):
        stop = min(total, start + size)
        checked = [_checked(name, columns[name][start:stop], start) for name in names]
        chunk = []
        for values in zip(*checked, strict=True):
            row = dict(zip(names, values, strict=True))
            row.update(absent)
            row.setdefault("metadata", {})
            chunk.append(unchecked(Row, row, set(given)))  # each column checked above
        yield chunk


@functools.cache
def _column_adapter(name: str) -> TypeAdapter[list[Any]]:
    """Validates a whole column of Row field ``name`` at once, with the field's own rules."""
    info = Row.__pydantic_fields__[name]
    item: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return TypeAdapter(list[item])


def _checked(name: str, values: Any, start: int) -> list[Any]:
    try:
        return _column_adapter(name).validate_python(_as_list(values))
    except ValidationError as exc:
        error = exc.errors()[0]
        at = error["loc"][0] if error["loc"] and isinstance(error["loc"][0], int) else 0
        message = str(error["msg"]).removeprefix("Value error, ")
        raise InvalidRequestError(f"{request_row(start + at)}: {name}: {message}") from exc


def _as_list(values: Any) -> list[Any]:
    """A column slice as Python values (numpy and pandas give theirs with ``tolist``)."""
    tolist = getattr(values, "tolist", None)
    return list(tolist()) if callable(tolist) else list(values)
