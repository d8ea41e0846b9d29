"""Result blocks: a job's rows scored as columns, not one record per row (host side).

In block mode (``Job.result_blocks``) the harness's child writes each row's status code,
score kind, score and duration into columns it shares with the harness's parent, and the
parent sends finished rows to the host as one ``block`` record: the four columns as
little-endian numpy buffers in base64, plus the few rows with more to say (an error, an
explanation, what the check printed, a pass flag, metadata) as ``extras``. The parent no
longer parses or checks each row; the host does it here, for a whole block in a few numpy
operations:

* a status byte must name a status a check may report (``CHECK_STATUSES``): ``timeout``,
  ``crashed``, ``judge_error`` and ``sandbox_error`` have no code, so a check cannot forge
  them; the host derives those itself;
* an ``ok`` row has a finite score of its kind (a bool is 0 or 1, an int is whole and fits
  64 bits, and past 2**53 comes with its exact value in the row's extras, which agrees
  with the column), no error; any other row has no score, no pass flag, no metadata, and
  an error;
* durations are finite and not negative; extras name rows of the block, once each;
* no duration is longer than the job could have run (:func:`duration_fault`, checked by
  the runner, which knows the job's wall time).

Anything else is a protocol fault (the check's doing: its row is ``crashed``).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from engine.contract import CHECK_STATUSES, INT_MAX, INT_MIN, SCORE_KINDS, OutputType, Status
from engine.models import ResultColumns, RowResult, unchecked

#: Every status, in one order: a block's ``statuses`` are indices into this.
ALL_STATUSES: tuple[Status, ...] = tuple(Status)
STATUS_INDEX: dict[Status, int] = {status: index for index, status in enumerate(ALL_STATUSES)}
#: A check's status code (its index in CHECK_STATUSES) -> its index in ALL_STATUSES.
_FROM_WIRE = np.array([STATUS_INDEX[status] for status in CHECK_STATUSES], dtype=np.uint8)
_OK = STATUS_INDEX[Status.OK]
_BOOL, _INT, _FLOAT = (SCORE_KINDS.index(kind) for kind in OutputType)
#: Status names as a numpy array, for ``statuses`` -> names in one ``take``.
STATUS_NAMES = np.array([status.value for status in ALL_STATUSES])
#: Rows one block may carry (the record's size bounds it far below this).
MAX_BLOCK_ROWS = 100_000
#: Ints past this magnitude travel exactly in a row's extras (a float64 column loses them).
EXACT_FLOAT_INT = 2**53
#: The 64-bit range as floats: the column of an int score never lies outside it.
_INT_BOUND = float(2**63)


class RowExtras(BaseModel):
    """What a row has to say beyond its columns."""

    model_config = ConfigDict(extra="forbid")

    error: str | None = Field(default=None, max_length=16384)
    explanation: str | None = Field(default=None, max_length=8192)
    output: str | None = Field(default=None, max_length=16384)
    passed: bool | None = None
    metadata: dict[str, Any] | None = None
    #: An int score beyond 2**53, exactly (the score column holds a float).
    score: int | None = None


@dataclass
class ResultBlock:
    """Consecutive rows of a job, scored: columns, plus the rows with more to say.

    ``statuses`` index :data:`ALL_STATUSES`; ``kinds`` index ``SCORE_KINDS``; ``scores``
    is NaN where a row has none. The host may change a row after decoding (a model call
    that failed upstream makes it ``judge_error``; the model that served it).
    """

    first: int  # the job's index of row 0
    statuses: npt.NDArray[np.uint8]
    kinds: npt.NDArray[np.uint8]
    scores: npt.NDArray[np.float64]
    ms: npt.NDArray[np.float64]
    extras: dict[int, RowExtras] = field(default_factory=dict)
    served_by: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.statuses)

    def status(self, k: int) -> Status:
        return ALL_STATUSES[int(self.statuses[k])]

    def score(self, k: int) -> bool | int | float | None:
        extra = self.extras.get(k)
        if extra is not None and extra.score is not None:
            return extra.score  # an int past 2**53, exactly
        return python_score(int(self.kinds[k]), float(self.scores[k]))

    def set_status(self, k: int, status: Status, error: str) -> None:
        """Row ``k`` is ``status`` (a host-decided one) with ``error``, and no score."""
        self.statuses[k] = STATUS_INDEX[status]
        self.kinds[k] = 0
        self.scores[k] = np.nan
        old = self.extras.get(k)
        self.extras[k] = RowExtras(error=error, output=old.output if old else None)

    def has_status(self, statuses: Iterable[str]) -> bool:
        """Whether any row has one of ``statuses``."""
        wanted = [STATUS_INDEX[Status(status)] for status in statuses]
        return bool(np.isin(self.statuses, wanted).any())

    def columns(self, row_index: Sequence[int]) -> ResultColumns:
        """The block as :class:`ResultColumns` (``row_index``: each row's index in its run)."""
        scores = _python_scores(self.kinds, self.scores)
        extras: dict[int, dict[str, Any]] = {}
        for k, extra in self.extras.items():
            fields = extra.model_dump(exclude_none=True)
            exact = fields.pop("score", None)
            if exact is not None:
                scores[k] = exact
            if fields:
                extras[k] = fields
        for k, model in self.served_by.items():
            extras.setdefault(k, {})["model"] = model
        return ResultColumns(
            row_index=row_index,
            status=STATUS_NAMES[self.statuses].tolist(),
            score=scores,
            duration_ms=self.ms.tolist(),
            extras=extras,
        )

    def row_result(
        self, k: int, row_id: str | int | None, check: str | None, version: int | None
    ) -> RowResult:
        """Row ``k`` as a :class:`RowResult` (built without validation: decoding checked it)."""
        extra = self.extras.get(k)
        return _constructed(
            {
                "row_id": row_id,
                "check": check,
                "version": version,
                "status": self.status(k),
                "score": self.score(k),
                "explanation": extra.explanation if extra else None,
                "error": extra.error if extra else None,
                "output": extra.output if extra else None,
                "duration_ms": float(self.ms[k]),
                "model": self.served_by.get(k),
                "passed": extra.passed if extra else None,
                "metadata": extra.metadata if extra else None,
            }
        )


def _python_scores(
    kinds: npt.NDArray[np.uint8], values: npt.NDArray[np.float64]
) -> list[bool | int | float | None]:
    """:func:`python_score` of each row; a block of one kind of bool or float scores (a
    check's usual block) in one numpy call, not a Python call a row."""
    if len(kinds) and bool((kinds == kinds[0]).all()):
        if kinds[0] == _BOOL:
            bools: list[bool | int | float | None] = (values == 1.0).tolist()
            return bools
        if kinds[0] == _FLOAT:
            floats: list[bool | int | float | None] = values.tolist()
            return floats
    pairs = zip(kinds.tolist(), values.tolist(), strict=True)
    return [python_score(kind, value) for kind, value in pairs]


def python_score(kind: int, value: float) -> bool | int | float | None:
    """A score column's value as the check returned it, by its kind."""
    if kind == 0:
        return None
    if kind == _BOOL:
        return value == 1.0
    if kind == _INT:
        return int(value)
    return value


_RESULT_FIELDS = frozenset(RowResult.__pydantic_fields__)


def _constructed(values: dict[str, Any]) -> RowResult:
    """A RowResult holding ``values`` (every field, checked when the block was decoded)."""
    return unchecked(RowResult, values, set(_RESULT_FIELDS))


def _column(text: str, dtype: type[np.generic], rows: int, name: str) -> npt.NDArray[Any]:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"block column {name!r} is not base64") from exc
    size = np.dtype(dtype).itemsize
    if len(raw) != rows * size:
        raise ValueError(f"block column {name!r} holds {len(raw)} bytes for {rows} rows")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)


class BlockRecord(BaseModel):
    """A ``block`` record off the wire; validating it decodes and checks its columns."""

    model_config = ConfigDict(extra="forbid")

    t: Literal["block"]
    i: int = Field(ge=0)
    n: int = Field(ge=1, le=MAX_BLOCK_ROWS)
    codes: str
    kinds: str
    scores: str
    ms: str
    extras: list[tuple[int, RowExtras]] = Field(default_factory=list)
    _block: ResultBlock | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _decode(self) -> BlockRecord:
        self._block = decode(self)
        return self

    @property
    def block(self) -> ResultBlock:
        assert self._block is not None  # set by validation
        return self._block


#: Blocks of at most this many rows are decoded and checked row by row in plain Python:
#: for a few rows, the twenty-odd numpy calls of :func:`decode_columns` cost more than the
#: rows (a one-row ``/v1/score`` pays them on every request). Both paths refuse the same
#: blocks with the same words (tests/unit/test_small_blocks.py compares them).
SMALL_BLOCK_ROWS = 16


def decode(record: BlockRecord) -> ResultBlock:
    """The record's columns, checked as the module's docstring says (ValueError if not)."""
    if record.n <= SMALL_BLOCK_ROWS:
        return decode_rows(record)
    return decode_columns(record)


def decode_columns(record: BlockRecord) -> ResultBlock:
    """:func:`decode` for any block, with numpy on whole columns."""
    n = record.n
    codes = _column(record.codes, np.uint8, n, "codes")
    kinds = _column(record.kinds, np.uint8, n, "kinds")
    scores = _column(record.scores, np.float64, n, "scores")
    ms = _column(record.ms, np.float64, n, "ms")
    _check_codes(codes, kinds, ms)
    extras: dict[int, RowExtras] = {}
    for k, extra in record.extras:
        if not 0 <= k < n or k in extras:
            raise ValueError(f"extras for row {k} of a block of {n}")
        extras[k] = extra
    ok = codes == 0
    _check_scores(ok, kinds, scores, extras)
    for k, extra in extras.items():
        _check_extra(codes, kinds, scores, k, extra)
    failed = np.flatnonzero(~ok)
    if failed.size and any(int(k) not in extras for k in failed):
        raise ValueError("a row that is not ok without an error")
    statuses = _FROM_WIRE[codes]
    scores = np.where(ok, scores, np.nan)
    return ResultBlock(record.i, statuses, kinds, scores, ms, extras)


def _raw(text: str, size: int, rows: int, name: str) -> bytes:
    """A column's bytes (``size`` a row), as :func:`_column` checks them."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"block column {name!r} is not base64") from exc
    if len(raw) != rows * size:
        raise ValueError(f"block column {name!r} holds {len(raw)} bytes for {rows} rows")
    return raw


def decode_rows(record: BlockRecord) -> ResultBlock:
    """:func:`decode` for a small block, a row at a time: the same checks in the same
    order as :func:`decode_columns`, the same :class:`ResultBlock`."""
    n = record.n
    codes = _raw(record.codes, 1, n, "codes")
    kinds = _raw(record.kinds, 1, n, "kinds")
    scores = struct.unpack(f"<{n}d", _raw(record.scores, 8, n, "scores"))
    ms = struct.unpack(f"<{n}d", _raw(record.ms, 8, n, "ms"))
    if max(codes) >= len(CHECK_STATUSES):
        raise ValueError(f"status code {max(codes)} is not one a check may report")
    if max(kinds) >= len(SCORE_KINDS):
        raise ValueError(f"score kind {max(kinds)} is unknown")
    if not all(math.isfinite(d) and d >= 0 for d in ms):
        raise ValueError("a row's duration is negative or not finite")
    extras: dict[int, RowExtras] = {}
    for k, extra in record.extras:
        if not 0 <= k < n or k in extras:
            raise ValueError(f"extras for row {k} of a block of {n}")
        extras[k] = extra
    _check_row_scores(codes, kinds, scores, extras)
    for k, extra in extras.items():
        _check_extra(codes, kinds, scores, k, extra)  # type: ignore[arg-type]
    if any(code != 0 and k not in extras for k, code in enumerate(codes)):
        raise ValueError("a row that is not ok without an error")
    return ResultBlock(
        record.i,
        _FROM_WIRE[np.frombuffer(codes, dtype=np.uint8)],
        np.frombuffer(kinds, dtype=np.uint8).copy(),
        np.array([s if c == 0 else math.nan for c, s in zip(codes, scores, strict=True)]),
        np.array(ms, dtype=np.float64),
        extras,
    )


def _check_row_scores(
    codes: bytes, kinds: bytes, scores: tuple[float, ...], extras: Mapping[int, RowExtras]
) -> None:
    """:func:`_check_scores`, a row at a time (the same faults, found in the same order)."""
    if any((kind == 0) == (code == 0) for code, kind in zip(codes, kinds, strict=True)):
        raise ValueError("an ok row without a score, or another row with one")
    if not all(math.isfinite(s) for c, s in zip(codes, scores, strict=True) if c == 0):
        raise ValueError("an ok row's score must be finite")
    if any(kind == _BOOL and s not in (0.0, 1.0) for kind, s in zip(kinds, scores, strict=True)):
        raise ValueError("a bool score that is neither 0 nor 1")
    ints = [s for kind, s in zip(kinds, scores, strict=True) if kind == _INT]
    if any(math.floor(s) != s for s in ints):
        raise ValueError("an int score that is not whole")
    if any(abs(s) > _INT_BOUND for s in ints):
        raise ValueError("an int score past 64 bits")
    for k, (kind, s) in enumerate(zip(kinds, scores, strict=True)):
        if kind == _INT and abs(s) > EXACT_FLOAT_INT:
            exact = extras[k].score if k in extras else None
            if exact is None:  # the harness sends these exactly: the column alone is forged
                raise ValueError("an int score past 2**53 without its exact value")


def _check_codes(
    codes: npt.NDArray[np.uint8], kinds: npt.NDArray[np.uint8], ms: npt.NDArray[np.float64]
) -> None:
    """Statuses a check may report, known score kinds, durations that are real."""
    if codes.size and int(codes.max()) >= len(CHECK_STATUSES):
        raise ValueError(f"status code {int(codes.max())} is not one a check may report")
    if kinds.size and int(kinds.max()) >= len(SCORE_KINDS):
        raise ValueError(f"score kind {int(kinds.max())} is unknown")
    if not np.isfinite(ms).all() or (ms < 0).any():
        raise ValueError("a row's duration is negative or not finite")


def _check_scores(
    ok: npt.NDArray[np.bool_],
    kinds: npt.NDArray[np.uint8],
    scores: npt.NDArray[np.float64],
    extras: Mapping[int, RowExtras],
) -> None:
    """Ok rows and only they carry a score, finite and of its kind."""
    if (kinds[ok] == 0).any() or (kinds[~ok] != 0).any():
        raise ValueError("an ok row without a score, or another row with one")
    if not np.isfinite(scores[ok]).all():
        raise ValueError("an ok row's score must be finite")
    is_bool, is_int = kinds == _BOOL, kinds == _INT
    if ((scores[is_bool] != 0) & (scores[is_bool] != 1)).any():
        raise ValueError("a bool score that is neither 0 nor 1")
    ints = scores[is_int]
    if (np.floor(ints) != ints).any():
        raise ValueError("an int score that is not whole")
    if (np.abs(ints) > _INT_BOUND).any():
        raise ValueError("an int score past 64 bits")
    for k in np.flatnonzero(is_int & (np.abs(scores) > EXACT_FLOAT_INT)).tolist():
        exact = extras[k].score if k in extras else None
        if exact is None:  # the harness sends these exactly: the column alone is forged
            raise ValueError("an int score past 2**53 without its exact value")


def _check_extra(
    codes: npt.NDArray[np.uint8],
    kinds: npt.NDArray[np.uint8],
    scores: npt.NDArray[np.float64],
    k: int,
    extra: RowExtras,
) -> None:
    """Row ``k``'s extras agree with its status: an ok row has no error (and an exact score
    only for its own int score), any other row an error and nothing a score would bring."""
    if codes[k] != 0:
        if extra.error is None or (
            extra.passed is not None or extra.metadata is not None or extra.score is not None
        ):
            raise ValueError(f"a {CHECK_STATUSES[codes[k]].value} row with a score, or no error")
        return
    if extra.error is not None:
        raise ValueError("an ok row with an error")
    if extra.score is not None and (
        kinds[k] != _INT or not INT_MIN <= extra.score <= INT_MAX or float(extra.score) != scores[k]
    ):
        raise ValueError("an exact score for a row without that int score")


def duration_fault(ms: npt.NDArray[np.float64] | float, wall_seconds: float) -> str | None:
    """Why a row's duration is forged (longer than its job's wall time), or None.

    The container is stopped at its wall time, so no row of it can have run longer: a
    duration past it was written by the check, not measured by the harness.
    """
    longest = float(np.max(ms)) if np.size(ms) else 0.0
    if longest <= wall_seconds * 1000:
        return None
    return (
        f"a row's duration of {longest:.6g} ms is longer than the job's wall time "
        f"({wall_seconds:g} s)"
    )
