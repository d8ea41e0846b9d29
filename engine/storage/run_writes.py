"""A run's results written on the driver's own terms.

The service path stores every result of every check: at 100,000 rows, SQLAlchemy's
parameter processing (a dict a row, a bind processor a value, ``insertmanyvalues``
rebuilding the rows it batches) cost more server CPU than the database's own work. Here
each value is encoded once, in Python's C JSON encoder, and the rows go to the driver
without a dict apiece:

- SQLite: a multi-row ``INSERT ... VALUES (...), (...)`` of up to :data:`ROWS_PER_STATEMENT`
  rows, one step of SQLite each (an ``executemany`` takes the GIL back at every row, and
  waits there for the threads reading the sandbox's blocks);
- PostgreSQL: one ``INSERT ... SELECT FROM unnest(...)`` a batch, each column sent as one
  array parameter (psycopg dumps a list in C), ``ON CONFLICT DO NOTHING`` kept (``COPY``
  has no conflict clause, and results must stay idempotent).

Statements go through ``Connection.exec_driver_sql``: the session's transaction, and its
error translation, without SQLAlchemy's per-value processing. The stored values are what
the ORM stored (JSON text from ``json.dumps``, ``null`` for a missing score or metadata):
``row_results``, its indexes and every reader are unchanged. A run's input rows are
stored in blocks (``engine/storage/run_blocks.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

from sqlalchemy import Connection

from engine.errors import StorageError
from engine.nul import without_nul

__all__ = [
    "RESULT_COLUMNS",
    "ResultValues",
    "insert_results",
]

#: Rows a SQLite statement at most (its variable limit is read from the connection too).
ROWS_PER_STATEMENT = 500
#: Rows a PostgreSQL statement at most: arrays of this many values each.
ROWS_PER_ARRAY = 5000

#: ``row_results``'s columns, in the order of a :class:`ResultValues` row.
RESULT_COLUMNS = (
    "run_id",
    "check_index",
    "row_index",
    "status",
    "score",
    "score_num",
    "duration_ms",
    "explanation",
    "error",
    "output",
    "passed",
    "result_metadata",
    "model",
)

#: The values of a row up to its extras part (run_id to duration_ms).
BARE = 7

#: The width of ``row_results.model`` (migration 0010).
MODEL_CHARS = 200

_JSON_CONSTANTS: dict[Any, str] = {None: "null", True: "true", False: "false"}


def _score_json(score: bool | int | float | None) -> str:
    """A score as the JSON column stores it (``json.dumps``, common values without a call)."""
    if score is None or score is True or score is False:
        return _JSON_CONSTANTS[score]
    return json.dumps(score)


def _text(value: Any) -> str | None:
    # a check's own text: a NUL in it must never fail the run's write
    return None if value is None else without_nul(str(value))


class ResultValues:
    """Results of a run, one tuple a row in :data:`RESULT_COLUMNS` order, encoded once."""

    __slots__ = ("extras", "rows", "run_id")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.rows: list[tuple[Any, ...]] = []
        #: Whether any row has an extras part: without, only the first :data:`BARE` values
        #: of each row are sent (the statement writes the constant rest).
        self.extras = False

    def __len__(self) -> int:
        return len(self.rows)

    def add(
        self,
        check_index: int,
        row_index: int,
        status: str,
        score: bool | int | float | None,
        duration_ms: float,
        extras: Mapping[str, Any],
    ) -> None:
        """One result; ``extras`` holds its explanation, error, output, pass flag, metadata
        and serving model (RowResult's names), each absent or None when it has none."""
        if extras:
            self.extras = True
        self.rows.append(
            (
                self.run_id,
                check_index,
                row_index,
                status,
                _score_json(score),
                None if score is None else float(score),
                float(duration_ms),
                *(_extras(extras) if extras else _NO_EXTRAS),
            )
        )

    def add_columns(
        self,
        check_index: int,
        row_index: Sequence[int],
        status: Sequence[str],
        score: Sequence[bool | int | float | None],
        duration_ms: Sequence[float],
        extras: Mapping[int, Mapping[str, Any]],
    ) -> None:
        """Consecutive results of one check as columns (a sandbox result block)."""
        if extras:
            for k, (ri, st, sc, du) in enumerate(
                zip(row_index, status, score, duration_ms, strict=True)
            ):
                self.add(check_index, ri, st, sc, du, extras.get(k, _NONE))
            return
        run_id = self.run_id
        constants = _JSON_CONSTANTS
        self.rows.extend(
            (
                run_id,
                check_index,
                ri,
                st,
                constants[sc] if sc is None or sc is True or sc is False else json.dumps(sc),
                None if sc is None else float(sc),
                float(du),
                *_NO_EXTRAS,
            )
            for ri, st, sc, du in zip(row_index, status, score, duration_ms, strict=True)
        )


_NONE: Mapping[str, Any] = {}

#: The extras part of a result that has none: explanation, error, output, pass flag,
#: metadata (JSON ``null``) and model.
_NO_EXTRAS: tuple[Any, ...] = (None, None, None, None, "null", None)


def _extras(extras: Mapping[str, Any]) -> tuple[Any, ...]:
    """The extras part of a result's row, in :data:`RESULT_COLUMNS` order."""
    model = extras.get("model")
    metadata = extras.get("metadata")
    return (
        _text(extras.get("explanation")),
        _text(extras.get("error")),
        _text(extras.get("output")),
        extras.get("passed"),
        "null" if metadata is None else json.dumps(metadata),
        # PostgreSQL refuses a longer value, which would fail the whole write
        None if model is None else str(model)[:MODEL_CHARS],
    )


def insert_results(conn: Connection, values: ResultValues) -> int:
    """Insert ``values`` into ``row_results`` in ``conn``'s transaction, leaving out any
    (run, check, row) already stored; returns the rows inserted."""
    rows = values.rows
    if not rows:
        return 0
    names = ", ".join(RESULT_COLUMNS)
    dialect = conn.dialect.name
    inserted = 0
    if dialect == "sqlite":
        width = len(RESULT_COLUMNS) if values.extras else BARE
        per = max(1, min(ROWS_PER_STATEMENT, _sqlite_variables(conn) // width))
        group = "(" + ", ".join("?" * width) + ("" if values.extras else _SQLITE_NO_EXTRAS) + ")"
        for start in range(0, len(rows), per):
            batch = rows[start : start + per]
            # names are this module's constants; every value is a bound parameter
            sql = (
                f"INSERT INTO row_results ({names}) VALUES "  # nosec B608
                + ", ".join([group] * len(batch))
                + " ON CONFLICT (run_id, check_index, row_index) DO NOTHING"
            )
            bound = batch if values.extras else (row[:BARE] for row in batch)
            params = tuple(chain.from_iterable(bound))
            inserted += _count(conn.exec_driver_sql(sql, params).rowcount)
        return inserted
    if dialect == "postgresql":
        sql = (
            _PG_NO_EXTRAS
            if not values.extras
            else (
                f"INSERT INTO row_results ({names}) "  # nosec B608
                "SELECT %s, ci, ri, st, sc::json, sn, du, ex, er, ou, pa, me::json, mo FROM unnest("
                "%s::int[], %s::int[], %s::text[], %s::text[], %s::float8[], %s::float8[], "
                "%s::text[], %s::text[], %s::text[], %s::bool[], %s::text[], %s::text[]"
                ") AS t(ci, ri, st, sc, sn, du, ex, er, ou, pa, me, mo) "
                "ON CONFLICT (run_id, check_index, row_index) DO NOTHING"
            )
        )
        for start in range(0, len(rows), ROWS_PER_ARRAY):
            columns = list(zip(*rows[start : start + ROWS_PER_ARRAY], strict=True))
            sent = columns[1:] if values.extras else columns[1:BARE]
            params = (values.run_id, *(list(c) for c in sent))
            inserted += _count(conn.exec_driver_sql(sql, params).rowcount)
        return inserted
    raise StorageError(f"unsupported database dialect {dialect}")  # pragma: no cover


#: The extras part of a row without one (:data:`_NO_EXTRAS`), written by the statement.
_SQLITE_NO_EXTRAS = ", NULL, NULL, NULL, NULL, 'null', NULL"
_PG_NO_EXTRAS = (
    f"INSERT INTO row_results ({', '.join(RESULT_COLUMNS)}) "  # nosec B608 (constants)
    "SELECT %s, ci, ri, st, sc::json, sn, du, NULL, NULL, NULL, NULL, 'null'::json, NULL "
    "FROM unnest(%s::int[], %s::int[], %s::text[], %s::text[], %s::float8[], %s::float8[]) "
    "AS t(ci, ri, st, sc, sn, du) "
    "ON CONFLICT (run_id, check_index, row_index) DO NOTHING"
)


def _count(rowcount: int | None) -> int:
    return max(0, int(rowcount or 0))


def _sqlite_variables(conn: Connection) -> int:
    """How many parameters one SQLite statement may bind on this connection."""
    driver = conn.connection.dbapi_connection
    return int(driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))  # type: ignore[union-attr]
