"""Many rows in one ``INSERT ... VALUES (...), (...) [ON CONFLICT (...) DO NOTHING]``.

For the OTLP receiver's batches (512 spans an export by default) and a run's blocks of
input rows. One statement of many rows, not an executemany of one row each: SQLite
runs it in one step without taking
Python's GIL back between rows (an executemany takes it back for every row, and waits
each time for the threads mapping the next batches, which then cannot overlap with it).
(On PostgreSQL psycopg's pipelined executemany measured faster: the span store uses
this for SQLite only.) Each value still passes through its
column type's own bind processor (JSON encoded, SQLite's date format), as an ORM or Core
insert would bind it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table

from engine.storage.database import param_mark

#: Rows a statement at most: 500 rows of a 20-column table stay under PostgreSQL's limit
#: on bound parameters (65,535) and SQLite's since 3.32 (32,766); an older SQLite's
#: (999) is read from the connection.
ROWS_PER_STATEMENT = 500


def insert_statements(
    conn: Connection,
    table: Table,
    rows: Sequence[dict[str, Any]],
    conflict: Sequence[str] = (),
    encoders: Mapping[str, Callable[[Any], Any]] | None = None,
) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements (SQL and bound values) that insert ``rows`` (each a value for every
    column of ``table``), leaving out a row whose ``conflict`` columns match a stored row
    or an earlier row here (no ``conflict``: a duplicate key is an error). ``encoders``
    (by column name) take the place of a column type's own bind processor: a faster JSON
    encoder, for one. Made apart from running
    them: encoding the values is Python work, better done before a caller takes a write
    lock."""
    if not rows:
        return []
    dialect = conn.dialect
    columns = list(table.columns)
    own = encoders or {}
    processors: list[tuple[str, Callable[[Any], Any] | None]] = [
        (c.name, own.get(c.name) or c.type.dialect_impl(dialect).bind_processor(dialect))
        for c in columns
    ]
    quote = dialect.identifier_preparer.quote
    mark = param_mark(conn)
    per_statement = min(ROWS_PER_STATEMENT, _max_parameters(conn) // len(columns))
    group = "(" + ", ".join([mark] * len(columns)) + ")"
    # Names come from the Table (quoted by the dialect), every value is a bound parameter.
    head = f"INSERT INTO {quote(table.name)} ({', '.join(quote(c.name) for c in columns)}) VALUES "  # nosec B608
    tail = f" ON CONFLICT ({', '.join(quote(c) for c in conflict)}) DO NOTHING" if conflict else ""
    statements = []
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        params: list[Any] = []
        for row in chunk:
            params.extend([row[n] if p is None else p(row[n]) for n, p in processors])
        statements.append((head + ", ".join([group] * len(chunk)) + tail, tuple(params)))
    return statements


def run_statements(conn: Connection, statements: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
    """Run what :func:`insert_statements` made, in ``conn``'s transaction."""
    for sql, params in statements:
        conn.exec_driver_sql(sql, params)


def _max_parameters(conn: Connection) -> int:
    """How many parameters one statement may bind on this connection."""
    if conn.dialect.name != "sqlite":
        return 65_535
    driver = conn.connection.dbapi_connection
    return int(driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))  # type: ignore[union-attr]
