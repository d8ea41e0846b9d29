"""A run's chunks as the chunk ledger keeps them: their states, their keys, and the pure
planning the ledger's operations share (the rows of a run's chunks, the fair order of a
dispatch pass). No database here: :mod:`engine.distributed.ledger` runs the statements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.models import Limits
from engine.runs.work import ChunkSpec
from engine.storage import Run

PENDING, QUEUED, RUNNING, DONE, DROPPED = "pending", "queued", "running", "done", "dropped"
INFLIGHT = (QUEUED, RUNNING)


#: A chunk claimed this many times without finishing fails its run (a poison chunk).
MAX_ATTEMPTS = 8


@dataclass(frozen=True)
class ChunkKey:
    run_id: str
    check_index: int
    chunk_no: int

    def as_tuple(self) -> tuple[str, int, int]:
        return (self.run_id, self.check_index, self.chunk_no)

    def params(self) -> dict[str, Any]:
        """The key as the named parameters of the ledger's driver SQL."""
        return {"run_id": self.run_id, "check_index": self.check_index, "chunk_no": self.chunk_no}


@dataclass(frozen=True)
class Along:
    """A chunk a worker took along with the one it claimed: its key, the epoch it runs
    under (what settles it) and its rows ``[start, stop)``."""

    key: ChunkKey
    epoch: int
    rows: tuple[int, int]


def plan_chunks(run: Run, limits: Sequence[Limits], chunk_rows: int) -> list[dict[str, Any]]:
    """The chunk rows of a run: row ranges of ``chunk_rows`` per check (pure)."""
    out: list[dict[str, Any]] = []
    for check_index, check_limits in enumerate(limits):
        for chunk_no, start in enumerate(range(0, run.row_count, chunk_rows)):
            out.append(
                {
                    "run_id": run.id,
                    "check_index": check_index,
                    "chunk_no": chunk_no,
                    "tenant_id": run.tenant_id,
                    "row_start": start,
                    "row_stop": min(start + chunk_rows, run.row_count),
                    "limits": check_limits.model_dump(mode="json"),
                    "state": PENDING,
                    "epoch": 0,
                    "attempts": 0,
                }
            )
    return out


def ledger_rows(chunks: Sequence[ChunkSpec]) -> list[dict[str, Any]]:
    """The chunk rows of a run's planned chunks (the run service's one chunking; each chunk
    a range of rows of one check, numbered from 0 per check) (pure)."""
    numbers: Counter[int] = Counter()
    out: list[dict[str, Any]] = []
    for spec in chunks:
        chunk_no = numbers[spec.check_index]
        numbers[spec.check_index] += 1
        out.append(
            {
                "run_id": spec.run_id,
                "check_index": spec.check_index,
                "chunk_no": chunk_no,
                "tenant_id": spec.tenant_id,
                "row_start": spec.rows[0],
                "row_stop": spec.rows[-1] + 1,
                "limits": spec.limits.model_dump(mode="json"),
                "state": PENDING,
                "epoch": 0,
                "attempts": 0,
            }
        )
    return out


T = TypeVar("T")


def fair_order(candidates: dict[str, list[T]], inflight: dict[str, int]) -> list[T]:
    """Round-robin across tenants (fewest in flight first), one chunk per tenant per round."""
    tenants = sorted(candidates, key=lambda t: (inflight.get(t, 0), t))
    out: list[T] = []
    position = 0
    while True:
        took = False
        for tenant in tenants:
            if position < len(candidates[tenant]):
                out.append(candidates[tenant][position])
                took = True
        if not took:
            return out
        position += 1
