"""Results as columns: what ``engine.score_table`` returns, filled from result blocks.

A :class:`ScoreTable` holds one entry per row, in row order, as numpy arrays: no Python
object is made per row on the way from the sandbox's blocks to the caller. The status
and score type columns are codes (one byte a row) shown as object arrays of the few
names, each name one shared string, so a row costs a pointer, not a string of its own.
The text columns (error, explanation, output, model) are object arrays that hold
``None`` for the rows without one, which for a healthy run is nearly all of them: the
table keeps only the rows that have one, and makes each object array when it is read.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from engine.contract import SCORE_KINDS
from engine.models import IndexedRow, RowResult
from engine.sandbox.blocks import (
    ALL_STATUSES,
    STATUS_INDEX,
    STATUS_NAMES,
    ResultBlock,
    python_score,
)

#: Score kinds as names ("" for a row without a score), for ``output_type``.
_KIND_NAMES = tuple(kind.value if kind is not None else "" for kind in SCORE_KINDS)
#: The names as object arrays: a ``take`` by code gives each row one of these strings.
_KIND_OBJECTS = np.array(_KIND_NAMES, dtype=object)
_STATUS_OBJECTS = np.array([str(name) for name in STATUS_NAMES], dtype=object)
_BOOL, _INT, _FLOAT = (SCORE_KINDS.index(kind) for kind in SCORE_KINDS[1:])
_TEXT_COLUMNS = ("error", "explanation", "output", "model")


class ScoreTable:
    """One check's results over many rows, as columns (``len(table)`` rows, in order).

    ``status`` holds status names (``"ok"``, ``"error"``, ...); ``score`` is a float
    (a bool score is 0.0 or 1.0, an int score its value) and NaN where the row has none;
    ``output_type`` is ``"bool"``, ``"int"``, ``"float"`` or ``""``. Both are object
    arrays of shared name strings; ``status_codes`` holds the same statuses as one byte
    a row, indices into :attr:`STATUSES` (for ``pandas.Categorical.from_codes``, say).
    ``error``, ``explanation``, ``output`` and ``model`` are object arrays of str or None.

    The table keeps codes and only the rows that have a text; each object array is made
    the first time it is read (then kept), so results no one reads cost no memory.
    """

    #: Every status name, in the order of ``status_codes``.
    STATUSES: ClassVar[tuple[str, ...]] = tuple(str(name) for name in STATUS_NAMES)

    def __init__(
        self,
        status_codes: npt.NDArray[np.uint8],
        kind_codes: npt.NDArray[np.uint8],
        score: npt.NDArray[np.float64],
        duration_ms: npt.NDArray[np.float64],
        text: Mapping[str, Mapping[int, str]],
        exact_scores: Mapping[int, int],
    ) -> None:
        self.status_codes = status_codes
        self.score = score
        self.duration_ms = duration_ms
        #: Exact int scores past 2**53 (``score`` holds them as the nearest float), by row.
        self.exact_scores = exact_scores
        self._kinds = kind_codes
        self._text = text

    def __len__(self) -> int:
        return len(self.status_codes)

    @functools.cached_property
    def status(self) -> npt.NDArray[np.object_]:
        """Each row's status name."""
        return _STATUS_OBJECTS.take(self.status_codes)

    @functools.cached_property
    def output_type(self) -> npt.NDArray[np.object_]:
        """Each row's score type: ``"bool"``, ``"int"``, ``"float"``, or ``""``."""
        return _KIND_OBJECTS.take(self._kinds)

    @functools.cached_property
    def error(self) -> npt.NDArray[np.object_]:
        """Each row's error, or None."""
        return self._column("error")

    @functools.cached_property
    def explanation(self) -> npt.NDArray[np.object_]:
        """Each row's explanation, or None."""
        return self._column("explanation")

    @functools.cached_property
    def output(self) -> npt.NDArray[np.object_]:
        """What each row's check printed, or None."""
        return self._column("output")

    @functools.cached_property
    def model(self) -> npt.NDArray[np.object_]:
        """The model that served each row's model calls, or None."""
        return self._column("model")

    def _column(self, name: str) -> npt.NDArray[np.object_]:
        column = np.full(len(self), None, dtype=object)
        for k, value in self._text[name].items():
            column[k] = value
        return column

    def counts(self) -> dict[str, int]:
        """How many rows have each status (only the statuses that occur), by name."""
        counts = np.bincount(self.status_codes, minlength=len(self.STATUSES))
        found = {self.STATUSES[code]: int(n) for code, n in enumerate(counts.tolist()) if n}
        return dict(sorted(found.items()))

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
            value = python_score(int(self._kinds[k]), float(self.score[k]))
        return RowResult(
            status=ALL_STATUSES[int(self.status_codes[k])],
            score=value,
            duration_ms=float(self.duration_ms[k]),
            **{name: self._text[name].get(k) for name in _TEXT_COLUMNS},
        )


class TableColumns:
    """The numeric columns of a table of ``size`` rows, made once for parts to fill."""

    def __init__(self, size: int) -> None:
        self.statuses = np.full(size, 255, dtype=np.uint8)  # 255: no result yet
        self.kinds = np.zeros(size, dtype=np.uint8)
        self.scores = np.full(size, np.nan)
        self.ms = np.zeros(size)


class TablePart:
    """The results of rows ``start:start + size`` as blocks (or single results) arrive.

    With ``into`` (the whole table's columns, when the row count is known) the part fills
    its slice of them in place; otherwise it holds its own, joined by :func:`assemble`.
    """

    def __init__(self, start: int, size: int, into: TableColumns | None = None) -> None:
        self.start = start
        columns = into or TableColumns(size)
        at = slice(start, start + size) if into is not None else slice(0, size)
        self.statuses = columns.statuses[at]  # views: writes land in ``into``
        self.kinds = columns.kinds[at]
        self.scores = columns.scores[at]
        self.ms = columns.ms[at]
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


def assemble(parts: Sequence[TablePart], into: TableColumns | None = None) -> ScoreTable:
    """One table from the parts, in order (``into``: the columns they filled, if shared)."""
    if into is None:
        into = TableColumns(0)
        if parts:
            into.statuses = np.concatenate([p.statuses for p in parts])
            into.kinds = np.concatenate([p.kinds for p in parts])
            into.scores = np.concatenate([p.scores for p in parts])
            into.ms = np.concatenate([p.ms for p in parts])
    text: dict[str, dict[int, str]] = {name: {} for name in _TEXT_COLUMNS}
    exact: dict[int, int] = {}
    for part in parts:
        for name in _TEXT_COLUMNS:
            text[name].update((part.start + k, value) for k, value in part.text[name].items())
        exact.update(part.exact)
    return ScoreTable(into.statuses, into.kinds, into.scores, into.ms, text, exact)
