"""Rows given as columns, kept as columns on the way into a job (``score_table``'s input).

A caller of ``engine.score_table`` may pass its rows as columns: a mapping of field name to
one sequence per field. :func:`column_chunks` checks each column a chunk at a time with the
field's own rules (one pydantic call per column and chunk) and yields :class:`RowColumns`:
a job's rows that stay columns. A job carries its rows as columns whatever the caller gave
(engine/sandbox/protocol.py): these are written as they are, one encoding call a column
(:meth:`RowColumns.dump_columns`; Row values through :func:`dump_row_columns`); the skip
rule reads them a column at a time (:meth:`RowColumns.lacking`), and a :class:`Row` is
made only where one row is asked for (a row's own record, a failed row).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, TypeGuard, overload

import numpy as np
import numpy.typing as npt
from pydantic import TypeAdapter, ValidationError
from pydantic_core import core_schema, to_json

from engine.errors import InvalidRequestError
from engine.models import IndexedRow, Row, unchecked
from engine.row_errors import request_row

_FIELDS = Row.__pydantic_fields__
#: The fields a job's row carries, in the order a Row's JSON has them (the id stays home).
_JOB_FIELDS = tuple(name for name in _FIELDS if name != "id")
#: A Row's job fields' values, as a tuple, from its ``__dict__``.
_JOB_VALUES = operator.itemgetter(*_JOB_FIELDS)


def _default(name: str) -> Any:
    return _FIELDS[name].get_default(call_default_factory=True)


class RowColumns(Sequence[Row]):
    """Rows ``start:stop`` of checked columns (field name -> one value per row).

    Fields absent from ``columns`` have their default in every row. Slicing gives another
    view of the same columns; indexing makes that one row's :class:`Row`.
    """

    __slots__ = ("_columns", "_start", "_stop")

    def __init__(self, columns: Mapping[str, list[Any]], start: int = 0, stop: int | None = None):
        self._columns = columns
        self._start = start
        size = len(next(iter(columns.values()))) if columns else 0
        self._stop = size if stop is None else stop

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        """In a pydantic model (the job's ``rows``) it is taken as it is, never iterated."""
        return core_schema.is_instance_schema(cls)

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> RowColumns: ...
    def __getitem__(self, index: int | slice) -> Row | RowColumns:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("RowColumns slices take no step")
            stop = max(start, stop)
            return RowColumns(self._columns, self._start + start, self._start + stop)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        at = self._start + index
        values = {name: _default(name) for name in _FIELDS}
        values.update((name, column[at]) for name, column in self._columns.items())
        return unchecked(Row, values, set(self._columns))

    def column(self, name: str) -> list[Any]:
        """Field ``name`` of these rows (its default in each, when the column is absent)."""
        given = self._columns.get(name)
        if given is None:
            return [_default(name) for _ in range(len(self))]
        return given[self._start : self._stop]

    def lacking(self, names: set[str]) -> npt.NDArray[np.bool_]:
        """For each row: whether one of ``names`` is None in it (the skip rule's inputs)."""
        lacks = np.zeros(len(self), dtype=bool)
        for name in names:
            given = self._columns.get(name)
            if given is None:
                if _default(name) is None:
                    lacks[:] = True
                continue
            values = given[self._start : self._stop]
            if None in values:  # a scan in C; the mask below only for a column with a gap
                lacks |= np.fromiter((v is None for v in values), dtype=bool, count=len(values))
        return lacks

    def dump_columns(self) -> bytes:
        """The rows as the job's columns: a JSON object of one list per column given, each
        encoded in one call (no dict, no Row per row; a field no column gave is left out,
        and the harness gives it its default)."""
        parts = [
            b'"' + name.encode() + b'":' + to_json(self.column(name), inf_nan_mode="null")
            for name in _JOB_FIELDS
            if name in self._columns
        ]
        return b"{" + b",".join(parts) + b"}"


#: Every field's value, as a tuple, from a whole dump of a Row.
_ALL_VALUES = operator.itemgetter(*_FIELDS)


def stored_columns(rows: Sequence[Mapping[str, Any]]) -> RowColumns | None:
    """Rows as a run's chunk loads them (whole JSON dumps of Rows the service checked before
    storing them) as columns, with no Row made a row; None when one of them is not a whole
    dump (an unknown key, a field missing), whose Row must be made the usual way. A column
    of only its default is left out (the harness assumes it), as :func:`dump_row_columns`
    leaves it out."""
    size = len(_FIELDS)
    if not rows or any(len(row) != size for row in rows):
        return None
    try:  # as many keys as a Row has fields: an unknown one means a field is missing
        taken = zip(*map(_ALL_VALUES, rows), strict=True)
    except KeyError:
        return None
    columns = {
        name: list(values)
        for name, values in zip(_FIELDS, taken, strict=True)
        if _says_something(name, values)
    }
    return RowColumns(columns)  # model_output is a str in every checked row: never left out


def loaded_columns(columns: Mapping[str, list[Any]]) -> RowColumns:
    """A run's rows as its store loads them as columns (the fields some row gives; rows
    the service checked before storing them), a column of only its default left out."""
    return RowColumns(
        {name: values for name, values in columns.items() if _says_something(name, values)}
    )


def dump_row_columns(rows: Sequence[Row]) -> bytes:
    """Row values as the job's columns (what :meth:`RowColumns.dump_columns` gives for the
    same rows): one list per field some row holds, in one encoding call."""
    # A Row holds every field in its __dict__: one itemgetter call a row takes its values,
    # zip turns them into columns, all in C (half the time of a getattr a field and row).
    taken = zip(*map(_JOB_VALUES, [row.__dict__ for row in rows]), strict=True)
    columns = {
        name: values
        for name, values in zip(_JOB_FIELDS, taken, strict=False)
        if _says_something(name, values)
    }
    return to_json(columns, inf_nan_mode="null")


def _says_something(name: str, values: Sequence[Any]) -> bool:
    """Whether column ``name`` holds a value other than its default (metadata's is an
    empty dict, the others' None): a column of only defaults says nothing the harness
    does not assume, and is left out of a job."""
    return any(values) if name == "metadata" else values.count(None) != len(values)


class IndexedColumns(Sequence[IndexedRow]):
    """``rows`` with their indices among the caller's rows (``first`` for ``rows[0]``)."""

    __slots__ = ("first", "rows")

    def __init__(self, rows: RowColumns, first: int) -> None:
        self.rows = rows
        self.first = first

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> IndexedRow: ...
    @overload
    def __getitem__(self, index: slice) -> IndexedColumns: ...
    def __getitem__(self, index: int | slice) -> IndexedRow | IndexedColumns:
        if isinstance(index, slice):
            start = index.indices(len(self))[0]
            return IndexedColumns(self.rows[index], self.first + start)
        if index < 0:
            index += len(self)
        return self.first + index, self.rows[index]


def is_columns(rows: object) -> TypeGuard[Mapping[str, Sequence[Any]]]:
    """Whether ``rows`` is columns (a mapping of field to values), not one row's mapping."""
    return isinstance(rows, Mapping) and not isinstance(rows.get("model_output"), str)


def column_chunks(columns: Mapping[str, Sequence[Any]], size: int) -> Iterator[RowColumns]:
    """``columns`` as chunks of at most ``size`` rows, each column checked a chunk at a time.

    A column is a list, numpy array or pandas Series with one entry per row;
    ``model_output`` is required. A bad value raises InvalidRequestError naming its row.
    """
    unknown = sorted(str(name) for name in columns if name not in _FIELDS)
    if unknown:
        raise InvalidRequestError(
            f"unknown row field(s) {', '.join(unknown)}; a row may have {', '.join(_FIELDS)}"
        )
    if "model_output" not in columns:
        raise InvalidRequestError("columns need a model_output column, one entry per row")
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidRequestError(f"the columns differ in length: {lengths}")
    total = lengths["model_output"]
    for start in range(0, total, size):
        stop = min(total, start + size)
        checked = {
            name: _checked(name, values[start:stop], start) for name, values in columns.items()
        }
        yield RowColumns(checked)


@functools.cache
def _column_adapter(name: str) -> TypeAdapter[list[Any]]:
    """Validates a whole column of Row field ``name`` at once, with the field's own rules."""
    info = _FIELDS[name]
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
