"""One job of a check's rows through the sandbox, a container at a time, until every row
has a result: the blame when a container dies, the retries, the wait for an engine that is
away. :class:`~engine.sandbox.runner.SandboxRunner` splits the caller's rows into such jobs
(its public API) and runs each here; the rules a job's records must keep are the job
stream's (:mod:`engine.sandbox.jobstream`).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from engine.contract import OutputType, Policy, Status
from engine.gateway.service import current_session
from engine.models import IndexedRow, Limits, ResultCallback, Row, RowResult
from engine.sandbox.backend import JobEnd, SandboxBackend, Termination
from engine.sandbox.blocks import BlockRecord, ResultBlock
from engine.sandbox.columns import IndexedColumns
from engine.sandbox.load_hints import okareo_source
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord
from engine.settings import Settings

log = logging.getLogger(__name__)

#: How often a job asks whether an unreachable engine is back.
ENGINE_POLL_SECONDS = 0.5

_TERMINATION_STATUS: Mapping[Termination, Status] = {
    Termination.TIMEOUT: Status.TIMEOUT,
    Termination.OOM: Status.OOM,
    Termination.OUTPUT_LIMIT: Status.OUTPUT_LIMIT,
    Termination.CRASHED: Status.CRASHED,
    # Only code inside the container can break the protocol (a forged or partial record,
    # a sabotaged json.dumps): the check's fault, never the infrastructure's.
    Termination.PROTOCOL_ERROR: Status.CRASHED,
    Termination.SANDBOX_ERROR: Status.SANDBOX_ERROR,
}


class JobCheck(Protocol):
    """What a job needs of its check (:class:`~engine.sandbox.runner.CodeCheck` has it)."""

    @property
    def source(self) -> str:
        """The check's source."""

    @property
    def name(self) -> str | None:
        """Its name, on each row's result."""

    @property
    def version(self) -> int | None:
        """Its version, on each row's result."""

    @property
    def policy(self) -> Policy:
        """The policy it runs under."""

    @property
    def output_type(self) -> OutputType | None:
        """The score type it declares (None: its first score sets it)."""

    @property
    def entry(self) -> str | None:
        """The entry named at upload."""

    @property
    def config(self) -> Mapping[str, Any] | None:
        """The check version's configuration."""


#: Called with a block of consecutive rows' results and those rows (with their indices):
#: the fast path, where no :class:`RowResult` is made per row (``score_table``, the service).
BlockCallback: TypeAlias = Callable[[Sequence[IndexedRow], ResultBlock], None]


class JobRunner:
    """Runs jobs on a backend, at most ``settings.max_parallel_jobs`` containers at once."""

    def __init__(self, settings: Settings, backend: SandboxBackend) -> None:
        self.settings = settings
        self.backend = backend
        self.slots = threading.BoundedSemaphore(settings.max_parallel_jobs)

    def run(
        self,
        check: JobCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        deliver: ResultCallback,
        deliver_block: BlockCallback | None = None,
    ) -> None:
        """Run one job to a result for every row (:meth:`SandboxRunner.run_job
        <engine.sandbox.runner.SandboxRunner.run_job>` says how)."""
        _JobRun(self, check, rows, limits, labels, deliver, deliver_block).run()

    def run_once(
        self,
        check: JobCheck,
        pending: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        deliver: ResultCallback,
        deliver_block: BlockCallback | None = None,
    ) -> tuple[int, JobEnd, bool]:
        """One container over ``pending``: (rows delivered, how it ended, whether it loaded)."""
        job = job_of(check, pending, limits, self.settings.result_blocks)
        done = 0
        loaded = False
        with self.slots:
            events = self.backend.execute(job, limits, labels)
            try:
                for event in events:
                    if isinstance(event, LoadedRecord):
                        loaded = True
                    elif isinstance(event, RowRecord):
                        index, row = pending[event.i]
                        deliver(index, row_result(check, row, event))
                        done += 1
                    elif isinstance(event, BlockRecord):
                        rows = pending[event.i : event.i + event.n]
                        if deliver_block is not None:
                            deliver_block(rows, event.block)
                        else:
                            deliver_rows(check, rows, event.block, deliver)
                        done += event.n
                    else:
                        return done, event, loaded
            finally:
                close = getattr(events, "close", None)
                if close is not None:
                    close()
        return done, JobEnd(Termination.SANDBOX_ERROR, "the backend ended without a reason"), loaded

    def wait_for_engine(self, until: float) -> None:
        """Sleep at least one poll, then until the engine answers or ``until`` passes."""
        while True:
            time.sleep(ENGINE_POLL_SECONDS)
            if time.monotonic() >= until or self.backend.health().engine_ok:
                return


class _JobRun:
    """One job's rows without a result, and what its containers' ends have cost so far."""

    def __init__(
        self,
        runner: JobRunner,
        check: JobCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        deliver: ResultCallback,
        deliver_block: BlockCallback | None,
    ) -> None:
        self.runner = runner
        self.check = check
        self.limits = limits
        self.labels = labels
        self.deliver = deliver
        self.deliver_block = deliver_block
        self.pending = rows if isinstance(rows, IndexedColumns) else list(rows)
        self.retries = runner.settings.job_retries
        self.engine_wait_until: float | None = None  # while the engine is away: until when
        self.failures = 0  # consecutive sandbox errors without a row scored
        self.deaths = 0  # consecutive containers the check ended without a row scored
        self.suspect = False  # the next container runs the first pending row alone

    def run(self) -> None:
        """Containers until every row has a result (or the rest are given their cause)."""
        while self.pending:
            batch = self.pending[:1] if self.suspect else self.pending
            done, end, loaded = self.runner.run_once(
                self.check, batch, self.limits, self.labels, self.deliver, self.deliver_block
            )
            self.pending = self.pending[done:]
            if done:
                self.failures = self.deaths = 0
                self.engine_wait_until = None
            if done == len(batch):
                self.suspect = False
                continue
            if end.termination is Termination.DONE:
                end = JobEnd(Termination.PROTOCOL_ERROR, "the harness finished without every row")
            if end.termination is Termination.SANDBOX_ERROR:
                goes_on = self.sandbox_failed(end)
            else:
                goes_on = self.check_ended(end, len(batch), loaded)
            if not goes_on:
                return

    def sandbox_failed(self, end: JobEnd) -> bool:
        """Our failure, not the check's or the row's: every row without a result runs again
        (whether it may). While the engine is away (stopped, restarting) that waits for it
        to come back, without spending the retry budget."""
        if end.engine_down or not self.runner.backend.health().engine_ok:
            now = time.monotonic()
            if self.engine_wait_until is None:
                wait_seconds = self.runner.settings.engine_wait_seconds
                self.engine_wait_until = now + wait_seconds
                log.warning(
                    "the sandbox engine is away (%s): waiting up to %.0f s for it",
                    end.detail,
                    wait_seconds,
                )
            if now < self.engine_wait_until:
                self.runner.wait_for_engine(self.engine_wait_until)
                return True
        self.failures += 1
        if self.failures > self.retries:
            self.fail(self.pending, end, end.detail)
            return False
        return True

    def check_ended(self, end: JobEnd, batch_size: int, loaded: bool) -> bool:
        """The check ended its container before every row had a result: blame a row, or
        every row when it cannot load, or the rest past the retry budget; whether to go on.

        A dead harness (``crashed``, ``oom``) took the results it had not yet passed on
        with it, so the row that killed it is unknown: the first row without a result runs
        again alone, and is blamed only if it takes that container down too. When the host
        ended the job (a timeout, the output cap, a broken record) the row in flight gets
        the cause.
        """
        self.deaths += 1
        died = end.termination in (Termination.CRASHED, Termination.OOM)
        if died and batch_size > 1 and self.deaths <= self.retries:
            self.suspect = True
            return True
        if not loaded and not died:
            # The check cannot even load (it hangs, floods or breaks the protocol at
            # import): every row gets that cause, retrying cannot help.
            self.fail(self.pending, end, f"while loading the check: {_cause(end)}")
            return False
        self.fail(self.pending[:1], end, end.detail)
        self.pending = self.pending[1:]
        self.suspect = False
        if self.deaths > self.retries and self.pending:
            detail = (
                f"not run: the check ended its sandbox {self.deaths} times in a row without "
                f"a row scored (last: {_cause(end)})"
            )
            self.fail(self.pending, end, detail)
            return False
        return True

    def fail(self, rows: Sequence[IndexedRow], end: JobEnd, detail: str) -> None:
        """Give ``rows`` the status of how the container ended, and ``detail``."""
        for index, row in rows:
            self.deliver(
                index,
                RowResult(
                    row_id=row.id,
                    check=self.check.name,
                    version=self.check.version,
                    status=_TERMINATION_STATUS[end.termination],
                    error=detail or end.termination.value,
                ),
            )


def _cause(end: JobEnd) -> str:
    return end.detail or end.termination.value


def job_of(
    check: JobCheck, pending: Sequence[IndexedRow], limits: Limits, result_blocks: bool
) -> Job:
    """The job a container runs: the check over ``pending``, within ``limits``."""
    session = current_session()
    return Job(
        nonce=secrets.token_hex(16),
        source=check.source,
        policy=check.policy,
        output_type=check.output_type,
        entry=check.entry,
        okareo=okareo_source(check.source, check.entry),
        config=dict(check.config) if check.config else None,
        row_timeout_seconds=limits.row_timeout_seconds,
        max_output_bytes=limits.max_output_bytes,
        gateway_row_timeout_seconds=(
            max(session.row_timeout_seconds, limits.row_timeout_seconds) if session else None
        ),
        gateway_concurrency=session.container_concurrency if session else 4,
        max_request_bytes=max(512, limits.max_record_bytes - 256),
        result_blocks=result_blocks,
        max_block_bytes=limits.max_record_bytes,
        rows=pending.rows if isinstance(pending, IndexedColumns) else [r for _, r in pending],
    )


def deliver_rows(
    check: JobCheck, rows: Sequence[IndexedRow], block: ResultBlock, deliver: ResultCallback
) -> None:
    """A block's rows one :class:`RowResult` each, for a caller that takes no blocks."""
    for k, (index, row) in enumerate(rows):
        deliver(index, block.row_result(k, row.id, check.name, check.version))


def row_result(check: JobCheck, row: Row, record: RowRecord) -> RowResult:
    """A row record as the row's result."""
    return RowResult(
        row_id=row.id,
        check=check.name,
        version=check.version,
        status=record.status,
        score=record.score if record.status is Status.OK else None,
        explanation=record.explanation,
        error=record.error,
        output=record.output,
        duration_ms=record.ms,
        model=record.served_by,
        passed=record.passed,
        metadata=record.metadata,
    )
