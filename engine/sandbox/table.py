"""Results as columns: what ``engine.score_table`` returns, filled from result blocks.

A :class:`ScoreTable` holds one entry per row, in row order, as numpy arrays: no Python
object is made per row on the way from the sandbox's blocks to the caller. The text
columns (error, explanation, output, model) are object arrays that hold ``None`` for
the rows without one, which for a healthy run is nearly all of them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
from pydantic import TypeAdapter, ValidationError

from engine.contract import SCORE_KINDS, Status
from engine.errors import InvalidRequestError
from engine.models import IndexedRow, Row, RowResult, unchecked
from engine.row_errors import request_row, shape_problem, value_problem
from engine.sandbox.blocks import STATUS_INDEX, STATUS_NAMES, ResultBlock, python_score

#: Score kinds as names ("" for a row without a score), for ``output_type``.
_KIND_NAMES = np.array([kind.value if kind is not None else "" for kind in SCORE_KINDS])
_KIND_INDEX = {str(name): kind for kind, name in enumerate(_KIND_NAMES)}
_BOOL, _INT, _FLOAT = (SCORE_KINDS.index(kind) for kind in SCORE_KINDS[1:])
_TEXT_COLUMNS = ("error", "explanation", "output", "model")


@dataclass(frozen=True)
class ScoreTable:
    """One check's results over many rows, as columns (``len(table)`` rows, in order).

    ``status`` holds status names (``"ok"``, ``"error"``, ...); ``score`` is a float
    (a bool score is 0.0 or 1.0, an int score its value) and NaN where the row has none;
    ``output_type`` is ``"bool"``, ``"int"``, ``"float"`` or ``""``. ``error``,
    ``explanation``, ``output`` and ``model`` are object arrays of str or None.
    """

    status: npt.NDArray[np.str_]
    score: npt.NDArray[np.float64]
    output_type: npt.NDArray[np.str_]
    duration_ms: npt.NDArray[np.float64]
    error: npt.NDArray[np.object_]
    explanation: npt.NDArray[np.object_]
    output: npt.NDArray[np.object_]
    model: npt.NDArray[np.object_]
    #: Exact int scores past 2**53 (``score`` holds them as the nearest float), by row.
    exact_scores: Mapping[int, int]

    def __len__(self) -> int:
        return len(self.status)

    def counts(self) -> dict[str, int]:
        """How many rows have each status (only the statuses that occur)."""
        names, counts = np.unique(self.status, return_counts=True)
        return {str(name): int(count) for name, count in zip(names, counts, strict=True)}

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        """The columns by name (for ``pandas.DataFrame(table.columns())``, say)."""
        return {
            "status": self.status,
            "score": self.score,
            "output_type": self.output_type,
            "duration_ms": self.duration_ms,
            **{name: getattr(self, name) for name in _TEXT_COLUMNS},
        }

    def row_result(self, k: int) -> RowResult:
        """Row ``k`` as a :class:`RowResult` (without its id, check name or pass flag)."""
        value: bool | int | float | None = self.exact_scores.get(k)
        if value is None:
            kind = _KIND_INDEX[str(self.output_type[k])]
            value = python_score(kind, float(self.score[k]))
        return RowResult(
            status=Status(str(self.status[k])),
            score=value,
            duration_ms=float(self.duration_ms[k]),
            **{name: getattr(self, name)[k] for name in _TEXT_COLUMNS},
        )


class TablePart:
    """The results of rows ``start:start + size`` as blocks (or single results) arrive."""

    def __init__(self, start: int, size: int) -> None:
        self.start = start
        self.statuses = np.full(size, 255, dtype=np.uint8)  # 255: no result yet
        self.kinds = np.zeros(size, dtype=np.uint8)
        self.scores = np.full(size, np.nan)
        self.ms = np.zeros(size)
        self.text: dict[str, dict[int, str]] = {name: {} for name in _TEXT_COLUMNS}
        self.exact: dict[int, int] = {}

    def deliver_block(self, rows: Sequence[IndexedRow], block: ResultBlock) -> None:
        at = rows[0][0] - self.start
        end = at + len(block)
        self.statuses[at:end] = block.statuses
        self.kinds[at:end] = block.kinds
        self.scores[at:end] = block.scores
        self.ms[at:end] = block.ms
        for k, extra in block.extras.items():
            for name in ("error", "explanation", "output"):
                value = getattr(extra, name)
                if value is not None:
                    self.text[name][at + k] = value
            if extra.score is not None:
                self.exact[self.start + at + k] = extra.score
        for k, model in block.served_by.items():
            self.text["model"][at + k] = model

    def deliver(self, index: int, result: RowResult) -> None:
        at = index - self.start
        self.statuses[at] = STATUS_INDEX[result.status]
        self.ms[at] = result.duration_ms
        score = result.score
        if score is not None:
            if isinstance(score, bool):
                self.kinds[at], self.scores[at] = _BOOL, float(score)
            elif isinstance(score, int):
                self.kinds[at], self.scores[at] = _INT, float(score)
                if abs(score) > 2**53:
                    self.exact[index] = score
            else:
                self.kinds[at], self.scores[at] = _FLOAT, score
        for name in _TEXT_COLUMNS:
            value = getattr(result, name)
            if value is not None:
                self.text[name][at] = value

    def missing(self) -> list[int]:
        return [self.start + int(k) for k in np.flatnonzero(self.statuses == 255)[:10]]


def assemble(parts: Sequence[TablePart]) -> ScoreTable:
    """One table from the parts, in order."""
    size = sum(len(part.statuses) for part in parts)
    statuses = np.concatenate([p.statuses for p in parts]) if parts else np.zeros(0, np.uint8)
    kinds = np.concatenate([p.kinds for p in parts]) if parts else np.zeros(0, np.uint8)
    text: dict[str, npt.NDArray[np.object_]] = {}
    for name in _TEXT_COLUMNS:
        column = np.full(size, None, dtype=object)
        for part in parts:
            for k, value in part.text[name].items():
                column[part.start + k] = value
        text[name] = column
    exact: dict[int, int] = {}
    for part in parts:
        exact.update(part.exact)
    return ScoreTable(
        status=STATUS_NAMES[statuses],
        score=np.concatenate([p.scores for p in parts]) if parts else np.zeros(0),
        output_type=_KIND_NAMES[kinds],
        duration_ms=np.concatenate([p.ms for p in parts]) if parts else np.zeros(0),
        exact_scores=exact,
        **text,
    )


def row_chunks(
    rows: Iterable[Row | Mapping[str, Any]] | Mapping[str, Sequence[Any]], size: int
) -> Iterator[list[Row]]:
    """``rows`` as lists of at most ``size`` :class:`Row` values, made a chunk at a time.

    ``rows`` is an iterable of rows (dicts or Row values), or columns: a mapping of field
    name to a sequence (list, numpy array, pandas Series) with one entry per row, which
    must hold ``model_output``. A bad row raises InvalidRequestError naming its index.
    """
    if isinstance(rows, Mapping) and not isinstance(rows.get("model_output"), str):
        yield from _column_chunks(rows, size)
        return
    chunk: list[Row] = []
    for index, row in enumerate(rows):
        chunk.append(as_row(index, row))  # type: ignore[arg-type]  # the mapping case is above
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def as_row(index: int, row: Row | Mapping[str, Any]) -> Row:
    """A :class:`Row` from a dict or a Row; a bad row raises InvalidRequestError naming it."""
    if isinstance(row, Row):
        return row
    try:
        return Row.model_validate(row)
    except ValidationError as exc:
        problem = shape_problem(row) or value_problem(exc)
        raise InvalidRequestError(f"{request_row(index)}: {problem}") from exc


def _column_chunks(columns: Mapping[str, Sequence[Any]], size: int) -> Iterator[list[Row]]:
    """Columns as Row chunks: each column checked in one pydantic call per chunk, each Row
    then made without validating it again (a Row a row costs more than scoring it)."""
    fields = Row.__pydantic_fields__
    unknown = sorted(str(name) for name in columns if name not in fields)
    if unknown:
        raise InvalidRequestError(
            f"unknown row field(s) {', '.join(unknown)}; a row may have {', '.join(fields)}"
        )
    if "model_output" not in columns:
        raise InvalidRequestError("columns need a model_output column, one entry per row")
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidRequestError(f"the columns differ in length: {lengths}")
    total = lengths["model_output"]
    names = list(columns)
    absent = {name: info.get_default() for name, info in fields.items() if name not in columns}
    absent.pop("metadata", None)  # a dict of its own for each row, below
    given = frozenset(names)
    for start in range(0, total, size):
        stop = min(total, start + size)
        checked = [_checked(name, columns[name][start:stop], start) for name in names]
        chunk = []
        for values in zip(*checked, strict=True):
            row = dict(zip(names, values, strict=True))
            row.update(absent)
            row.setdefault("metadata", {})
            chunk.append(unchecked(Row, row, set(given)))  # each column checked above
        yield chunk


@functools.cache
def _column_adapter(name: str) -> TypeAdapter[list[Any]]:
    """Validates a whole column of Row field ``name`` at once, with the field's own rules."""
    info = Row.__pydantic_fields__[name]
    item: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return TypeAdapter(list[item])


def _checked(name: str, values: Any, start: int) -> list[Any]:
    try:
        return _column_adapter(name).validate_python(_as_list(values))
    except ValidationError as exc:
        error = exc.errors()[0]
        at = error["loc"][0] if error["loc"] and isinstance(error["loc"][0], int) else 0
        message = str(error["msg"]).removeprefix("Value error, ")
        raise InvalidRequestError(f"{request_row(start + at)}: {name}: {message}") from exc


def _as_list(values: Any) -> list[Any]:
    """A column slice as Python values (numpy and pandas give theirs with ``tolist``)."""
    tolist = getattr(values, "tolist", None)
    return list(tolist()) if callable(tolist) else list(values)
