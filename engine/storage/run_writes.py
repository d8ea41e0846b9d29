"""A run's results written a block at a time (``run_result_blocks``, migration 0020).

A write stores each check's results of a batch as one block (split past
:data:`ROWS_PER_BLOCK` rows), encoded once by ``engine/storage/result_blocks.py``: a
database row and one primary-key entry a block, where a result a database row cost three
b-tree inserts a result (the primary key and two browse indexes), the largest part of the
service path's server CPU.

The invariant readers rely on: **a (run, check, row) has at most one result across the
run's blocks.** A write keeps it in its transaction:

1. it takes the run's row lock first (PostgreSQL: ``SELECT ... FOR NO KEY UPDATE`` of the
   run's row; SQLite: its write lock, by an ``UPDATE`` of the run's row), so writers of
   one run go one at a time until they commit, and what they read next is what the
   others committed;
2. each check's results are ordered by row index, a row given twice keeps its first
   result, and rows that a stored block of that (run, check) already holds are left out:
   only blocks whose ``[row_start, row_stop)`` meets the batch's range are read, and one
   that holds every row of its range (``rows == row_stop - row_start``) without decoding;
3. the blocks are inserted (cut at :data:`ROWS_PER_BLOCK` results and at a span of
   :data:`~engine.storage.result_ranges.MAX_SPAN` rows, which bounds step 2's read) and
   ``runs.results_done`` grows by the results they hold (on PostgreSQL in the statement
   of the last insert).

A result saved twice is stored once and counted once: a retried chunk writes only its
missing rows, in a block that may interleave in range with the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from engine.storage.database import param_mark
from engine.storage.result_blocks import encode_block
from engine.storage.result_ranges import MAX_SPAN, rows_with_results

__all__ = [
    "BLOCKS_PER_STATEMENT",
    "ROWS_PER_BLOCK",
    "ResultValues",
    "insert_results",
]

#: Results a block at most: a batch of one check past it becomes several blocks.
ROWS_PER_BLOCK = 5000
#: Blocks an INSERT statement at most (six bound values a block).
BLOCKS_PER_STATEMENT = 100


class _Check:
    """One check's results of a batch, as columns in the order given."""

    __slots__ = ("duration_ms", "extras", "row_index", "score", "status")

    def __init__(self) -> None:
        self.row_index: list[int] = []
        self.status: list[str] = []
        self.score: list[bool | int | float | None] = []
        self.duration_ms: list[float] = []
        #: By position in these columns: results with more than a status and a score.
        self.extras: dict[int, Mapping[str, Any]] = {}


class ResultValues:
    """Results of a run to store, gathered by check."""

    __slots__ = ("checks", "run_id")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.checks: dict[int, _Check] = {}

    def __len__(self) -> int:
        return sum(len(c.row_index) for c in self.checks.values())

    def _check(self, check_index: int) -> _Check:
        found = self.checks.get(check_index)
        if found is None:
            found = self.checks[check_index] = _Check()
        return found

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
        check = self._check(check_index)
        if extras and any(value is not None for value in extras.values()):
            check.extras[len(check.row_index)] = extras
        check.row_index.append(row_index)
        check.status.append(status)
        check.score.append(score)
        check.duration_ms.append(duration_ms)

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
        check = self._check(check_index)
        base = len(check.row_index)
        for position, found in extras.items():
            check.extras[base + int(position)] = found
        check.row_index.extend(row_index)
        check.status.extend(status)
        check.score.extend(score)
        check.duration_ms.extend(duration_ms)  # made float64 by the encoder


def insert_results(conn: Connection, values: ResultValues) -> int:
    """Store ``values`` in ``conn``'s transaction, leaving out any (run, check, row) already
    stored or given twice; adds what it stored to the run's ``results_done`` and returns it."""
    if not values.checks:
        return 0
    run_id = values.run_id
    mark = param_mark(conn)
    postgres = conn.dialect.name == "postgresql"
    # first: the run's row lock, held to the commit, so no other writer of this run stores
    # a row between the read of the stored ranges and the insert. PostgreSQL: NO KEY, which
    # leaves the foreign-key checks of the run's other writes (chunks, labels) unblocked;
    # SQLite: the write lock, taken at a transaction's first write
    conn.exec_driver_sql(
        f"SELECT id FROM runs WHERE id = {mark} FOR NO KEY UPDATE"  # nosec B608 (marks only)
        if postgres
        else f"UPDATE runs SET results_done = results_done WHERE id = {mark}",  # nosec B608
        (run_id,),
    )
    blocks: list[tuple[Any, ...]] = []
    inserted = 0
    for check_index in sorted(values.checks):
        for row_start, row_stop, rows, data in _new_blocks(
            conn, run_id, check_index, values.checks[check_index]
        ):
            blocks.append((run_id, check_index, row_start, row_stop, rows, data))
            inserted += rows
    if not blocks:
        return 0
    count = f"UPDATE runs SET results_done = results_done + {mark} WHERE id = {mark}"  # nosec B608
    for start in range(0, len(blocks), BLOCKS_PER_STATEMENT):
        group = blocks[start : start + BLOCKS_PER_STATEMENT]
        marks = ", ".join([f"({mark}, {mark}, {mark}, {mark}, {mark}, {mark})"] * len(group))
        insert = (
            "INSERT INTO run_result_blocks (run_id, check_index, row_start, row_stop, rows, "  # nosec B608 (marks only)
            f"data) VALUES {marks}"
        )
        params = tuple(chain.from_iterable(group))
        if postgres and start + BLOCKS_PER_STATEMENT >= len(blocks):
            # the last insert and the count in one round trip (a data-modifying WITH runs
            # whether or not it is read)
            both = f"WITH stored AS ({insert}) {count}"  # nosec B608 (marks only)
            conn.exec_driver_sql(both, (*params, inserted, run_id))
            return inserted
        conn.exec_driver_sql(insert, params)
    conn.exec_driver_sql(count, (inserted, run_id))
    return inserted


def _new_blocks(
    conn: Connection, run_id: str, check_index: int, check: _Check
) -> Iterator[tuple[int, int, int, bytes]]:
    """``(row_start, row_stop, rows, data)`` of the blocks holding ``check``'s results that
    are neither stored nor given earlier in the batch."""
    given = np.asarray(check.row_index, dtype=np.int64)
    if not len(given):
        return
    if len(given) == 1 or bool(np.all(given[1:] > given[:-1])):
        positions = np.arange(len(given), dtype=np.intp)  # the usual batch: in order, once each
    else:
        order = np.argsort(given, kind="stable")  # stable: the first given of a row wins
        ordered = given[order]
        first = np.ones(len(ordered), dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        positions = order[first]
    rows = given[positions]
    stored = rows_with_results(conn, run_id, check_index, int(rows[0]), int(rows[-1]) + 1)
    held = np.isin(rows, stored, assume_unique=True)
    if held.any():
        positions = positions[~held]
        rows = rows[~held]
    if not len(positions):
        return
    columns = _taken(check, positions)
    for start, stop in _cuts(rows):
        extras = {k - start: e for k, e in columns.extras.items() if start <= k < stop}
        data = encode_block(
            columns.row_index[start:stop],
            columns.status[start:stop],
            columns.score[start:stop],
            columns.duration_ms[start:stop],
            extras,
        )
        yield int(rows[start]), int(rows[stop - 1]) + 1, stop - start, data


def _cuts(rows: NDArray[np.int64]) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` positions of the blocks ``rows`` (ascending) are cut into: at most
    :data:`ROWS_PER_BLOCK` rows each, none past a span of ``MAX_SPAN`` rows."""
    start, n = 0, len(rows)
    while start < n:
        stop = min(start + ROWS_PER_BLOCK, n)
        # rows[stop - 1] - rows[start] < MAX_SPAN: row_stop - row_start <= MAX_SPAN
        past = int(np.searchsorted(rows[start:stop], rows[start] + MAX_SPAN))
        stop = start + past
        yield start, stop
        start = stop


def _taken(check: _Check, positions: NDArray[np.intp]) -> _Check:
    """``check``'s results at ``positions``, in that order, extras re-keyed."""
    if len(positions) == len(check.row_index) and bool(
        np.all(positions == np.arange(len(positions)))
    ):
        return check
    taken = _Check()
    picks = positions.tolist()
    taken.row_index = [check.row_index[p] for p in picks]
    taken.status = [check.status[p] for p in picks]
    taken.score = [check.score[p] for p in picks]
    taken.duration_ms = [check.duration_ms[p] for p in picks]
    if check.extras:
        at = np.full(len(check.row_index), -1, dtype=np.intp)
        at[positions] = np.arange(len(positions))
        taken.extras = {int(at[p]): e for p, e in check.extras.items() if at[p] >= 0}
    return taken
