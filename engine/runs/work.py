"""The unit of work below the queue, as plain data, and the one code path that executes it.

A :class:`ChunkSpec` (tenant, run, check version, row indices, limits profile)
is what the embedded :class:`~engine.runs.scheduler.FairScheduler` hands its
scoring threads and what a Celery task carries through the broker
(:meth:`ChunkSpec.to_json`). Both execute it with :func:`execute_chunk`, which
scores only the rows of the chunk that have no stored result yet and writes
results with insert-or-ignore on (run, check, row). ``/v1/score`` batches go
through :func:`score_batch` in both modes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine import logs
from engine.builtins import Builtins
from engine.catalog import ResolvedCheck
from engine.errors import InvalidRequestError, NotFoundError, StorageError
from engine.llm.cache import cache_scope
from engine.llm.client import Completion
from engine.llm.usage import UsageMeter, metering
from engine.models import IndexedRow, Limits, ResultCallback, ResultColumns, Row, RowResult
from engine.runs.executors import CodeExecutor, Executors
from engine.runs.metrics import Metrics
from engine.sandbox.blocks import ResultBlock
from engine.sandbox.columns import IndexedColumns, RowColumns, loaded_columns, stored_columns
from engine.storage import RunCheck, Store

log = logging.getLogger("scorebox.runs")

#: Results buffered before a write, at most; a kill loses at most these, or the last
#: ``FLUSH_SECONDS``' worth (they are re-scored). Each write stores a check's results as
#: one block (engine/storage/run_writes.py): a chunk of a fast built-in's rows, delivered
#: one at a time, is one write, not one every hundred rows. (A sandbox's result blocks
#: arrive whole, each a write at this size or less.) As large as the largest job of a
#: run's fast chunks taken along (``Settings.table_job_max_rows``' default): such a job,
#: done within the second, is one write.
FLUSH_ROWS = 5000
FLUSH_SECONDS = 1.0

#: A slot that takes a chunk of a check whose rows score quickly takes the run's next chunks
#: of that check along, as one sandbox job (a worker's: one per stretch of consecutive
#: rows), up to about this long at the pace of the check's last chunk (and
#: ``Settings.table_job_max_rows`` rows): embedded mode's thread from its queue
#: (engine/runs/local.py), a worker's slot from the ledger's chunks no worker has started
#: (engine/distributed/worker.py). What each job costs whatever its size (a claim, a broker
#: message's hand-off, reading its rows, the job, its polls and writes) is paid once per
#: this much work instead of once per chunk of fast rows, and the slot still turns to other
#: work this often. A check's first chunk, whose pace is not known yet, runs alone.
ALONG_SECONDS = 0.25

#: Usage written by chunks' writers: one at a time per process (a run's totals are
#: read, added to and written; PostgreSQL's row lock serialises processes).
_USAGE_LOCK = threading.Lock()

#: A model call's usage reaches the run's totals within this long (and with the results).
USAGE_WRITE_SECONDS = 0.25


class WrittenMeter(UsageMeter):
    """A chunk's meter: each recorded call also tells its :class:`ResultWriter`, which
    writes the usage so far to the run at most every :data:`USAGE_WRITE_SECONDS`."""

    def __init__(self) -> None:
        super().__init__()
        self.on_record: Callable[[], None] = lambda: None

    def record(self, completion: Completion) -> None:
        super().record(completion)
        self.on_record()


class ChunkStopped(Exception):
    """Raised from a result callback when the chunk's run was cancelled or failed meanwhile."""


def to_ranges(indices: Sequence[int]) -> list[list[int]]:
    """Sorted row indices as ``[start, stop)`` pairs (a 500-row chunk is one pair)."""
    out: list[list[int]] = []
    for index in indices:
        if out and out[-1][1] == index:
            out[-1][1] = index + 1
        else:
            out.append([index, index + 1])
    return out


def from_ranges(ranges: Sequence[Sequence[int]]) -> list[int]:
    return [i for start, stop in ranges for i in range(int(start), int(stop))]


@dataclass(frozen=True)
class ChunkSpec:
    """One chunk of a run: rows ``rows`` of the run scored by check ``check_index``."""

    tenant_id: str
    run_id: str
    check_index: int
    check: RunCheck
    rows: tuple[int, ...]
    limits: Limits

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for a broker message."""
        return {
            "tenant_id": self.tenant_id,
            "run_id": self.run_id,
            "check_index": self.check_index,
            "check": self.check.to_json(),
            "rows": to_ranges(self.rows),
            "limits": self.limits.model_dump(mode="json"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChunkSpec:
        return cls(
            tenant_id=str(data["tenant_id"]),
            run_id=str(data["run_id"]),
            check_index=int(data["check_index"]),
            check=RunCheck.from_json(dict(data["check"])),
            rows=tuple(from_ranges(data["rows"])),
            limits=Limits.model_validate(data["limits"]),
        )


def along_room(pace: float | None, rows: int, max_rows: int) -> int:
    """Rows a job of a chunk of ``rows`` rows may take along (0: none): up to
    :data:`ALONG_SECONDS` of work in all at ``pace`` seconds a row (the check's last chunk;
    None: not known yet) and at most ``max_rows`` rows."""
    if pace is None or rows <= 0:
        return 0
    return max(0, min(max_rows, int(ALONG_SECONDS / max(pace, 1e-9))) - rows)


def consecutive_jobs(spec: ChunkSpec, ranges: Iterable[tuple[int, int]]) -> list[ChunkSpec]:
    """``spec`` with more rows of its run and check (``[start, stop)`` ranges), as chunks of
    consecutive rows in row order: each range that starts where another ends joins it."""
    own = [(start, stop) for start, stop in to_ranges(sorted(spec.rows))]
    spans = sorted(own + [r for r in ranges if r[0] < r[1]])
    merged: list[list[int]] = []
    for start, stop in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    return [replace(spec, rows=tuple(range(a, b))) for a, b in merged]


def resolve_run_check(
    store: Store, tenant_id: str, rc: RunCheck, builtins: Builtins
) -> ResolvedCheck:
    """The check a stored run uses (deleted versions included: the run owns them)."""
    if rc.id is not None:
        version = store.get_check_by_id(tenant_id, rc.id, include_deleted=True)
        return ResolvedCheck(rc.kind, rc.name, rc.version, rc.id, rc.params, version)
    builtin = builtins.get(rc.name)
    if builtin is None:
        raise NotFoundError(f"built-in check {rc.name!r} is no longer available")
    return ResolvedCheck(rc.kind, rc.name, None, None, rc.params, None, builtin)


class ResultWriter:
    """Buffers one chunk's results and writes them idempotently.

    ``should_stop`` is asked at each write; when it answers True the chunk
    stops there (:class:`ChunkStopped`), which is how a cancelled run's
    running chunks stop at the next batch.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        check_index: int,
        metrics: Metrics,
        should_stop: Callable[[], bool] | None = None,
        meter: UsageMeter | None = None,
    ) -> None:
        """``meter``: the chunk's model usage, added to the run's with each write of results
        and, for a :class:`WrittenMeter`, within :data:`USAGE_WRITE_SECONDS` of each call
        (so a worker killed mid-chunk loses next to none of the calls it made)."""
        self.store = store
        self.run_id = run_id
        self.check_index = check_index
        self.metrics = metrics
        self.should_stop = should_stop
        self.written = 0
        self._buffer: list[tuple[int, int, RowResult]] = []
        self._columns: list[tuple[int, ResultColumns]] = []
        self._buffered = 0  # results in both buffers
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self.meter = meter
        self._metered: dict[str, int] = {}  # the meter's counts already added to the run
        self._usage_lock = threading.Lock()
        self._usage_at = time.monotonic()
        if isinstance(meter, WrittenMeter):
            meter.on_record = self._call_recorded

    def add(self, index: int, result: RowResult) -> None:
        """Buffer the result of the run's row ``index``."""
        with self._lock:
            self._buffer.append((self.check_index, index, result))
            self._buffered += 1
            self._maybe_flush()

    def add_block(self, rows: Sequence[IndexedRow], block: ResultBlock) -> None:
        """Buffer a sandbox result block for ``rows``: as columns, no RowResult per row."""
        # consecutive columns' indices without a Row made a row to read each one's
        indices = (
            range(rows.first, rows.first + len(rows))
            if isinstance(rows, IndexedColumns)
            else [index for index, _ in rows]
        )
        columns = block.columns(indices)
        with self._lock:
            self._columns.append((self.check_index, columns))
            self._buffered += len(columns)
            self._maybe_flush()

    def _maybe_flush(self) -> None:
        if self._buffered >= FLUSH_ROWS or time.monotonic() - self._last > FLUSH_SECONDS:
            self._flush_locked()
            if self.should_stop is not None and self.should_stop():
                raise ChunkStopped(self.run_id)

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        batch, self._buffer = self._buffer, []
        columns, self._columns = self._columns, []
        self._buffered = 0
        self._last = time.monotonic()
        counts: Counter[str] = Counter()
        if batch:
            self.written += self.store.save_results(self.run_id, batch)
            counts.update(result.status.value for _, _, result in batch)
        if columns:
            self.written += self.store.save_result_columns(self.run_id, columns)
            for _, block in columns:
                counts.update(block.status)
        for status, count in counts.items():
            self.metrics.rows.labels(status).inc(count)
        self._write_usage()

    def _call_recorded(self) -> None:
        """A model call answered: its usage is the run's soon, whether or not its row's
        result is ever written (a killed worker's calls were made, and are billed)."""
        if time.monotonic() - self._usage_at < USAGE_WRITE_SECONDS:
            return
        try:
            self._write_usage()
        except StorageError as exc:  # not the call's failure: the next write carries it
            log.debug("run %s: usage not written yet: %s", self.run_id, exc)

    def _write_usage(self) -> None:
        if self.meter is None:
            return
        with self._usage_lock:
            self._usage_at = time.monotonic()
            usage = self.meter.snapshot()
            if not (usage.calls or usage.cached_calls):
                return
            now = usage.as_dict()
            delta = {k: v - self._metered.get(k, 0) for k, v in now.items()}
            if any(delta.values()):
                with _USAGE_LOCK:
                    self.store.add_run_usage(self.run_id, delta)
                self._metered = now


@dataclass
class ChunkOutcome:
    """What one execution of a chunk did."""

    scored: int  # rows sent to the executor (the others already had results)
    written: int  # results inserted (a duplicate delivery inserts none)
    usage: dict[str, int]


def pending_rows(store: Store, spec: ChunkSpec) -> list[int]:
    """The chunk's rows that have no stored result for its check yet."""
    if not spec.rows:
        return []
    lo, hi = min(spec.rows), max(spec.rows) + 1
    done = set(store.result_rows(spec.run_id, spec.check_index, lo, hi))
    return [i for i in spec.rows if i not in done]


def _stored_rows(
    indices: list[int], data: dict[int, dict[str, Any]], as_columns: bool = False
) -> Sequence[IndexedRow]:
    """A chunk's loaded rows under their indices. ``as_columns`` (for the sandbox, whose job
    carries columns): consecutive rows, each a whole dump, stay columns with no Row made a
    row; otherwise, or for any other executor, a Row each."""
    if as_columns and indices == list(range(indices[0], indices[0] + len(indices))):
        columns = stored_columns([data[i] for i in indices])
        if columns is not None:
            return IndexedColumns(columns, indices[0])
    return [(i, Row.stored(data[i])) for i in indices]


def _pending_columns(
    store: Store, spec: ChunkSpec, executors: Executors, check: ResolvedCheck
) -> tuple[list[int], RowColumns | None] | None:
    """A sandbox chunk of consecutive rows: its rows without a result and, when those are
    consecutive, their columns loaded straight from the store (no row's whole dump made),
    in one transaction. None for another chunk (rows with a gap, another executor)."""
    rows = spec.rows
    if not rows or rows != tuple(range(rows[0], rows[0] + len(rows))):
        return None
    try:
        if not isinstance(executors.for_check(check), CodeExecutor):
            return None
    except InvalidRequestError:
        return None  # raised again, and counted, where the chunk runs
    pending, found = store.pending_row_columns(
        spec.run_id, spec.check_index, rows[0], rows[0] + len(rows)
    )
    return pending, None if found is None else loaded_columns(found)


def execute_chunk(
    store: Store,
    executors: Executors,
    metrics: Metrics,
    spec: ChunkSpec,
    check: ResolvedCheck,
    should_stop: Callable[[], bool] | None = None,
) -> ChunkOutcome:
    """Score the chunk's rows that lack a result and store them; the same in both modes.

    Raises :class:`ChunkStopped` when ``should_stop`` says so mid-way (results
    written until then are kept) and :class:`~engine.errors.ScoreboxError`
    when the chunk cannot run (the caller fails the run).
    """
    found = _pending_columns(store, spec, executors, check)
    indices, columns = (pending_rows(store, spec), None) if found is None else found
    if not indices:
        return ChunkOutcome(0, 0, {})
    data = {} if columns is not None else store.load_rows(spec.run_id, indices)
    meter = WrittenMeter()
    writer = ResultWriter(store, spec.run_id, spec.check_index, metrics, should_stop, meter)
    labels = {"scorebox.tenant": spec.tenant_id, "scorebox.run": spec.run_id}
    started = time.monotonic()
    outcome = "ok"
    try:
        with (
            metering(meter),
            cache_scope(spec.tenant_id),
            logs.bound(tenant=spec.tenant_id, run=spec.run_id),  # on each line it logs
        ):
            executor = executors.for_check(check)
            if isinstance(executor, CodeExecutor):  # rows and results go as columns
                executor.score(
                    check,
                    _stored_rows(indices, data, as_columns=True)
                    if columns is None
                    else IndexedColumns(columns, indices[0]),
                    spec.limits,
                    labels,
                    writer.add,
                    on_block=writer.add_block,
                )
            else:
                executor.score(check, _stored_rows(indices, data), spec.limits, labels, writer.add)
    except ChunkStopped:
        outcome = "stopped"
        raise
    except Exception:
        outcome = "error"
        raise
    finally:
        writer.flush()
        metrics.jobs.labels(check.kind, outcome).inc()
        metrics.job_seconds.labels(check.kind).observe(time.monotonic() - started)
    # the writer added the usage to the run with the results (its last flush above)
    return ChunkOutcome(len(indices), writer.written, {})


def score_batch(
    executors: Executors,
    metrics: Metrics,
    check: ResolvedCheck,
    rows: Sequence[IndexedRow],
    limits: Limits,
    labels: Mapping[str, str],
    deliver: ResultCallback,
) -> None:
    """Score one chunk of a ``/v1/score`` request with one check (nothing stored); the same
    in both modes. ``deliver`` gets each result with its row's index in the request."""

    def counted(index: int, result: RowResult) -> None:
        deliver(index, result)
        metrics.rows.labels(result.status.value).inc()

    started = time.monotonic()
    outcome = "ok"
    try:
        with cache_scope(labels.get("scorebox.tenant")):
            executors.for_check(check).score(check, rows, limits, labels, counted)
    except Exception:
        outcome = "error"
        raise
    finally:
        metrics.jobs.labels(check.kind, outcome).inc()
        metrics.job_seconds.labels(check.kind).observe(time.monotonic() - started)
