"""Labelled pairs as a contingency table: a row per human level, a column per check value.

Every statistic of the room is a function of this table of counts, so a bootstrap
resample is just another table (built with one ``bincount``) and the jackknife needs one
table per distinct cell rather than one per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PairTable:
    """n (human, check) pairs coded as cells of a ``k x u`` table."""

    #: The human labels' levels, in order (row labels).
    human_levels: tuple[Any, ...]
    #: The check's distinct values, in order (column labels).
    check_values: tuple[Any, ...]
    human_index: IntArray
    check_index: IntArray

    @property
    def n(self) -> int:
        """How many pairs."""
        return int(self.human_index.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        """``(k, u)``: human levels by check values."""
        return len(self.human_levels), len(self.check_values)

    def codes(self) -> IntArray:
        """Each pair's cell as one integer, ``human * u + check``."""
        return self.human_index * len(self.check_values) + self.check_index

    def counts(self) -> FloatArray:
        """The ``k x u`` table of counts."""
        return counts_from_codes(self.codes(), self.shape)


def build_table(
    human: Sequence[Any],
    check: Sequence[Any],
    human_levels: Sequence[Any] | None = None,
    check_values: Sequence[Any] | None = None,
) -> PairTable:
    """Code paired values; levels default to the sorted distinct values seen."""
    if len(human) != len(check):
        raise ValueError(f"{len(human)} human labels but {len(check)} check values")
    rows = tuple(human_levels) if human_levels is not None else tuple(sorted(set(human)))
    cols = tuple(check_values) if check_values is not None else tuple(sorted(set(check)))
    row_of = {value: i for i, value in enumerate(rows)}
    col_of = {value: j for j, value in enumerate(cols)}
    try:
        hi = np.fromiter((row_of[v] for v in human), dtype=np.int64, count=len(human))
        ci = np.fromiter((col_of[v] for v in check), dtype=np.int64, count=len(check))
    except KeyError as exc:
        raise ValueError(f"value {exc.args[0]!r} is not one of the declared levels") from exc
    return PairTable(rows, cols, hi, ci)


def counts_from_codes(codes: npt.NDArray[Any], shape: tuple[int, int]) -> FloatArray:
    """Tables of counts from cell codes: ``(..., n)`` codes give ``(..., k, u)`` tables."""
    codes = np.asarray(codes, dtype=np.int64)
    k, u = shape
    cells = k * u
    lead = codes.shape[:-1]
    m = int(np.prod(lead)) if lead else 1
    flat = codes.reshape(m, -1) + (np.arange(m, dtype=np.int64) * cells)[:, None]
    counts = np.bincount(flat.ravel(), minlength=m * cells).astype(np.float64)
    return counts.reshape(*lead, k, u)
