"""A run's input rows stored a block at a time (``run_row_blocks``, migration 0019).

One database row holds up to :data:`ROWS_PER_BLOCK` consecutive input rows of a run as one
JSON array (``rows``, text), rows ``row_start`` to ``row_stop - 1``. A 100,000-row run is
1,000 database rows: a block is encoded by one ``orjson.dumps`` and decoded by one
``orjson.loads``, where a row a database row cost an encode, a decode and three bound
values a row on the service path. A block is small enough that a chunk (500 rows) or a
page of the dashboard decodes few rows it does not need. Rows are read by index only (a
chunk's rows, a page of the dashboard's table, an export's batch): no reader looks inside
them in SQL. What orjson refuses to write (an integer past 64 bits) is written by ``json``
and marked (:data:`JSON_MARK`) to be read by ``json`` too.

A block never holds more than :data:`ROWS_PER_BLOCK` rows and never skips an index inside
it, so the blocks holding rows ``low..high`` start after ``low - ROWS_PER_BLOCK`` and at or
before ``high``: both bounds are on the primary key.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from copy import copy
from itertools import chain
from operator import itemgetter
from typing import Any, cast

import orjson
from sqlalchemy import Connection, Table

from engine.models import Row
from engine.row_dumps import StoredRows
from engine.storage.bulk_insert import insert_statements, run_statements
from engine.storage.database import param_mark
from engine.storage.tables import RunRowBlock

__all__ = [
    "ROWS_PER_BLOCK",
    "SENT_MARK",
    "insert_row_blocks",
    "read_row_columns",
    "read_rows_at",
    "row_blocks",
    "stored_row_ranges",
    "whole_row",
]

#: Input rows a block at most (migration 0019 moved older runs' rows in blocks of this size).
ROWS_PER_BLOCK = 100
#: Blocks a statement at most (four values a block).
BLOCKS_PER_STATEMENT = 100
#: The table the blocks live in.
BLOCKS: Table = RunRowBlock.__table__  # type: ignore[assignment]


def row_blocks(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[int, int, str]]:
    """``(row_start, row_stop, JSON text)`` of each block of ``rows``, indexed from 0
    (:class:`~engine.row_dumps.StoredRows`: marked :data:`SENT_MARK`)."""
    sent = isinstance(rows, StoredRows)
    start = 0
    block: list[Any] = []
    for row in rows:
        block.append(row if isinstance(row, dict) else dict(row))
        if len(block) >= ROWS_PER_BLOCK:
            yield start, start + len(block), _dumps(block, sent)
            start += len(block)
            block = []
    if block:
        yield start, start + len(block), _dumps(block, sent)


#: How a block written by ``json`` begins: orjson never writes a space.
JSON_MARK = "[ "
#: After the ``[`` (or :data:`JSON_MARK`) of a block of rows stored as they were sent
#: (:class:`~engine.row_dumps.StoredRows`): neither writer puts a line break there, and
#: any JSON reader skips it. Such a block's rows are read back whole (:func:`whole_row`).
SENT_MARK = "\n"


def _dumps(block: list[Any], sent: bool = False) -> str:
    try:
        text = orjson.dumps(block).decode()
        head = "["
    except TypeError:  # an integer past 64 bits, a key that is not a string: json writes it
        text = JSON_MARK + json.dumps(block)[1:]
        head = JSON_MARK
    return head + SENT_MARK + text[len(head) :] if sent else text


def _decode(text: str) -> tuple[list[Any], bool]:
    """A block's rows as stored, and whether they are rows as sent (:data:`SENT_MARK`)."""
    # orjson reads an integer past 64 bits as a float: a block that may hold one (written
    # by json, or moved by migration 0019) is read by json
    by_json = text.startswith(JSON_MARK)
    found: list[Any] = json.loads(text) if by_json else orjson.loads(text)
    return found, text.startswith(SENT_MARK, len(JSON_MARK) if by_json else 1)


def _loads(text: str) -> list[Any]:
    found, sent = _decode(text)
    return [whole_row(row) for row in found] if sent else found


def insert_row_blocks(conn: Connection, run_id: str, rows: Iterable[Mapping[str, Any]]) -> int:
    """Store a run's input rows (indexed from 0, in order) in ``conn``'s transaction, a
    block of :data:`ROWS_PER_BLOCK` a database row; returns how many rows."""
    count = 0
    pending: list[dict[str, Any]] = []
    for start, stop, text in row_blocks(rows):
        pending.append({"run_id": run_id, "row_start": start, "row_stop": stop, "rows": text})
        count = stop
        if len(pending) >= BLOCKS_PER_STATEMENT:
            run_statements(conn, insert_statements(conn, BLOCKS, pending))
            pending.clear()
    if pending:
        run_statements(conn, insert_statements(conn, BLOCKS, pending))
    return count


def _blocks_holding(
    conn: Connection, run_id: str, low: int, high: int
) -> Iterable[tuple[int, int, str]]:
    """``(row_start, row_stop, JSON text)`` of the blocks that may hold rows ``low`` to
    ``high`` (both included), in order: both bounds on the primary key."""
    mark = param_mark(conn)
    found = conn.exec_driver_sql(
        "SELECT row_start, row_stop, rows FROM run_row_blocks "  # nosec B608 (marks only)
        f"WHERE run_id = {mark} AND row_start > {mark} AND row_start <= {mark} "
        "ORDER BY row_start",
        (run_id, low - ROWS_PER_BLOCK, high),
    )
    # a Row unpacks as the tuple it types (Result.tuples() is deprecated in SQLAlchemy 2.1)
    return cast("Iterable[tuple[int, int, str]]", found)


def read_rows_at(
    conn: Connection, run_id: str, indices: Iterable[int]
) -> dict[int, dict[str, Any]]:
    """A run's input rows at ``indices`` (those it has), decoded, by index."""
    wanted = sorted(set(indices))
    if not wanted:
        return {}
    out: dict[int, dict[str, Any]] = {}
    for start, stop, text in _blocks_holding(conn, run_id, wanted[0], wanted[-1]):
        taken = wanted[bisect_left(wanted, start) : bisect_left(wanted, stop)]
        if taken:
            block = _loads(text)
            for i in taken:
                out[i] = block[i - start]
    return out


def read_row_columns(
    conn: Connection, run_id: str, start: int, stop: int
) -> dict[str, list[Any]] | None:
    """A run's input rows ``start`` to ``stop - 1`` as columns (field name -> one value a
    row) with no whole dump made a row: a field no row gives is left out (its default in
    every row), one some rows give holds the default in the others. None when a row is
    missing, or one is neither as sent nor a whole dump (its Row is made the usual way)."""
    if stop <= start:
        return None
    rows: list[Any] = []
    whole = True  # every block a whole dump a row (none stored as sent)
    for row_start, row_stop, text in _blocks_holding(conn, run_id, start, stop - 1):
        if row_stop <= start:
            continue
        if row_start > start + len(rows):
            return None  # a gap
        block, sent = _decode(text)
        whole = whole and not sent
        rows.extend(block[start + len(rows) - row_start : stop - row_start])
    if len(rows) != stop - start:
        return None
    return _columns(rows, whole)


def _columns(rows: list[Any], whole: bool) -> dict[str, list[Any]] | None:
    if set(map(type, rows)) != {dict}:
        return None
    names = set().union(*rows)
    if not names <= _DEFAULTS.keys():
        return None
    # each row's keys are among ``names``: as many keys in all as rows times names means
    # every row gives every name (a whole dump every field), with no count a name
    keys = sum(map(len, rows))
    if whole and keys != len(rows) * len(_DEFAULTS):
        return None  # a whole dump holds every field
    given = None if keys == len(rows) * len(names) else Counter(chain.from_iterable(rows))
    columns: dict[str, list[Any]] = {}
    for name, default in _DEFAULTS.items():
        if name not in names:
            continue
        if given is None or given[name] == len(rows):
            columns[name] = list(map(itemgetter(name), rows))
        else:  # model_output is in every row: its default is never needed
            columns[name] = [row.get(name, copy(default)) for row in rows]  # a dict its own
    return columns


#: A stored row's every field at its default, in a dump's order (what a row sent with only
#: ``model_output`` dumps as, that value aside).
_DEFAULTS: dict[str, Any] = Row(model_output="").model_dump(mode="json")


def whole_row(stored: Any) -> Any:
    """A row stored as it was sent, as a whole dump: every field, those it does not give
    at their defaults (what the model's dump of its Row is)."""
    if type(stored) is not dict or len(stored) == len(_DEFAULTS):
        return stored
    whole = _DEFAULTS.copy()
    whole.update(stored)
    if "metadata" not in stored:
        whole["metadata"] = {}  # its own, not the one dict of the defaults
    return whole


def stored_row_ranges(conn: Connection, run_id: str) -> list[tuple[int, int]]:
    """``(row_start, row_stop)`` of a run's blocks, in order."""
    mark = param_mark(conn)
    found = conn.exec_driver_sql(
        "SELECT row_start, row_stop FROM run_row_blocks "  # nosec B608 (marks only)
        f"WHERE run_id = {mark} ORDER BY row_start",
        (run_id,),
    )
    return [(int(a), int(b)) for a, b in found]
