"""A job's rows as columns, bound to the check's calls once per job (in the check's process).

A job carries its rows as ``columns`` (field name, one of the contract's row fields
:data:`~engine.contract.formats.table.ROW_FIELDS` -> one JSON list, one value per row) and
its row count ``n``; a field no column gives has its default in every row (None;
``metadata``: an empty dict of the row's own). :class:`Calls` reads the check's signature
once per job and yields each row's arguments from the columns: for an ``evaluate`` whose
parameters are its leading positional ones, a tuple zipped from the columns (no mapping
per row at all); for other formats, whose binding rules read a row as a mapping,
:class:`ColumnRow`, a view of one row of the columns (two references, not a dict).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from engine import contract
from engine.contract import formats
from engine.contract.formats.table import ROW_FIELDS

_NO_ARGS: dict[str, Any] = {}


def check_columns(job: dict[str, Any]) -> int:
    """The job's row count, once its columns are seen to be one list per known field, each
    of that many values (ValueError if not: the host broke its own protocol)."""
    n = job.get("n")
    columns = job.get("columns")
    if type(n) is not int or n < 0 or not isinstance(columns, dict):
        raise ValueError("a job needs its row count n and its columns")
    for name, values in columns.items():
        if name not in ROW_FIELDS or not isinstance(values, list) or len(values) != n:
            raise ValueError(f"column {name!r} is not a list of {n} values of a row field")
    return n


def _column(columns: Mapping[str, list[Any]], name: str, start: int, stop: int) -> Any:
    """Field ``name`` of rows ``start:stop``: its values, or (no column) its default's."""
    values = columns.get(name)
    if values is not None:
        if name == "metadata":  # a null metadata is bound as an empty dict of its own
            return [{} if value is None else value for value in values[start:stop]]
        return values[start:stop]
    if name == "metadata":
        return ({} for _ in range(stop - start))
    return itertools.repeat(None, stop - start)


class ColumnRow(Mapping[str, Any]):
    """Row ``k`` of the columns as a read-only mapping of every row field."""

    __slots__ = ("_columns", "_k")

    def __init__(self, columns: Mapping[str, list[Any]], k: int) -> None:
        self._columns = columns
        self._k = k

    def __getitem__(self, name: str) -> Any:
        values = self._columns.get(name)
        if values is not None:
            return values[self._k]
        if name not in ROW_FIELDS:
            raise KeyError(name)
        return {} if name == "metadata" else None

    def get(self, name: str, default: Any = None) -> Any:
        """The field's value; ``default`` only for a name that is not a row field."""
        values = self._columns.get(name)
        if values is not None:
            return values[self._k]
        if name not in ROW_FIELDS:
            return default
        return {} if name == "metadata" else None

    def __iter__(self) -> Iterator[str]:
        return iter(ROW_FIELDS)

    def __len__(self) -> int:
        return len(ROW_FIELDS)


def _positional(func: Any, names: tuple[str, ...]) -> bool:
    """Whether ``func`` takes ``names`` as its leading positional parameters, in order."""
    try:
        parameters = contract.parameters_of(func)
    except contract.EntrypointError:
        return False
    if len(parameters) < len(names):
        return False
    return all(
        parameter == name and kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        for (parameter, kind, _), name in zip(parameters, names, strict=False)
    )


class Calls:
    """Each row's call of the loaded entry, bound from the columns once per job."""

    def __init__(
        self, entry: Any, job: Mapping[str, Any], start: int, stop: int, message: Any = None
    ) -> None:
        """``message`` makes a reward-kit ``Message`` of a dict, for that format's rows."""
        self.entry = entry
        self.message = message
        self.job = job
        self.start = start
        self.stop = stop
        self.columns: Mapping[str, list[Any]] = job["columns"]
        named: tuple[str, ...] = entry.signature.parameters
        #: The inputs whose absence skips the row, and their values (None: no column): the
        #: ones ``evaluate`` names (``**kwargs`` takes the others as they are, null or not).
        self.required = [
            (name, self.columns.get(name))
            for name in contract.REQUIRABLE_PARAMETERS
            if name in named
        ]

    def lacking(self) -> dict[int, list[str]]:
        """The rows (``k`` from ``start``) that lack a required input (absent or null), each
        with what it lacks: read once for the job, a column at a time."""
        rows: dict[int, list[str]] = {}
        for name, values in self.required:
            if values is None:
                lack: Iterable[int] = range(self.stop - self.start)
            else:
                part = values[self.start : self.stop]
                lack = [k for k, value in enumerate(part) if value is None]
            for k in lack:
                rows.setdefault(k, []).append(name)
        return rows

    def __iter__(self) -> Iterator[tuple[tuple[Any, ...] | list[Any], dict[str, Any]]]:
        """(args, kwargs) of each row in turn."""
        detected = self.entry.detected
        start, stop = self.start, self.stop
        if detected is None:
            names: tuple[str, ...] = self.entry.signature.bound
            values = [_column(self.columns, name, start, stop) for name in names]
            if not self.entry.signature.var_keyword and _positional(self.entry.func, names):
                for args in zip(*values, strict=False) if values else _empty(stop - start):
                    yield args, _NO_ARGS
                return
            for args in zip(*values, strict=False) if values else _empty(stop - start):
                yield (), dict(zip(names, args, strict=True))
            return
        assert detected.shape is not None
        config = self.job.get("config")
        message = self.message
        for at in range(start, stop):
            row = ColumnRow(self.columns, at)
            yield formats.bind(detected.format, detected.shape, row, message, config)


def _empty(n: int) -> Iterator[tuple[()]]:
    """``n`` empty argument tuples (an ``evaluate`` that takes nothing)."""
    return itertools.repeat((), n)
