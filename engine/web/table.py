"""The run page's row table: filtered, sorted, keyset-paginated reads of one check's results.

A check's results are read as columns (:func:`engine.storage.result_reads.check_results`,
kept decoded, a block decoded once) and filtered, sorted and cut into pages with numpy:
boolean masks for the status and score filters, a sort by ``(score, row_index)`` or
``row_index``. The cursor is the last row's ``(row_index)`` or ``(score, row_index)``,
never an offset, so a page is the same after results land in between, and only the
first rows of a page are sorted in full (a partition finds them first). A text search (a
case-insensitive substring of the model output, explanation, error or captured output;
``%`` and ``_`` match themselves) reads at most ``SEARCH_WINDOW`` results per page, so a
rare match costs a few pages of "searched on", never one page that reads a million
rows' model outputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine

from engine.runs.export import FIELDS, record
from engine.storage.records import StoredResult
from engine.storage.result_blocks import ResultArrays
from engine.storage.result_reads import check_results, results_at_row
from engine.storage.run_blocks import ROWS_PER_BLOCK, read_rows_at

SORTS = ("row", "score_asc", "score_desc")
PAGE_SIZE = 50
#: A text search reads at most this many results (in table order) per page: a search
#: that matches rarely stops there and offers the next page, so no page reads a
#: million rows' text.
SEARCH_WINDOW = 50_000


@dataclass(frozen=True)
class TableFilter:
    """What the user asked the row table for (parsed from the query string)."""

    check_index: int = 0
    status: str | None = None
    min_score: float | None = None
    max_score: float | None = None
    text: str | None = None
    sort: str = "row"


@dataclass(frozen=True)
class TableRow:
    row_index: int
    row_id: str | None
    model_output: str
    scenario_input: Any
    status: str
    score: Any
    explanation: str | None
    error: str | None
    scenario_result: Any = None
    passed: bool | None = None
    model: str | None = None
    metadata: Any = None

    def export_record(self, check: str, version: int | None) -> dict[str, Any]:
        """The row as every export writes it (:data:`engine.runs.export.FIELDS`, in order)."""
        result = {
            "row_id": self.row_id,
            "check": check,
            "version": version,
            "status": self.status,
            "score": self.score,
            "passed": self.passed,
            "explanation": self.explanation,
            "error": self.error,
            "model": self.model,
            "metadata": self.metadata,
        }
        inputs = {
            "model_output": self.model_output,
            "scenario_input": self.scenario_input,
            "scenario_result": self.scenario_result,
        }
        return record(self.row_index, result, inputs)


#: The export's columns, in order (the CSV header; the keys of ``TableRow.export_record``).
EXPORT_FIELDS = FIELDS


@dataclass(frozen=True)
class TablePage:
    rows: list[TableRow]
    next_cursor: str | None
    #: A text search stopped at its window: the next page searches on from there.
    searched: int | None = None


def _contains(text: str, *values: object) -> bool:
    """Whether ``text`` (lower case) occurs in any of ``values`` that is a string, in any case."""
    return any(isinstance(v, str) and text in v.lower() for v in values)


def _selected(arrays: ResultArrays, f: TableFilter, cursor: str | None) -> NDArray[np.bool_]:
    """Which results the filter selects after ``cursor`` (a score compared with NaN, no
    score, is False: such results are out of any score range and of the score sorts)."""
    score, rows = arrays.score, arrays.row_index
    keep = np.ones(len(arrays), np.bool_)
    if f.status:
        code = arrays.code(f.status)
        keep = keep & (arrays.status == code) if code is not None else np.zeros_like(keep)
    if f.min_score is not None:
        keep &= score >= f.min_score
    if f.max_score is not None:
        keep &= score <= f.max_score
    if f.sort != "row":
        keep &= ~np.isnan(score)
    if not cursor:
        return keep
    if f.sort == "row":
        return keep & (rows > int(cursor))
    score_text, _, row_text = cursor.partition(":")
    after, row = float(score_text), int(row_text)
    later = (score > after) if f.sort == "score_asc" else (score < after)
    chosen: NDArray[np.bool_] = keep & (later | ((score == after) & (rows > row)))
    return chosen


def _ordered(
    arrays: ResultArrays, f: TableFilter, cursor: str | None, first: int | None = None
) -> NDArray[np.intp]:
    """Positions of the selected results in table order; only the first ``first`` when
    given (ties at the cut included, so the sort still breaks them by row)."""
    at = np.flatnonzero(_selected(arrays, f, cursor))
    if f.sort == "row":  # the arrays are in row order already
        return at if first is None else at[:first]
    key = arrays.score[at] if f.sort == "score_asc" else -arrays.score[at]
    if first is not None and 0 < first < len(at):
        cut = np.partition(key, first - 1)[first - 1]
        near = key <= cut
        at, key = at[near], key[near]
    order = at[np.lexsort((arrays.row_index[at], key))]
    return order if first is None else order[:first]


def _cursor(f: TableFilter, arrays: ResultArrays, k: int) -> str:
    row = int(arrays.row_index[k])
    return str(row) if f.sort == "row" else f"{float(arrays.score[k])!r}:{row}"


def _matching(
    conn: Connection,
    run_id: str,
    arrays: ResultArrays,
    window: NDArray[np.intp],
    text: str,
    limit: int,
) -> list[int]:
    """Up to ``limit`` positions of ``window`` (in its order) whose result's texts or row's
    model output hold ``text`` (lower case) in any case.

    The input rows are stored in blocks of JSON (``engine/storage/run_blocks.py``): the
    model outputs are read a block at a time, only for the results whose own text does
    not match, and not past the page's last match.
    """
    blocks: dict[int, dict[int, dict[str, Any]]] = {}
    matched: list[int] = []
    extras = arrays.extras  # most results have none: a row's model output is then all to read
    for k, index in zip(window.tolist(), arrays.row_index[window].tolist(), strict=True):
        extra = extras.get(k)
        if extra is None or not _contains(
            text, extra.get("explanation"), extra.get("error"), extra.get("output")
        ):
            start = index - index % ROWS_PER_BLOCK
            block = blocks.get(start)
            if block is None:
                block = blocks[start] = read_rows_at(
                    conn, run_id, range(start, start + ROWS_PER_BLOCK)
                )
            row = block.get(index)
            output = None if row is None else row.get("model_output")
            if not (isinstance(output, str) and text in output.lower()):
                continue
        matched.append(k)
        if len(matched) >= limit:
            break
    return matched


def _rows(
    conn: Connection, run_id: str, check_index: int, arrays: ResultArrays, at: list[int]
) -> list[TableRow]:
    """The table's rows of the results at positions ``at``, with their rows' inputs."""
    results = [arrays.stored(check_index, k) for k in at]
    inputs = _inputs(conn, run_id, [r.row_index for r in results])
    return [_row(r, inputs.get(r.row_index, {})) for r in results]


def _inputs(conn: Connection, run_id: str, indices: list[int]) -> dict[int, dict[str, Any]]:
    """The input rows at ``indices``, read a run of nearby rows at a time: a page sorted by
    score holds rows from all over the run, and one read from its lowest to its highest
    would fetch every block in between."""
    out: dict[int, dict[str, Any]] = {}
    group: list[int] = []
    for index in sorted(set(indices)):
        if group and index - group[-1] >= ROWS_PER_BLOCK:
            out.update(read_rows_at(conn, run_id, group))
            group = []
        group.append(index)
    if group:
        out.update(read_rows_at(conn, run_id, group))
    return out


def _row(r: StoredResult, d: dict[str, Any]) -> TableRow:
    return TableRow(
        row_index=r.row_index,
        row_id=None if d.get("id") is None else str(d["id"]),
        model_output=str(d.get("model_output", "")),
        scenario_input=d.get("scenario_input"),
        status=r.status,
        score=r.score,
        explanation=r.explanation,
        error=r.error,
        scenario_result=d.get("scenario_result"),
        passed=r.passed,
        model=r.model,
        metadata=r.metadata,
    )


def read_page(
    db: Engine, run_id: str, f: TableFilter, cursor: str | None = None, limit: int = PAGE_SIZE
) -> TablePage:
    """One page of the table after ``cursor`` (None: the first page).

    The caller has already checked that ``run_id`` belongs to the signed-in tenant. A
    cursor that does not parse raises ``ValueError``.
    """
    with db.connect() as conn:
        arrays = check_results(conn, run_id, f.check_index)
        if not f.text:
            at = _ordered(arrays, f, cursor, limit + 1).tolist()
            window_end: str | None = None
        else:
            window = _ordered(arrays, f, cursor, SEARCH_WINDOW)
            at = _matching(conn, run_id, arrays, window, f.text.lower(), limit + 1)
            full = len(window) >= SEARCH_WINDOW
            window_end = _cursor(f, arrays, int(window[-1])) if full else None
        more = len(at) > limit
        at = at[:limit]
        rows = _rows(conn, run_id, f.check_index, arrays, at)
    if more and at:
        return TablePage(rows, _cursor(f, arrays, at[-1]))
    if window_end is not None:  # fewer matches than a page in this window: search on
        return TablePage(rows, window_end, searched=SEARCH_WINDOW)
    return TablePage(rows, None)


def iter_filtered(db: Engine, run_id: str, f: TableFilter, batch: int = 2000) -> Iterator[TableRow]:
    """Every row the filter selects, in table order (for CSV and JSONL export)."""
    with db.connect() as conn:
        arrays = check_results(conn, run_id, f.check_index)
    order = _ordered(arrays, f, None)
    text = f.text.lower() if f.text else None
    for first in range(0, len(order), batch):
        at = order[first : first + batch]
        with db.connect() as conn:  # closed before the rows go out: a client may read slowly
            chosen = (
                at.tolist() if text is None else _matching(conn, run_id, arrays, at, text, batch)
            )
            rows = _rows(conn, run_id, f.check_index, arrays, chosen)
        yield from rows


def results_of_row(db: Engine, run_id: str, row_index: int) -> dict[int, StoredResult]:
    """Every check's result on one row, by check index (the row page)."""
    with db.connect() as conn:
        return results_at_row(conn, run_id, row_index)
