"""The run page's row table: filtered, sorted, keyset-paginated reads of one check's results.

Every page is one indexed range scan: the cursor is the last row's
``(row_index)`` or ``(score_num, row_index)``, never an offset, so page 20,000
of a 1,000,000-row run costs what page 1 costs (migration 0005 adds the
``(run_id, check_index, status, row_index)`` and ``(run_id, check_index,
score_num, row_index)`` indexes the filters and sorts use).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, and_, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from engine.storage.tables import ResultRow, RunInputRow

SORTS = ("row", "score_asc", "score_desc")
PAGE_SIZE = 50


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


@dataclass(frozen=True)
class TablePage:
    rows: list[TableRow]
    next_cursor: str | None


def _where(run_id: str, f: TableFilter) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = [
        ResultRow.run_id == run_id,
        ResultRow.check_index == f.check_index,
    ]
    if f.status:
        where.append(ResultRow.status == f.status)
    if f.min_score is not None:
        where.append(ResultRow.score_num >= f.min_score)
    if f.max_score is not None:
        where.append(ResultRow.score_num <= f.max_score)
    if f.sort != "row":
        where.append(ResultRow.score_num.is_not(None))
    if f.text:
        pattern = f"%{f.text}%"
        where.append(
            or_(
                ResultRow.explanation.like(pattern),
                ResultRow.error.like(pattern),
                ResultRow.output.like(pattern),
            )
        )
    return where


def _after(f: TableFilter, cursor: str | None) -> list[ColumnElement[bool]]:
    if not cursor:
        return []
    if f.sort == "row":
        return [ResultRow.row_index > int(cursor)]
    score_text, _, row_text = cursor.partition(":")
    score, row = float(score_text), int(row_text)
    if f.sort == "score_asc":
        return [
            ResultRow.score_num >= score,  # bounds the index range; the OR alone scans
            or_(
                ResultRow.score_num > score,
                and_(ResultRow.score_num == score, ResultRow.row_index > row),
            ),
        ]
    return [
        ResultRow.score_num <= score,
        or_(
            ResultRow.score_num < score,
            and_(ResultRow.score_num == score, ResultRow.row_index > row),
        ),
    ]


def _order(f: TableFilter) -> list[Any]:
    if f.sort == "score_asc":
        return [ResultRow.score_num.asc(), ResultRow.row_index]
    if f.sort == "score_desc":
        return [ResultRow.score_num.desc(), ResultRow.row_index]
    return [ResultRow.row_index]


def _results(
    db: Engine, run_id: str, f: TableFilter, cursor: str | None, limit: int
) -> list[ResultRow]:
    query = (
        select(ResultRow)
        .where(*_where(run_id, f), *_after(f, cursor))
        .order_by(*_order(f))
        .limit(limit)
    )
    with Session(db) as s:
        rows = list(s.scalars(query))
        s.expunge_all()
        return rows


def _inputs(db: Engine, run_id: str, indices: list[int]) -> dict[int, dict[str, Any]]:
    if not indices:
        return {}
    with db.connect() as conn:
        found = conn.execute(
            select(RunInputRow.row_index, RunInputRow.data).where(
                RunInputRow.run_id == run_id, RunInputRow.row_index.in_(indices)
            )
        )
        return {int(i): dict(d) for i, d in found}


def read_page(
    db: Engine, run_id: str, f: TableFilter, cursor: str | None = None, limit: int = PAGE_SIZE
) -> TablePage:
    """One page of the table after ``cursor`` (None: the first page).

    The caller has already checked that ``run_id`` belongs to the signed-in tenant.
    """
    results = _results(db, run_id, f, cursor, limit + 1)
    more = len(results) > limit
    results = results[:limit]
    inputs = _inputs(db, run_id, [r.row_index for r in results])
    rows = [
        TableRow(
            row_index=r.row_index,
            row_id=None if (d := inputs.get(r.row_index, {})).get("id") is None else str(d["id"]),
            model_output=str(d.get("model_output", "")),
            scenario_input=d.get("scenario_input"),
            status=r.status,
            score=r.score,
            explanation=r.explanation,
            error=r.error,
        )
        for r in results
    ]
    next_cursor: str | None = None
    if more and results:
        last = results[-1]
        next_cursor = (
            str(last.row_index) if f.sort == "row" else f"{last.score_num!r}:{last.row_index}"
        )
    return TablePage(rows, next_cursor)


def iter_filtered(db: Engine, run_id: str, f: TableFilter, batch: int = 2000) -> Iterator[TableRow]:
    """Every row the filter selects, in table order (for CSV and JSONL export)."""
    cursor: str | None = None
    while True:
        page = read_page(db, run_id, f, cursor, batch)
        yield from page.rows
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def results_of_row(db: Engine, run_id: str, row_index: int) -> dict[int, ResultRow]:
    """Every check's result on one row, by check index (the row page)."""
    with Session(db) as s:
        found = list(
            s.scalars(
                select(ResultRow).where(
                    ResultRow.run_id == run_id, ResultRow.row_index == row_index
                )
            )
        )
        s.expunge_all()
    return {r.check_index: r for r in found}
