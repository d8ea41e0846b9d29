"""The chunk ledger in PostgreSQL: what the broker should hold, and who runs what.

Every chunk of a run is a row of ``run_chunks`` written when the run is
accepted (or by the re-queuer, for a run whose API node died before), so a run
is durable from the 202 on. States::

    pending --dispatch--> queued --claim--> running --finish--> done
       ^                    |                  |
       +---- lease expired -+------------------+        (cancel/fail: dropped)

:meth:`ChunkLedger.dispatch` moves pending chunks to ``queued`` fairly (each
tenant at most ``concurrent_jobs`` chunks queued or running, round-robin
across tenants, then across a tenant's runs) and returns the broker messages
to send. It runs under a transaction-level advisory lock, so any number of
API nodes and workers may call it: one pass at a time does the work. Each
dispatch bumps ``epoch``; a worker claims a chunk only with the epoch of the
message it holds, so a stale or duplicated message is a no-op.

A worker's per-chunk statements (claim, settle, the run's unfinished count, its
tenants' queued chunks) are one statement each, sent on an autocommit connection
as the driver's SQL: one round trip (the pool pings only a connection idle for
half a second, ``engine.storage.database``), no ``BEGIN``/``COMMIT`` around it and
no statement built per call (each round trip is the slot thread waiting for the
GIL again, behind the worker's other threads).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Connection, Engine, Table, and_, exists, func, select, text, tuple_, update
from sqlalchemy.exc import SQLAlchemyError

from engine.distributed.chunks import (
    DONE,
    DROPPED,
    INFLIGHT,
    MAX_ATTEMPTS,
    PENDING,
    QUEUED,
    RUNNING,
    Along,
    ChunkKey,
    fair_order,
    plan_chunks,
)
from engine.models import Limits
from engine.storage import Run, RunCheck, RunStatus, utcnow
from engine.storage.database import database_error
from engine.storage.tables import RunChunkRow, RunRow

log = logging.getLogger("scorebox.distributed")

CHUNKS = cast(Table, RunChunkRow.__table__)
RUNS = cast(Table, RunRow.__table__)

#: Key of the PostgreSQL advisory lock that serialises dispatch passes ("scorebox").
DISPATCH_LOCK = 0x73636F7265626F78 & 0x7FFFFFFFFFFFFFFF

# A worker's per-chunk statements, as the driver's SQL (psycopg's named placeholders); the
# states are engine/distributed/chunks.py's constants, every value a bound parameter.
CLAIM_SQL = (
    f"UPDATE run_chunks SET state = '{RUNNING}', attempts = attempts + 1, "  # nosec B608
    "worker = %(worker)s, lease_until = %(lease)s WHERE run_id = %(run_id)s "
    "AND check_index = %(check_index)s AND chunk_no = %(chunk_no)s "
    f"AND state = '{QUEUED}' AND epoch = %(epoch)s"
)
#: The columns of a chunk row as :func:`~engine.distributed.chunks.ledger_rows` gives them,
#: with their PostgreSQL array types.
INSERT_COLUMNS = {
    "run_id": "text",
    "check_index": "int",
    "chunk_no": "int",
    "tenant_id": "text",
    "row_start": "int",
    "row_stop": "int",
    "limits": "text",  # JSON text, cast below
    "state": "text",
    "epoch": "int",
    "attempts": "int",
}
#: Chunk rows from one array a column, those already there left as they are; returns the
#: chunk numbers of those inserted.
INSERT_SQL = (
    f"INSERT INTO run_chunks ({', '.join(INSERT_COLUMNS)}) "  # nosec B608 (names, marks)
    f"SELECT {', '.join(f'{c}::json' if c == 'limits' else c for c in INSERT_COLUMNS)} "
    f"FROM unnest({', '.join(f'%({c})s::{t}[]' for c, t in INSERT_COLUMNS.items())}) "
    f"AS v({', '.join(INSERT_COLUMNS)}) "
    "ON CONFLICT DO NOTHING RETURNING chunk_no"
)
#: The chunks of a list (``runs``, ``checks``, ``nos`` and ``epochs`` side by side) that are
#: running under the epoch given with each: what a worker holds (settled or handed back).
HELD_CHUNKS = (
    "FROM unnest(%(runs)s::text[], %(checks)s::int[], %(nos)s::int[], %(epochs)s::int[]) "
    "AS s(run_id, check_index, chunk_no, epoch) "
    "WHERE run_chunks.run_id = s.run_id AND run_chunks.check_index = s.check_index "
    "AND run_chunks.chunk_no = s.chunk_no AND run_chunks.epoch = s.epoch "
    f"AND run_chunks.state = '{RUNNING}' "
)
#: Held chunks to one end state, in one statement; returns the keys of those settled (a
#: chunk re-queued meanwhile runs under another epoch: not settled).
SETTLE_SQL = (
    "UPDATE run_chunks SET state = %(state)s, lease_until = NULL "  # nosec B608
    + HELD_CHUNKS
    + "RETURNING run_chunks.run_id, run_chunks.check_index, run_chunks.chunk_no"
)
#: Held chunks pending again at once, in one statement.
RELEASE_SQL = (
    f"UPDATE run_chunks SET state = '{PENDING}', worker = NULL, lease_until = NULL "  # nosec B608
    + HELD_CHUNKS
)
#: The run's chunks of one check that no worker has started (pending, or queued: the queued
#: one's message then finds it taken, a stale message), with attempts left, those after
#: ``chunk_no`` first and then the lowest before it, taken by the worker that runs that
#: check's chunk ``chunk_no`` as part of the same job. The pick is
#: materialised once (its LIMIT holds), its row locks taken with SKIP LOCKED, and the state
#: tested again in the UPDATE: a dispatch pass at the same time sends none of them, and two
#: workers never take the same one.
CLAIM_ALONG_SQL = (
    "WITH picked AS MATERIALIZED (SELECT chunk_no FROM run_chunks "  # nosec B608
    "WHERE run_id = %(run_id)s AND check_index = %(check_index)s "
    f"AND state IN ('{PENDING}', '{QUEUED}') "
    "AND attempts < %(max_attempts)s AND chunk_no <> %(chunk_no)s "
    "ORDER BY chunk_no < %(chunk_no)s, chunk_no LIMIT %(most)s FOR UPDATE SKIP LOCKED) "
    f"UPDATE run_chunks SET state = '{RUNNING}', attempts = attempts + 1, epoch = epoch + 1, "
    "worker = %(worker)s, lease_until = %(lease)s, dispatched_at = %(now)s FROM picked "
    "WHERE run_chunks.run_id = %(run_id)s AND run_chunks.check_index = %(check_index)s "
    "AND run_chunks.chunk_no = picked.chunk_no "
    f"AND run_chunks.state IN ('{PENDING}', '{QUEUED}') "
    "RETURNING run_chunks.chunk_no, run_chunks.epoch, run_chunks.row_start, run_chunks.row_stop"
)
UNFINISHED_SQL = f"SELECT count(*) FROM run_chunks WHERE run_id = %(run_id)s AND state <> '{DONE}'"  # nosec B608
RUN_STATUS_SQL = "SELECT status FROM runs WHERE id = %(run_id)s"
QUEUED_OF_SQL = (
    "SELECT tenant_id, count(*) FROM run_chunks "  # nosec B608
    f"WHERE state = '{QUEUED}' AND tenant_id = ANY(%(tenants)s) GROUP BY tenant_id"
)


def _held(held: Sequence[tuple[ChunkKey, int]]) -> dict[str, list[Any]]:
    """The parameters of :data:`HELD_CHUNKS` for ``(key, epoch)`` pairs."""
    return {
        "runs": [k.run_id for k, _ in held],
        "checks": [k.check_index for k, _ in held],
        "nos": [k.chunk_no for k, _ in held],
        "epochs": [e for _, e in held],
    }


def _where(key: ChunkKey) -> Any:
    return and_(
        CHUNKS.c.run_id == key.run_id,
        CHUNKS.c.check_index == key.check_index,
        CHUNKS.c.chunk_no == key.chunk_no,
    )


class ChunkLedger:
    """``run_chunks`` operations (PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # the same pool; a connection from it sends each statement on its own (no BEGIN)
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A transaction; database failures become :class:`StorageError`."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise database_error(exc) from exc

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        """Autocommit: for one statement (a read, or a write that stands alone)."""
        try:
            with self._autocommit.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise database_error(exc) from exc

    # ---- planning ---------------------------------------------------------------------

    def plan(self, run: Run, limits: Sequence[Limits], chunk_rows: int) -> int:
        """Insert the run's chunks (insert-or-ignore: safe to repeat); returns how many are new."""
        return self.insert(plan_chunks(run, limits, chunk_rows))

    def insert(self, rows: Sequence[dict[str, Any]]) -> int:
        """Insert chunk rows (:func:`ledger_rows`), ignoring those already there; returns how
        many are new."""
        if not rows:
            return 0
        # one statement of arrays, whatever the run's size: a VALUES list compiled by
        # SQLAlchemy cost about 35 ms for a 100,000-row run's 200 chunks, between its 202
        # and its first chunk's dispatch
        params = {name: [row[name] for row in rows] for name in INSERT_COLUMNS}
        params["limits"] = [json.dumps(limits) for limits in params["limits"]]
        with self._begin() as conn:
            return len(conn.exec_driver_sql(INSERT_SQL, params).all())

    def unplanned_runs(self, older_than_seconds: float) -> list[tuple[str, str]]:
        """Active runs with no chunk rows (their API node died between 202 and planning)."""
        cutoff = utcnow() - timedelta(seconds=older_than_seconds)
        with self._connect() as conn:
            rows = conn.execute(
                select(RUNS.c.tenant_id, RUNS.c.id).where(
                    RUNS.c.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]),
                    RUNS.c.created_at < cutoff,
                    ~exists().where(CHUNKS.c.run_id == RUNS.c.id),
                )
            )
            return [(str(t), str(r)) for t, r in rows]

    # ---- dispatch -----------------------------------------------------------------------

    def dispatch(
        self,
        concurrency: Callable[[str], int],
        queue_lease_seconds: float,
        on_poison: Callable[[str, str], None] | None = None,
        on_expired: Callable[[int], None] | None = None,
        *,
        housekeeping: bool = True,
        window: int = 0,
    ) -> list[dict[str, Any]] | None:
        """One fair dispatch pass; the messages to send, or None when another pass holds the lock.

        ``window`` (rows, 0: none): a tenant's chunks whose rows start a window of this many
        rows of their run (``row_start`` a multiple of it) go first, then those one chunk
        into a window, and so on; within each step, round-robin by chunk number across the
        tenant's runs and checks. A worker's slot that claims a chunk of a fast check takes
        the chunks after it along, up to a job of ``window`` rows
        (``Settings.table_job_max_rows``): those have not been sent yet, so no message
        arrives for a chunk already taken, as one would for each if chunks went out in row
        order.

        With ``housekeeping`` (the API nodes' loop), also re-queues chunks whose
        lease expired (a lost worker, a lost message), drops chunks of runs that
        are no longer active and fails runs with a poison chunk. Without it (a
        worker refilling after its chunks) only pending chunks of active runs with
        attempts left are sent: what housekeeping would drop or fail is left to it.
        """
        now = utcnow()
        poisoned_runs: list[str] = []
        with self._begin() as conn:
            got = conn.scalar(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": DISPATCH_LOCK})
            if not got:
                return None
            if housekeeping:
                poisoned_runs = self._housekeeping(conn, now, on_expired)
            inflight: dict[str, int] = {}
            tenants: list[str] = []
            # one look at the tenants' chunks: those in flight count against their quota,
            # those with pending chunks are candidates
            for tenant, state, n in conn.execute(
                select(CHUNKS.c.tenant_id, CHUNKS.c.state, func.count())
                .where(CHUNKS.c.state.in_([PENDING, *INFLIGHT]))
                .group_by(CHUNKS.c.tenant_id, CHUNKS.c.state)
            ):
                if state == PENDING:
                    tenants.append(str(tenant))
                else:
                    inflight[str(tenant)] = inflight.get(str(tenant), 0) + int(n)
            candidates: dict[str, list[dict[str, Any]]] = {}
            for tenant in sorted(tenants):
                free = max(1, concurrency(tenant)) - inflight.get(tenant, 0)
                if free <= 0:
                    continue
                rows = conn.execute(
                    select(CHUNKS, RUNS.c.checks)
                    .join(RUNS, RUNS.c.id == CHUNKS.c.run_id)
                    .where(
                        CHUNKS.c.tenant_id == tenant,
                        CHUNKS.c.state == PENDING,
                        # what housekeeping drops or fails is never sent, with or without it
                        CHUNKS.c.attempts < MAX_ATTEMPTS,
                        RUNS.c.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]),
                    )
                    # position in its window, then chunk position: round-robin across
                    # the tenant's runs and checks
                    .order_by(
                        *([CHUNKS.c.row_start % window] if window > 0 else []),
                        CHUNKS.c.chunk_no,
                        RUNS.c.created_at,
                        CHUNKS.c.check_index,
                    )
                    .limit(free)
                ).mappings()
                candidates[tenant] = [dict(r) for r in rows]
            ordered = fair_order(candidates, inflight)
            messages: list[dict[str, Any]] = []
            if ordered:
                # one UPDATE for the pass's chunks; still pending under the lock (a cancel's
                # drop_run may have dropped one since the select: it is not sent)
                epochs = {
                    (str(r), int(c), int(n)): int(e)
                    for r, c, n, e in conn.execute(
                        update(CHUNKS)
                        .where(
                            tuple_(CHUNKS.c.run_id, CHUNKS.c.check_index, CHUNKS.c.chunk_no).in_(
                                [(r["run_id"], r["check_index"], r["chunk_no"]) for r in ordered]
                            ),
                            CHUNKS.c.state == PENDING,
                        )
                        .values(
                            state=QUEUED,
                            epoch=CHUNKS.c.epoch + 1,
                            lease_until=now + timedelta(seconds=queue_lease_seconds),
                            dispatched_at=now,
                        )
                        .returning(
                            CHUNKS.c.run_id, CHUNKS.c.check_index, CHUNKS.c.chunk_no, CHUNKS.c.epoch
                        )
                    )
                }
                for row in ordered:
                    key = ChunkKey(row["run_id"], row["check_index"], row["chunk_no"])
                    epoch = epochs.get(key.as_tuple())
                    if epoch is None:
                        continue
                    messages.append(
                        {
                            "key": list(key.as_tuple()),
                            "epoch": epoch,
                            "spec": {
                                "tenant_id": row["tenant_id"],
                                "run_id": row["run_id"],
                                "check_index": row["check_index"],
                                "check": row["checks"][row["check_index"]],
                                "rows": [[row["row_start"], row["row_stop"]]],
                                "limits": row["limits"],
                            },
                        }
                    )
        if on_poison is not None:
            for run_id in poisoned_runs:
                on_poison(
                    run_id,
                    f"a chunk was started {MAX_ATTEMPTS} times without finishing "
                    "(its workers keep dying): see the workers' logs",
                )
        return messages

    def _housekeeping(
        self, conn: Connection, now: datetime, on_expired: Callable[[int], None] | None
    ) -> list[str]:
        """Drop chunks of stopped runs, re-queue expired leases, drop poisoned runs' chunks;
        returns the poisoned runs (to fail once the pass commits)."""
        inactive = ~exists().where(
            RUNS.c.id == CHUNKS.c.run_id,
            RUNS.c.status.in_([RunStatus.QUEUED.value, RunStatus.RUNNING.value]),
        )
        conn.execute(
            update(CHUNKS)
            .where(CHUNKS.c.state.in_([PENDING, *INFLIGHT]), inactive)
            .values(state=DROPPED)
        )
        expired = conn.execute(
            update(CHUNKS)
            .where(CHUNKS.c.state.in_(INFLIGHT), CHUNKS.c.lease_until < now)
            .values(state=PENDING, worker=None)
            .returning(CHUNKS.c.run_id, CHUNKS.c.check_index, CHUNKS.c.state)
        ).all()
        if expired:
            log.info("re-queueing %d chunks whose lease expired", len(expired))
            if on_expired is not None:
                on_expired(len(expired))
        poisoned = list(
            conn.execute(
                select(CHUNKS.c.run_id)
                .where(CHUNKS.c.state == PENDING, CHUNKS.c.attempts >= MAX_ATTEMPTS)
                .distinct()
            ).scalars()
        )
        for run_id in poisoned:
            conn.execute(
                update(CHUNKS)
                .where(CHUNKS.c.run_id == run_id, CHUNKS.c.state.in_([PENDING, *INFLIGHT]))
                .values(state=DROPPED)
            )
        return poisoned

    # ---- workers ------------------------------------------------------------------------

    def claim(self, key: ChunkKey, epoch: int, worker: str, lease_seconds: float) -> bool:
        """Take a queued chunk for this worker; False when the message is stale or a duplicate.

        One conditional UPDATE, atomic on its own: of two deliveries of a message one
        finds the chunk queued under its epoch, the other finds it running."""
        lease = utcnow() + timedelta(seconds=lease_seconds)
        params = {**key.params(), "epoch": epoch, "worker": worker, "lease": lease}
        with self._connect() as conn:
            return bool(conn.exec_driver_sql(CLAIM_SQL, params).rowcount)

    def claim_along(
        self, key: ChunkKey, most: int, worker: str, lease_seconds: float
    ) -> list[Along]:
        """Take up to ``most`` more chunks of ``key``'s run and check for this worker, ones
        no worker has started (pending, or queued: their messages are stale from now on)
        with attempts left: those after ``key``'s in order (rows that continue its job),
        then the lowest-numbered before it. They run under a new epoch and the same lease
        as a claim; returned in row order. The worker runs them with
        ``key``'s chunk and settles each (its lease renewed meanwhile, or expiring as any
        claimed chunk's does when the worker dies)."""
        if most <= 0:
            return []
        now = utcnow()
        params = {
            **key.params(),
            "worker": worker,
            "lease": now + timedelta(seconds=lease_seconds),
            "now": now,
            "most": most,
            "max_attempts": MAX_ATTEMPTS,
        }
        with self._connect() as conn:
            taken = conn.exec_driver_sql(CLAIM_ALONG_SQL, params).all()
        return sorted(
            (
                Along(ChunkKey(key.run_id, key.check_index, int(n)), int(e), (int(a), int(b)))
                for n, e, a, b in taken
            ),
            key=lambda along: along.rows,
        )

    def renew(self, held: Iterable[tuple[ChunkKey, int]], lease_seconds: float) -> None:
        """Extend the leases of the chunks this worker is running."""
        pairs = [(*k.as_tuple(), e) for k, e in held]
        if not pairs:
            return
        with self._begin() as conn:
            conn.execute(
                update(CHUNKS)
                .where(
                    tuple_(
                        CHUNKS.c.run_id, CHUNKS.c.check_index, CHUNKS.c.chunk_no, CHUNKS.c.epoch
                    ).in_(pairs),
                    CHUNKS.c.state == RUNNING,
                )
                .values(lease_until=utcnow() + timedelta(seconds=lease_seconds))
            )

    def settle(self, key: ChunkKey, epoch: int, state: str = DONE) -> bool:
        """Mark a running chunk done (or dropped); False when it was re-queued meanwhile."""
        return key in self.settle_all([(key, epoch)], state)

    def settle_all(self, held: Sequence[tuple[ChunkKey, int]], state: str = DONE) -> set[ChunkKey]:
        """:meth:`settle` for several chunks (a job's, taken along) in one statement;
        returns those settled."""
        if not held:
            return set()
        with self._connect() as conn:
            found = conn.exec_driver_sql(SETTLE_SQL, {**_held(held), "state": state}).all()
        return {ChunkKey(str(r), int(c), int(n)) for r, c, n in found}

    def release(self, held: Sequence[tuple[ChunkKey, int]]) -> None:
        """Hand running chunks back, each under its epoch (the worker is shutting down, or
        the database went away mid-job): pending at once, in one statement."""
        if not held:
            return
        with self._connect() as conn:
            conn.exec_driver_sql(RELEASE_SQL, _held(held))

    def unfinished(self, run_id: str) -> int:
        """Chunks of the run not yet done (dropped ones count: the run stopped)."""
        with self._connect() as conn:
            value = conn.exec_driver_sql(UNFINISHED_SQL, {"run_id": run_id}).scalar()
            return int(value or 0)

    def requeue_rows(self, run_id: str, check_index: int, rows: Sequence[int]) -> int:
        """Make the done chunks that hold ``rows`` pending again; returns how many."""
        if not rows:
            return 0
        with self._begin() as conn:
            chunks = conn.execute(
                select(CHUNKS.c.chunk_no, CHUNKS.c.row_start, CHUNKS.c.row_stop).where(
                    CHUNKS.c.run_id == run_id,
                    CHUNKS.c.check_index == check_index,
                    CHUNKS.c.state == DONE,
                )
            ).all()
            wanted = [n for n, lo, hi in chunks if any(lo <= r < hi for r in rows)]
            if not wanted:
                return 0
            conn.execute(
                update(CHUNKS)
                .where(
                    CHUNKS.c.run_id == run_id,
                    CHUNKS.c.check_index == check_index,
                    CHUNKS.c.chunk_no.in_(wanted),
                )
                .values(state=PENDING)
            )
            return len(wanted)

    def requeue_queued(self) -> int:
        """Make every queued chunk pending again (the broker lost them); returns how many.

        Their next dispatch bumps the epoch, so a message that did survive is stale.
        """
        with self._begin() as conn:
            result = conn.execute(
                update(CHUNKS).where(CHUNKS.c.state == QUEUED).values(state=PENDING, worker=None)
            )
            return int(result.rowcount or 0)

    def unqueue(self, key: ChunkKey, epoch: int) -> None:
        """Make a queued chunk pending again (its message could not be sent)."""
        with self._begin() as conn:
            conn.execute(
                update(CHUNKS)
                .where(_where(key), CHUNKS.c.epoch == epoch, CHUNKS.c.state == QUEUED)
                .values(state=PENDING, lease_until=None)
            )

    def drop_run(self, run_id: str) -> int:
        """Drop a run's chunks that have not started (cancel, failure)."""
        with self._begin() as conn:
            result = conn.execute(
                update(CHUNKS)
                .where(CHUNKS.c.run_id == run_id, CHUNKS.c.state.in_([PENDING, QUEUED]))
                .values(state=DROPPED)
            )
            return int(result.rowcount or 0)

    def queued_of(self, tenants: Iterable[str]) -> dict[str, int]:
        """Chunks of each of ``tenants`` queued (in the broker, not yet claimed); a tenant
        with none is left out (an index scan of ``(state, tenant_id)``)."""
        with self._connect() as conn:
            found = conn.exec_driver_sql(QUEUED_OF_SQL, {"tenants": sorted(set(tenants))})
            return {str(tenant): int(n) for tenant, n in found}

    def run_active(self, run_id: str) -> bool:
        with self._connect() as conn:
            status = conn.exec_driver_sql(RUN_STATUS_SQL, {"run_id": run_id}).scalar()
            return status in (RunStatus.QUEUED.value, RunStatus.RUNNING.value)

    def counts(self, states: Sequence[str] | None = None) -> dict[str, int]:
        """Chunks per state, of ``states`` only when given (an index scan, for metrics)."""
        query = select(CHUNKS.c.state, func.count())
        if states is not None:
            query = query.where(CHUNKS.c.state.in_(list(states)))
        with self._connect() as conn:
            return {str(state): int(n) for state, n in conn.execute(query.group_by(CHUNKS.c.state))}

    def by_tenant(self) -> tuple[dict[tuple[str, str], int], float]:
        """Chunks per (tenant, state) not yet done, and the oldest queued one's age (seconds)."""
        query = (
            select(
                CHUNKS.c.tenant_id, CHUNKS.c.state, func.count(), func.min(CHUNKS.c.dispatched_at)
            )
            .where(CHUNKS.c.state.in_([PENDING, *INFLIGHT]))
            .group_by(CHUNKS.c.tenant_id, CHUNKS.c.state)
        )
        counts: dict[tuple[str, str], int] = {}
        oldest = 0.0
        now = utcnow()
        with self._connect() as conn:
            for tenant, state, n, first in conn.execute(query):
                counts[(str(tenant), str(state))] = int(n)
                if state == QUEUED and first is not None:
                    oldest = max(oldest, (now - first).total_seconds())
        return counts, oldest

    def chunk_check(self, run_id: str, check_index: int) -> RunCheck | None:
        with self._connect() as conn:
            checks = conn.scalar(select(RUNS.c.checks).where(RUNS.c.id == run_id))
        if not checks or check_index >= len(checks):
            return None
        return RunCheck.from_json(checks[check_index])
