"""A check's stored results read back as one :class:`ResultArrays` (``run_result_blocks``).

Every reader of results (the API's pages and exports, summaries, compare, the dashboard's
table) starts here: the blocks of one (run, check) in ``row_start`` order, decoded and
concatenated into columns, sorted by row index where retried chunks left blocks whose
ranges interleave. A finished run's results change only when ``results_done`` does (a
late result of a cancelled chunk), so they are kept decoded, per engine, keyed by
``(run_id, check_index, results_done)``: the dashboard paging through a finished run
decodes its blocks once, not once a page. A block never changes once written (a run's
blocks go only with the run), so a run still active keeps its checks' results decoded
too, by ``(run_id, check_index)`` with the blocks they came from: a read (the polled
running summary) decodes only the blocks stored since the last, and the first read
after the run ends only those still missing. A page of an active run's results
(:func:`check_page`, :func:`run_page`) decodes only the blocks of the rows the page
spans, found from the blocks' ranges and counts.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine, Table, select

from engine.storage.records import RunStatus, StoredResult
from engine.storage.result_blocks import EMPTY, ResultArrays, concat, decode_block
from engine.storage.result_ranges import BlockSpan, block_spans
from engine.storage.tables import ResultBlockRow, RunRow

__all__ = [
    "CACHED_BYTES",
    "check_indexes",
    "check_page",
    "check_results",
    "merged_page",
    "read_results",
    "results_at_row",
    "run_page",
]

#: The blocks table.
BLOCKS: Table = ResultBlockRow.__table__  # type: ignore[assignment]
#: Decoded results kept per engine, in (estimated) bytes: a finished million-row check
#: with an explanation a row, or several without.
CACHED_BYTES = 512 * 2**20
#: Decoded results of active runs kept per engine, in (estimated) bytes: a poll of a
#: running run's summary decodes only the blocks stored since the last.
ACTIVE_BYTES = 256 * 2**20
#: What a result costs held decoded: its columns, and a row's extras as Python objects.
_COLUMN_BYTES = 26
_EXTRA_BYTES = 320


def read_results(
    conn: Connection,
    run_id: str,
    check_index: int,
    start: int | None = None,
    stop: int | None = None,
) -> ResultArrays:
    """A check's results in row order; only rows ``start <= row_index < stop`` when given
    (reading only the blocks whose range overlaps them)."""
    query = select(BLOCKS.c.data).where(
        BLOCKS.c.run_id == run_id, BLOCKS.c.check_index == check_index
    )
    if stop is not None:
        query = query.where(BLOCKS.c.row_start < stop)
    if start is not None:
        query = query.where(BLOCKS.c.row_stop > start)
    parts = [decode_block(bytes(data)) for data in conn.scalars(query.order_by(BLOCKS.c.row_start))]
    arrays = _in_row_order(concat(parts))
    if start is None and stop is None:
        return arrays
    rows = arrays.row_index
    low = 0 if start is None else int(np.searchsorted(rows, start, "left"))
    high = len(arrays) if stop is None else int(np.searchsorted(rows, stop, "left"))
    if low == 0 and high == len(arrays):
        return arrays
    return arrays.take(np.arange(low, high, dtype=np.intp))


def _in_row_order(arrays: ResultArrays) -> ResultArrays:
    """The arrays sorted by row index: blocks of one check concatenated in ``row_start``
    order are, unless a retried chunk's block interleaves with another's range."""
    rows = arrays.row_index
    if len(rows) < 2 or bool(np.all(rows[1:] > rows[:-1])):
        return arrays
    return arrays.take(np.argsort(rows, kind="stable"))


def check_indexes(conn: Connection, run_id: str) -> list[int]:
    """The checks of a run that have a stored result, ascending."""
    query = (
        select(BLOCKS.c.check_index)
        .where(BLOCKS.c.run_id == run_id)
        .distinct()
        .order_by(BLOCKS.c.check_index)
    )
    return [int(c) for c in conn.scalars(query)]


def results_at_row(conn: Connection, run_id: str, row_index: int) -> dict[int, StoredResult]:
    """Every check's result on one row, by check index (only the blocks around the row)."""
    query = (
        select(BLOCKS.c.check_index, BLOCKS.c.data)
        .where(
            BLOCKS.c.run_id == run_id,
            BLOCKS.c.row_start <= row_index,
            BLOCKS.c.row_stop > row_index,
        )
        .order_by(BLOCKS.c.check_index, BLOCKS.c.row_start)
    )
    out: dict[int, StoredResult] = {}
    for check_index, data in conn.execute(query):
        arrays = decode_block(bytes(data))
        k = int(np.searchsorted(arrays.row_index, row_index, "left"))
        if k < len(arrays) and int(arrays.row_index[k]) == row_index:
            out[int(check_index)] = arrays.stored(int(check_index), k)
    return out


def _size(arrays: ResultArrays) -> int:
    return _COLUMN_BYTES * len(arrays) + _EXTRA_BYTES * len(arrays.extras)


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Cache(Generic[K, V]):
    """Least recently used decoded results, bounded in estimated bytes (``measure``)."""

    def __init__(self, size: int, measure: Callable[[V], int]) -> None:
        self._size = size
        self._measure = measure
        self._held = 0
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        size = self._measure(value)
        with self._lock:
            old = self._entries.pop(key, None)
            self._held -= 0 if old is None else self._measure(old)
            if size > self._size:
                return
            self._entries[key] = value
            self._held += size
            while self._held > self._size:
                _, dropped = self._entries.popitem(last=False)
                self._held -= self._measure(dropped)

    def drop(self, key: K) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            self._held -= 0 if old is None else self._measure(old)


@dataclass(frozen=True)
class _Growing:
    """An active run's check's results decoded so far: the blocks they came from, by
    ``row_start``, and the results in row order."""

    starts: frozenset[int]
    arrays: ResultArrays


def _growing_size(growing: _Growing) -> int:
    return _size(growing.arrays)


class _Caches:
    """One engine's decoded results: finished runs' by ``(run_id, check_index,
    results_done)``, active runs' by ``(run_id, check_index)``."""

    def __init__(self) -> None:
        self.finished: _Cache[tuple[str, int, int], ResultArrays] = _Cache(CACHED_BYTES, _size)
        self.active: _Cache[tuple[str, int], _Growing] = _Cache(ACTIVE_BYTES, _growing_size)


_CACHES: weakref.WeakKeyDictionary[Engine, _Caches] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _caches_of(engine: Engine) -> _Caches:
    with _CACHES_LOCK:
        caches = _CACHES.get(engine)
        if caches is None:
            caches = _CACHES[engine] = _Caches()
        return caches


#: What a read needs of its run, read once: whether it is active, and its ``results_done``.
_RunState = tuple[bool, int]


def _run_state(conn: Connection, run_id: str) -> _RunState | None:
    """Whether the run is active and its ``results_done`` (None: no such run)."""
    found = conn.execute(
        select(RunRow.status, RunRow.results_done).where(RunRow.id == run_id)
    ).first()
    if found is None:
        return None
    return RunStatus(found[0]).active, int(found[1] or 0)


def check_results(conn: Connection, run_id: str, check_index: int) -> ResultArrays:
    """Every result of a check in row order (:data:`EMPTY` for an unknown run), from the
    cache when the run has finished and its ``results_done`` has not moved."""
    # results_done before the blocks: a write landing in between is then cached under the
    # count it replaced, which no later reader asks for
    state = _run_state(conn, run_id)
    if state is None:
        return EMPTY
    return _check_results(conn, run_id, check_index, state)


def _check_results(
    conn: Connection, run_id: str, check_index: int, state: _RunState
) -> ResultArrays:
    active, done = state
    caches = _caches_of(conn.engine)
    if active:
        return _read_growing(conn, caches.active, run_id, check_index)
    key = (run_id, check_index, done)
    arrays = caches.finished.get(key)
    if arrays is None:
        # the blocks decoded while it ran, and those written since
        arrays = _read_growing(conn, caches.active, run_id, check_index)
        caches.finished.put(key, arrays)
        caches.active.drop((run_id, check_index))
    return arrays


#: Block row starts a query of missing blocks names at most.
_STARTS_PER_QUERY = 500


def _read_growing(
    conn: Connection,
    kept: _Cache[tuple[str, int], _Growing],
    run_id: str,
    check_index: int,
) -> ResultArrays:
    """A check's results in row order, decoding only the blocks stored since the last
    read: a block never changes once written (a run's blocks go only with the run)."""
    key = (run_id, check_index)
    old = kept.get(key)
    if old is None:
        query = select(BLOCKS.c.row_start, BLOCKS.c.data).where(
            BLOCKS.c.run_id == run_id, BLOCKS.c.check_index == check_index
        )
        found = conn.execute(query.order_by(BLOCKS.c.row_start)).all()
        arrays = _in_row_order(concat([decode_block(bytes(data)) for _, data in found]))
        kept.put(key, _Growing(frozenset(int(start) for start, _ in found), arrays))
        return arrays
    spans = block_spans(conn, run_id, check_index)
    missing = [start for _, start, _, _ in spans if start not in old.starts]
    if not missing:
        return old.arrays
    parts = [old.arrays]
    for at in range(0, len(missing), _STARTS_PER_QUERY):
        group = missing[at : at + _STARTS_PER_QUERY]
        query = select(BLOCKS.c.data).where(
            BLOCKS.c.run_id == run_id,
            BLOCKS.c.check_index == check_index,
            BLOCKS.c.row_start.in_(group),
        )
        parts.extend(decode_block(bytes(data)) for data in conn.scalars(query))
    arrays = _in_row_order(concat(parts))
    kept.put(key, _Growing(old.starts | frozenset(missing), arrays))
    return arrays


def check_page(
    conn: Connection, run_id: str, check_index: int, offset: int, limit: int
) -> ResultArrays:
    """A check's results ``offset`` to ``offset + limit - 1`` in row order: sliced from the
    kept results of a finished run, read from only the blocks that hold them otherwise
    (a run still going is read afresh, so a page of it decodes a page's blocks, not all).
    """
    state = _run_state(conn, run_id)
    if state is None or limit <= 0:
        return EMPTY
    if not state[0]:
        arrays = _check_results(conn, run_id, check_index, state)
        return _slice(arrays, offset, offset + limit)
    window = _window(block_spans(conn, run_id, check_index), offset, limit)
    if window is None:
        return EMPTY
    low, high, skip = window
    return _slice(read_results(conn, run_id, check_index, low, high), skip, skip + limit)


def run_page(conn: Connection, run_id: str, offset: int, limit: int) -> list[StoredResult]:
    """A run's results ``offset`` to ``offset + limit - 1`` ordered by (row index, check
    index): from the kept results of a finished run, else from only the blocks of the
    rows the page spans."""
    state = _run_state(conn, run_id)
    if state is None or limit <= 0:
        return []
    checks: dict[int, ResultArrays]
    if not state[0]:
        checks = {c: _check_results(conn, run_id, c, state) for c in check_indexes(conn, run_id)}
    else:
        spans = block_spans(conn, run_id)
        window = _window(spans, offset, limit)
        if window is None:
            return []
        low, high, offset = window
        every = sorted({c for c, *_ in spans})
        checks = {c: read_results(conn, run_id, c, low, high) for c in every}
    rows = {c: arrays.row_index for c, arrays in checks.items()}
    return [checks[c].stored(c, k) for c, k in merged_page(rows, offset, limit)]


def _window(spans: list[BlockSpan], offset: int, limit: int) -> tuple[int, int, int] | None:
    """``(low, high, skip)``: the rows ``low <= row_index < high`` hold results ``offset``
    to ``offset + limit - 1`` (in (row, check) order) of the blocks ``spans`` describe,
    the first of them after ``skip`` others in that range; None past the last result.

    Blocks whose ranges overlap (a retried chunk's, or the checks' blocks of one batch)
    are taken as one range holding the sum of their results (no (check, row) twice), so
    the ranges are disjoint and in row order, and counting before one is exact.
    """
    merged: list[list[int]] = []
    for _, start, stop, rows in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
            merged[-1][2] += rows
        else:
            merged.append([start, stop, rows])
    before = 0
    low: int | None = None
    high = skip = 0
    for start, stop, rows in merged:
        if before + rows > offset:
            if low is None:
                low, skip = start, offset - before
            high = stop
        before += rows
        if before >= offset + limit:
            break
    return None if low is None else (low, high, skip)


def _slice(arrays: ResultArrays, start: int, stop: int) -> ResultArrays:
    stop = min(stop, len(arrays))
    if start == 0 and stop == len(arrays):
        return arrays
    return arrays.take(np.arange(start, max(start, stop), dtype=np.intp))


def merged_page(
    rows: Mapping[int, NDArray[np.int64]], offset: int, limit: int
) -> list[tuple[int, int]]:
    """``(check_index, position)`` of results ``offset`` to ``offset + limit - 1`` of a run
    ordered by (row index, check index), given each check's ascending row indexes.

    The row of the ``offset``-th result is found by bisection on how many results lie
    before a row (a ``searchsorted`` a check), so a page deep in a million-row run sorts
    only its own candidates, never the run.
    """
    checks = sorted(c for c in rows if len(rows[c]))
    total = sum(len(rows[c]) for c in checks)
    if limit <= 0 or offset >= total:
        return []

    def before(row: int) -> int:
        return sum(int(np.searchsorted(rows[c], row, "left")) for c in checks)

    low = min(int(rows[c][0]) for c in checks)  # before(low) == 0 <= offset
    high = max(int(rows[c][-1]) for c in checks) + 1  # before(high) == total > offset
    while high - low > 1:
        middle = (low + high) // 2
        if before(middle) <= offset:
            low = middle
        else:
            high = middle
    skip = offset - before(low)  # results on row ``low`` that come before the page
    found_rows: list[NDArray[np.int64]] = []
    found_checks: list[NDArray[np.int64]] = []
    found_at: list[NDArray[np.intp]] = []
    for c in checks:
        first = int(np.searchsorted(rows[c], low, "left"))
        at = np.arange(first, min(first + skip + limit, len(rows[c])), dtype=np.intp)
        found_rows.append(rows[c][at])
        found_checks.append(np.full(len(at), c, np.int64))
        found_at.append(at)
    by_row = np.concatenate(found_rows)
    by_check = np.concatenate(found_checks)
    positions = np.concatenate(found_at)
    order = np.lexsort((by_check, by_row))[skip : skip + limit]
    return list(zip(by_check[order].tolist(), positions[order].tolist(), strict=True))
