"""Which rows of a run's check have a result, from its result blocks' ranges.

A block of ``run_result_blocks`` that holds every row of ``[row_start, row_stop)``
(``rows == row_stop - row_start``, what a chunk's first write stores) says which rows it
holds without being read; only a block that skips rows of its range (a retried chunk's,
a migrated run's) is decoded for its row indices. The writer asks this before each write
(``engine/storage/run_writes.py``), the run service when a run's chunks have run
(``missing_rows``), a chunk before it runs (``result_rows``).

No block spans more than :data:`MAX_SPAN` rows (``row_stop - row_start``; the writer and
migration 0020 cut blocks there), so the blocks that meet a range of rows start less than
:data:`MAX_SPAN` rows before it: both bounds are on the primary key, and a write to a
run of thousands of blocks reads a few of their ranges, not every one before its rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from engine.storage.database import param_mark
from engine.storage.result_blocks import decode_block

__all__ = [
    "MAX_SPAN",
    "BlockRange",
    "BlockSpan",
    "block_ranges",
    "block_spans",
    "rows_with_results",
]

#: A block's ``row_stop - row_start`` at most.
MAX_SPAN = 5000

#: ``(row_start, row_stop, rows)`` of a stored block.
BlockRange = tuple[int, int, int]
#: ``(check_index, row_start, row_stop, rows)`` of a stored block.
BlockSpan = tuple[int, int, int, int]


def block_spans(
    conn: Connection,
    run_id: str,
    check_index: int | None = None,
    start: int | None = None,
    stop: int | None = None,
) -> list[BlockSpan]:
    """``(check_index, row_start, row_stop, rows)`` of a run's blocks (of one check, when
    given), in ``row_start`` order; with ``start`` and ``stop``, only those whose range
    meets ``[start, stop)``."""
    mark = param_mark(conn)
    where = f"run_id = {mark}"
    params: tuple[object, ...] = (run_id,)
    if check_index is not None:
        where += f" AND check_index = {mark}"
        params = (*params, check_index)
    if start is not None and stop is not None:
        where += f" AND row_start > {mark} AND row_start < {mark} AND row_stop > {mark}"
        params = (*params, start - MAX_SPAN, stop, start)
    found = conn.exec_driver_sql(
        "SELECT check_index, row_start, row_stop, rows FROM run_result_blocks "  # nosec B608 (marks only)
        f"WHERE {where} ORDER BY row_start",
        params,
    )
    return [(int(c), int(a), int(b), int(n)) for c, a, b, n in found]


def block_ranges(
    conn: Connection,
    run_id: str,
    check_index: int,
    start: int | None = None,
    stop: int | None = None,
) -> list[BlockRange]:
    """The check's blocks (:func:`block_spans` of one check, without it)."""
    return [(a, b, n) for _, a, b, n in block_spans(conn, run_id, check_index, start, stop)]


def rows_with_results(
    conn: Connection,
    run_id: str,
    check_index: int,
    start: int,
    stop: int,
    blocks: Sequence[BlockRange] | None = None,
) -> NDArray[np.int64]:
    """Row indices in ``[start, stop)`` that have a result for the check, ascending, each
    once; ``blocks`` when the caller has read the ranges already."""
    if stop <= start:
        return np.empty(0, dtype=np.int64)
    if blocks is None:
        blocks = block_ranges(conn, run_id, check_index, start, stop)
    parts: list[NDArray[np.int64]] = []
    mark = param_mark(conn)
    for row_start, row_stop, rows in blocks:
        low, high = max(row_start, start), min(row_stop, stop)
        if low >= high:
            continue
        if rows == row_stop - row_start:  # every row of its range
            parts.append(np.arange(low, high, dtype=np.int64))
            continue
        data = conn.exec_driver_sql(
            "SELECT data FROM run_result_blocks WHERE run_id = "  # nosec B608 (marks only)
            f"{mark} AND check_index = {mark} AND row_start = {mark}",
            (run_id, check_index, row_start),
        ).scalar_one()
        held = decode_block(bytes(data)).row_index
        parts.append(held[(held >= low) & (held < high)].astype(np.int64, copy=False))
    if not parts:
        return np.empty(0, dtype=np.int64)
    every = np.concatenate(parts)
    if len(parts) == 1 or bool(np.all(every[1:] > every[:-1])):
        return every
    # blocks of one check never hold a row twice, but may interleave in range
    return np.sort(every)
