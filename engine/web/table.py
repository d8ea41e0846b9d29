"""The run page's row table: filtered, sorted, keyset-paginated reads of one check's results.

Every page is one indexed range scan: the cursor is the last row's
``(row_index)`` or ``(score_num, row_index)``, never an offset, so page 20,000
of a 1,000,000-row run costs what page 1 costs (migration 0005 adds the
``(run_id, check_index, status, row_index)`` and ``(run_id, check_index,
score_num, row_index)`` indexes the filters and sorts use). A text search
(a case-insensitive substring of the model output, explanation, error or
captured output; ``%`` and ``_`` match themselves) has no index: it reads
at most ``SEARCH_WINDOW`` results per page, so a rare match costs a few pages
of "searched on", never one page that reads a million rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, and_, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from engine.runs.export import FIELDS, record
from engine.storage.run_blocks import ROWS_PER_BLOCK, read_rows_at
from engine.storage.tables import ResultRow

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


def _cursor(f: TableFilter, row_index: int, score_num: float | None) -> str:
    return str(row_index) if f.sort == "row" else f"{score_num!r}:{row_index}"


def _results(
    db: Engine, run_id: str, f: TableFilter, cursor: str | None, limit: int
) -> tuple[list[ResultRow], str | None]:
    """Up to ``limit`` results after ``cursor``; with a text search, also where its window
    ended when it read ``SEARCH_WINDOW`` results (None: it reached the end)."""
    scan = select(ResultRow).where(*_where(run_id, f), *_after(f, cursor)).order_by(*_order(f))
    with Session(db) as s:
        if not f.text:
            rows = list(s.scalars(scan.limit(limit)))
            s.expunge_all()
            return rows, None
        rows = _search(s, run_id, f, cursor, limit)
        s.expunge_all()
        last = s.execute(
            select(ResultRow.row_index, ResultRow.score_num)
            .where(*_where(run_id, f), *_after(f, cursor))
            .order_by(*_order(f))
            .offset(SEARCH_WINDOW - 1)
            .limit(1)
        ).first()
    return rows, None if last is None else _cursor(f, int(last[0]), last[1])


def _search(
    s: Session, run_id: str, f: TableFilter, cursor: str | None, limit: int
) -> list[ResultRow]:
    """Up to ``limit`` results of the window after ``cursor`` whose text or row's model
    output holds ``f.text`` in any case, in table order.

    The input rows are stored in blocks of JSON (``engine/storage/run_blocks.py``), which
    SQL does not look inside: the model outputs are read a block at a time, only for the
    results whose own text does not match, and not past the page's last match.
    """
    text = (f.text or "").lower()
    window = s.execute(
        select(ResultRow.row_index, ResultRow.explanation, ResultRow.error, ResultRow.output)
        .where(*_where(run_id, f), *_after(f, cursor))
        .order_by(*_order(f))
        .limit(SEARCH_WINDOW)
    ).all()
    blocks: dict[int, dict[int, dict[str, Any]]] = {}
    matched: list[int] = []
    for index, explanation, error, output in window:
        if not _contains(text, explanation, error, output):
            start = index - index % ROWS_PER_BLOCK
            if start not in blocks:
                span = range(start, start + ROWS_PER_BLOCK)
                blocks[start] = read_rows_at(s.connection(), run_id, span)
            if not _contains(text, blocks[start].get(index, {}).get("model_output")):
                continue
        matched.append(index)
        if len(matched) >= limit:
            break
    if not matched:
        return []
    found = {
        r.row_index: r
        for r in s.scalars(
            select(ResultRow).where(
                ResultRow.run_id == run_id,
                ResultRow.check_index == f.check_index,
                ResultRow.row_index.in_(matched),
            )
        )
    }
    return [found[i] for i in matched if i in found]


def _inputs(db: Engine, run_id: str, indices: list[int]) -> dict[int, dict[str, Any]]:
    if not indices:
        return {}
    with db.connect() as conn:
        return read_rows_at(conn, run_id, indices)


def read_page(
    db: Engine, run_id: str, f: TableFilter, cursor: str | None = None, limit: int = PAGE_SIZE
) -> TablePage:
    """One page of the table after ``cursor`` (None: the first page).

    The caller has already checked that ``run_id`` belongs to the signed-in tenant.
    """
    results, window_end = _results(db, run_id, f, cursor, limit + 1)
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
            scenario_result=d.get("scenario_result"),
            passed=r.passed,
            model=r.model,
            metadata=r.result_metadata,
        )
        for r in results
    ]
    next_cursor: str | None = None
    if more and results:
        next_cursor = _cursor(f, results[-1].row_index, results[-1].score_num)
    elif window_end is not None:  # fewer matches than a page in this window: search on
        return TablePage(rows, window_end, searched=SEARCH_WINDOW)
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
