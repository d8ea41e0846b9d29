"""A check's results on a run's rows as one stored block of columns (``run_result_blocks``).

One database row per result cost the service path three b-tree inserts a result (the
primary key and two browse indexes). A block is one insert per batch of results: the
columns a reader filters and sorts on (row index, status, score, duration) as packed
arrays, and the rare per-row texts (explanation, error, output, pass flag, metadata,
model) in a JSON header, by position. Readers decode blocks into :class:`ResultArrays`
and filter, sort and aggregate with numpy.

The layout (format 1), little-endian::

    b"SRB" version(1 byte) | header length (uint32) | header JSON (UTF-8) | zero padding
    to 8 bytes | score float64[n] | duration_ms float64[n] | row_index int64[n] (absent
    when the header says the rows are contiguous) | status uint8[n] | kind uint8[n]

A later format must keep decoding format 1: blocks are never rewritten after a migration.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.errors import StorageError
from engine.nul import without_nul
from engine.storage.records import StoredResult

__all__ = [
    "EMPTY",
    "FORMAT",
    "KIND_BOOL",
    "KIND_FLOAT",
    "KIND_INT",
    "KIND_NONE",
    "ResultArrays",
    "concat",
    "decode_block",
    "encode_block",
]

FORMAT = 1
_MAGIC = b"SRB"
_HEAD = struct.Struct("<3sBI")

#: A score's kind, a byte a row.
KIND_NONE, KIND_BOOL, KIND_INT, KIND_FLOAT = 0, 1, 2, 3

#: The width of a stored model name (what ``row_results.model`` held, migration 0010).
MODEL_CHARS = 200
#: Ints past this magnitude do not survive a float64: the exact value goes in the extras.
_EXACT_INT = 2**53

#: The texts of a row's extras, cleared of NUL as the old writer cleared them.
_TEXTS = ("explanation", "error", "output")


@dataclass(frozen=True)
class ResultArrays:
    """Results of one check as columns: one decoded block, or several concatenated."""

    row_index: NDArray[np.int64]
    #: Codes into :attr:`statuses`.
    status: NDArray[np.uint8]
    statuses: tuple[str, ...]
    #: :data:`KIND_NONE`, :data:`KIND_BOOL`, :data:`KIND_INT` or :data:`KIND_FLOAT`.
    kind: NDArray[np.uint8]
    #: ``float(score)`` (bools 0.0 and 1.0), NaN where the row has no score.
    score: NDArray[np.float64]
    duration_ms: NDArray[np.float64]
    #: By position in these arrays: ``explanation``, ``error``, ``output``, ``passed``,
    #: ``metadata``, ``model`` where not None, and ``score`` for an int past 2**53.
    extras: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.row_index.shape[0])

    def code(self, status: str) -> int | None:
        """The code of a status name in these arrays, None when no row has it."""
        try:
            return self.statuses.index(status)
        except ValueError:
            return None

    def status_at(self, k: int) -> str:
        return self.statuses[int(self.status[k])]

    def score_at(self, k: int) -> bool | int | float | None:
        kind = int(self.kind[k])
        if kind == KIND_NONE:
            return None
        if kind == KIND_BOOL:
            return bool(self.score[k])
        if kind == KIND_INT:
            exact = self.extras.get(k, {}).get("score")
            return int(exact) if exact is not None else int(self.score[k])
        return float(self.score[k])

    def stored(self, check_index: int, k: int) -> StoredResult:
        """Row ``k`` as the repository returns a result."""
        extra = self.extras.get(k, {})
        return StoredResult(
            check_index,
            int(self.row_index[k]),
            self.status_at(k),
            self.score_at(k),
            extra.get("explanation"),
            extra.get("error"),
            extra.get("output"),
            float(self.duration_ms[k]),
            extra.get("passed"),
            extra.get("metadata"),
            extra.get("model"),
        )

    def take(self, positions: NDArray[np.intp] | Sequence[int]) -> ResultArrays:
        """The rows at ``positions`` (in that order), their extras re-keyed."""
        at = np.asarray(positions, dtype=np.intp)
        extras = self.extras
        kept = {n: extras[k] for n, k in enumerate(at.tolist()) if k in extras} if extras else {}
        return ResultArrays(
            self.row_index[at],
            self.status[at],
            self.statuses,
            self.kind[at],
            self.score[at],
            self.duration_ms[at],
            kept,
        )


def _empty() -> ResultArrays:
    return ResultArrays(
        np.empty(0, np.int64),
        np.empty(0, np.uint8),
        (),
        np.empty(0, np.uint8),
        np.empty(0, np.float64),
        np.empty(0, np.float64),
        {},
    )


#: No results.
EMPTY = _empty()


def _text(value: Any) -> str:
    # a check's own text: a NUL in it must never fail the run's write
    return without_nul(str(value))


def _extra(values: Mapping[str, Any]) -> dict[str, Any]:
    """A row's extras as stored: only what is not None, texts NUL-free, the model cut."""
    kept: dict[str, Any] = {}
    for name in _TEXTS:
        value = values.get(name)
        if value is not None:
            kept[name] = _text(value)
    passed = values.get("passed")
    if passed is not None:
        kept["passed"] = bool(passed)
    metadata = values.get("metadata")
    if metadata is not None:
        kept["metadata"] = metadata
    model = values.get("model")
    if model is not None:
        kept["model"] = str(model)[:MODEL_CHARS]
    return kept


def encode_block(
    row_index: Sequence[int],
    status: Sequence[str],
    score: Sequence[bool | int | float | None],
    duration_ms: Sequence[float],
    extras: Mapping[int, Mapping[str, Any]],
) -> bytes:
    """One block of a check's results (rows in ascending ``row_index`` order, each once);
    ``extras`` by position hold RowResult's ``explanation``, ``error``, ``output``,
    ``passed``, ``metadata`` and ``model``."""
    n = len(row_index)
    if not (len(status) == len(score) == len(duration_ms) == n):
        raise StorageError("a result block's columns differ in length")
    # the statuses in the order they first appear, each row's code looked up in C
    names = {name: code for code, name in enumerate(dict.fromkeys(status))}
    if len(names) > 256:
        raise StorageError("a result block holds more than 256 statuses")
    codes = bytes(map(names.__getitem__, status))
    stored: dict[str, dict[str, Any]] = {}
    for position, found in extras.items():
        kept = _extra(found)
        if kept:
            stored[str(int(position))] = kept
    kinds, values = _score_columns(score, stored)
    rows = np.asarray(row_index, dtype=np.int64) if n else np.empty(0, np.int64)
    contiguous = bool(n == 0 or int(rows[-1]) - int(rows[0]) == n - 1)
    if n > 1 and not bool(np.all(np.diff(rows) > 0)):
        raise StorageError("a result block's rows must be ascending and distinct")
    header: dict[str, Any] = {"n": n, "statuses": list(names)}
    if contiguous:
        header["start"] = int(rows[0]) if n else 0
    if stored:
        header["extras"] = stored
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    pad = -(_HEAD.size + len(head)) % 8
    parts = [
        _HEAD.pack(_MAGIC, FORMAT, len(head) + pad),
        head,
        b" " * pad,  # JSON allows trailing whitespace: the header decodes as it is
        values.tobytes(),
        np.asarray(duration_ms, dtype=np.float64).tobytes() if n else b"",
    ]
    if not contiguous:
        parts.append(rows.tobytes())
    parts.append(codes)
    parts.append(kinds)
    return b"".join(parts)


def _score_columns(
    score: Sequence[bool | int | float | None], stored: dict[str, dict[str, Any]]
) -> tuple[bytes, NDArray[np.float64]]:
    """Each score's kind and its value as a float (NaN for none); an int past 2**53 also
    exactly in ``stored``. Scores all bools or all floats (a check's usual block) are
    taken in one numpy call, not a Python step a row."""
    n = len(score)
    types = set(map(type, score))
    if n and types == {bool}:
        return bytes([KIND_BOOL]) * n, np.array(score, dtype=np.float64)
    if n and types == {float}:
        return bytes([KIND_FLOAT]) * n, np.array(score, dtype=np.float64)
    kinds = bytearray(n)
    values = np.empty(n, np.float64)
    for k, value in enumerate(score):
        if value is None:
            values[k] = math.nan
        elif value is True or value is False:
            kinds[k] = KIND_BOOL
            values[k] = 1.0 if value else 0.0
        elif isinstance(value, int):
            kinds[k] = KIND_INT
            values[k] = float(value)
            if abs(value) > _EXACT_INT:
                stored.setdefault(str(k), {})["score"] = value
        else:
            kinds[k] = KIND_FLOAT
            values[k] = float(value)
    return bytes(kinds), values


def decode_block(data: bytes) -> ResultArrays:
    """The columns of one block (no copy of the numeric arrays: they view ``data``)."""
    buffer = memoryview(data)
    if len(buffer) < _HEAD.size:
        raise StorageError("a stored result block is truncated")
    magic, version, size = _HEAD.unpack_from(buffer)
    if magic != _MAGIC or version != FORMAT:
        raise StorageError(f"a stored result block has an unknown format ({magic!r}, {version})")
    at = _HEAD.size
    header = json.loads(bytes(buffer[at : at + size]))
    at += size
    n = int(header["n"])
    score = np.frombuffer(buffer, np.float64, n, at)
    at += 8 * n
    duration = np.frombuffer(buffer, np.float64, n, at)
    at += 8 * n
    if "start" in header:
        start = int(header["start"])
        rows = np.arange(start, start + n, dtype=np.int64)
    else:
        rows = np.frombuffer(buffer, np.int64, n, at)
        at += 8 * n
    status = np.frombuffer(buffer, np.uint8, n, at)
    kind = np.frombuffer(buffer, np.uint8, n, at + n)
    if at + 2 * n != len(buffer):
        raise StorageError("a stored result block's length does not match its header")
    extras = {int(k): v for k, v in header.get("extras", {}).items()}
    return ResultArrays(rows, status, tuple(header["statuses"]), kind, score, duration, extras)


def concat(parts: Sequence[ResultArrays]) -> ResultArrays:
    """Blocks one after another (callers pass them in row order), with one status table."""
    kept = [p for p in parts if len(p)]
    if not kept:
        return EMPTY
    if len(kept) == 1:
        return kept[0]
    names: dict[str, int] = {}
    status = []
    extras: dict[int, Mapping[str, Any]] = {}
    offset = 0
    for part in kept:
        table = np.array([names.setdefault(s, len(names)) for s in part.statuses], np.uint8)
        status.append(table[part.status])
        for k, extra in part.extras.items():
            extras[offset + k] = extra
        offset += len(part)
    return ResultArrays(
        np.concatenate([p.row_index for p in kept]),
        np.concatenate(status),
        tuple(names),
        np.concatenate([p.kind for p in kept]),
        np.concatenate([p.score for p in kept]),
        np.concatenate([p.duration_ms for p in kept]),
        extras,
    )
