"""Scoring rows with code checks in the sandbox: the API, its batching and parallel jobs.

:class:`SandboxRunner` is the Python API behind ``engine.run_check`` (whose shared runners
live in :mod:`engine.sandbox.notebook`); it splits the caller's rows into jobs, which
:mod:`engine.sandbox.jobs` runs on a :class:`~engine.sandbox.backend.SandboxBackend`
(never on Docker directly), recovering from container deaths.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from engine.contract import OutputType, Policy
from engine.errors import InvalidRequestError, SandboxError
from engine.models import IndexedRow, Limits, ResultCallback, Row, RowResult
from engine.rows import as_row, as_rows, row_chunks
from engine.sandbox.backend import SandboxBackend
from engine.sandbox.columns import IndexedColumns, RowColumns, column_chunks, is_columns
from engine.sandbox.jobs import BlockCallback, JobRunner
from engine.sandbox.table import ScoreTable, TableColumns, TablePart, assemble
from engine.settings import Settings


@dataclass(frozen=True)
class CodeCheck:
    """A code check to run: its source and how to run it."""

    source: str
    name: str | None = None
    version: int | None = None
    policy: Policy = Policy.STANDARD
    output_type: OutputType | None = None
    #: The entry function named at upload (None: found by name or by its parameters).
    entry: str | None = None
    #: The check version's configuration (promptfoo's ``context["config"]``, the keyword
    #: parameters of reward-kit and Braintrust scorers); None: none.
    config: Mapping[str, Any] | None = field(default=None, hash=False)


@dataclass
class _Pending:
    """One check's results as its jobs deliver them (rows ``offset`` on of the caller's)."""

    results: list[RowResult | None]
    on_result: ResultCallback | None
    futures: list[Future[None]] = field(default_factory=list)
    offset: int = 0

    def deliver(self, index: int, result: RowResult) -> None:
        self.results[index - self.offset] = result
        if self.on_result is not None:
            self.on_result(index, result)

    def cancel(self) -> None:
        """The caller is gone (Ctrl-C, a failed job): the jobs not started never will, so
        closing the runner does not wait for all of them."""
        for future in self.futures:
            future.cancel()

    def wait(self) -> list[RowResult]:
        try:
            for future in self.futures:
                future.result()
        except BaseException:
            self.cancel()
            raise
        missing = [self.offset + i for i, r in enumerate(self.results) if r is None]
        if missing:
            raise SandboxError(f"no result for rows {missing[:10]}: this is a scorebox bug")
        return [r for r in self.results if r is not None]


class SandboxRunner:
    """Runs code checks over rows in sandbox containers. Thread-safe; close it when done."""

    def __init__(self, settings: Settings | None = None, backend: SandboxBackend | None = None):
        self.settings = settings or Settings()
        if backend is None:
            backend = _configured_backend(self.settings)
        self.backend = backend
        self._jobs = JobRunner(self.settings, backend)
        self._executor = ThreadPoolExecutor(
            max_workers=self.settings.max_parallel_jobs * 2, thread_name_prefix="scorebox-job"
        )
        self._closed = False

    def prewarm(self) -> None:
        """Start keeping warm containers for the configured limits (those of a check and a
        request that set none of their own) now, in the background, so the first job after
        start-up finds one ready. A backend without a pool ignores it."""
        prewarm = getattr(self.backend, "prewarm", None)
        if prewarm is not None:
            prewarm(self.settings.limits)

    def __enter__(self) -> SandboxRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting work, wait for jobs in flight, drain the backend."""
        if self._closed:
            return
        self._closed = True
        self._executor.shutdown(wait=True)
        self.backend.close()

    def run_check(
        self,
        check: CodeCheck | str,
        rows: Iterable[Row | Mapping[str, Any]],
        limits: Limits | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[RowResult]:
        """Score every row with one check; one :class:`RowResult` per row, in row order.

        Rows are split into jobs of ``settings.job_max_rows`` that run in
        parallel; ``limits`` may only lower the configured limits.
        ``on_result(index, result)`` is called as each row's result arrives.
        """
        pending = self._submit(check, as_rows(rows), limits, labels, on_result)
        return pending.wait()

    def iter_check(
        self,
        check: CodeCheck | str,
        rows: Iterable[Row | Mapping[str, Any]],
        limits: Limits | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        jobs_ahead: int | None = None,
    ) -> Iterator[RowResult]:
        """Score rows as they are read; yield one :class:`RowResult` per row, in row order.

        Unlike :meth:`run_check`, neither every row nor every result is held at
        once: rows are read a job (``settings.job_max_rows``) at a time, and at
        most ``jobs_ahead`` jobs (default: twice ``max_parallel_jobs``) are
        queued or unread, so a file of any size scores in bounded memory. A bad
        row stops the reading: the rows before it are scored and yielded, then
        InvalidRequestError names it. Leaving the loop early cancels the jobs
        that have not started.
        """
        if isinstance(check, str):
            check = CodeCheck(source=check)
        size = self.settings.job_max_rows
        ahead = max(1, jobs_ahead or 2 * self.settings.max_parallel_jobs)
        queued: deque[_Pending] = deque()  # one job each, in row order
        try:
            batch: list[Row] = []
            offset = 0
            bad: InvalidRequestError | None = None
            for index, row in enumerate(rows):
                try:
                    batch.append(as_row(index, row))
                except InvalidRequestError as exc:
                    bad = exc  # raised once the rows before it are scored and yielded
                    break
                if len(batch) < size:
                    continue
                queued.append(self._submit(check, batch, limits, labels, None, offset=offset))
                offset, batch = offset + size, []
                while len(queued) >= ahead:
                    yield from queued.popleft().wait()
            if batch:
                queued.append(self._submit(check, batch, limits, labels, None, offset=offset))
            while queued:
                yield from queued.popleft().wait()
            if bad is not None:
                raise bad
        finally:
            for pending in queued:
                pending.cancel()

    def score_table(
        self,
        check: CodeCheck | str,
        rows: Iterable[Row | Mapping[str, Any]] | Mapping[str, Sequence[Any]],
        limits: Limits | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        jobs_ahead: int | None = None,
    ) -> ScoreTable:
        """Score rows with one check; the results as columns (:class:`ScoreTable`).

        The fast path for many rows: results go from the sandbox's blocks into numpy
        arrays with no object per row, and rows are read a job at a time (at most
        ``jobs_ahead`` jobs queued, as :meth:`iter_check`), so memory holds the
        results and a few jobs of rows. ``rows`` is an iterable of rows, or columns (a
        mapping of field name to one sequence per field, ``model_output`` among them),
        which go into the jobs as columns, with no :class:`Row` made per row.
        """
        if isinstance(check, str):
            check = CodeCheck(source=check)
        effective = self.settings.limits.lowered_by(limits)
        size = self.settings.table_job_max_rows
        ahead = max(1, jobs_ahead or 2 * self.settings.max_parallel_jobs)
        parts: list[TablePart] = []
        queued: deque[Future[None]] = deque()
        start = 0
        into: TableColumns | None = None  # the whole table's columns, when its size is known
        chunks: Iterator[RowColumns | list[Row]]
        if is_columns(rows):
            chunks = column_chunks(rows, size)
            into = TableColumns(len(rows.get("model_output", ())))
        else:
            chunks = row_chunks(rows, size)  # type: ignore[arg-type]  # not columns: rows
        try:
            for chunk in chunks:
                part = TablePart(start, len(chunk), into)
                parts.append(part)
                indexed: Sequence[IndexedRow]
                if isinstance(chunk, RowColumns):
                    indexed = IndexedColumns(chunk, start)
                else:
                    indexed = list(enumerate(chunk, start=start))
                queued.append(
                    self._executor.submit(
                        contextvars.copy_context().run,
                        self.run_job,
                        check,
                        indexed,
                        effective,
                        labels or {},
                        part.deliver,
                        part.deliver_block,
                    )
                )
                start += len(chunk)
                while len(queued) >= ahead:
                    queued.popleft().result()
            while queued:
                queued.popleft().result()
        finally:
            for future in queued:
                future.cancel()
        for part in parts:
            if part.missing():
                raise SandboxError(f"no result for rows {part.missing()}: this is a scorebox bug")
        return assemble(parts, into)

    def run_checks(
        self,
        checks: Sequence[CodeCheck | str],
        rows: Iterable[Row | Mapping[str, Any]],
        limits: Limits | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> list[list[RowResult]]:
        """Score the rows with each check; ``out[k][i]`` is check k on row i.

        Every check's jobs share the same worker pool; only the caller waits.
        """
        row_list = as_rows(rows)
        pending = [self._submit(check, row_list, limits, labels, None) for check in checks]
        try:
            return [p.wait() for p in pending]
        except BaseException:
            for p in pending:
                p.cancel()
            raise

    def _submit(
        self,
        check: CodeCheck | str,
        rows: Sequence[Row],
        limits: Limits | None,
        labels: Mapping[str, str] | None,
        on_result: ResultCallback | None,
        *,
        offset: int = 0,
    ) -> _Pending:
        """Queue one check's jobs (never waiting on the pool from inside it); ``offset``:
        the index of ``rows[0]`` among the caller's rows (results and callbacks use it)."""
        if isinstance(check, str):
            check = CodeCheck(source=check)
        effective = self.settings.limits.lowered_by(limits)
        size = self.settings.job_max_rows
        pending = _Pending([None] * len(rows), on_result, offset=offset)
        pending.futures = [
            self._executor.submit(
                contextvars.copy_context().run,  # the job sees its caller's gateway session
                self.run_job,
                check,
                list(enumerate(rows[i : i + size], start=offset + i)),
                effective,
                labels or {},
                pending.deliver,
            )
            for i in range(0, len(rows), size)
        ]
        return pending

    def run_job(
        self,
        check: CodeCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        deliver: ResultCallback,
        deliver_block: BlockCallback | None = None,
    ) -> None:
        """Run one batch, recovering from container deaths; deliver one result per row,
        under the index each row came with (rows that came in a result block go to
        ``deliver_block`` instead, when given).

        Rows reported before a container ends are kept; the rest run in a fresh
        container. When the container's harness died (``crashed``, ``oom``), the
        results it had not yet passed on died with it, so the row that killed it
        is unknown: the first row without a result runs again alone, and is
        blamed only if it takes that container down too. When the host itself
        ended the job (a timeout, the output cap, a broken record) the row in
        flight gets the cause. Deaths are the check's doing: after
        ``settings.job_retries`` of them in a row without a row scored, the rest
        get the check's status and are not run; ``sandbox_error`` is only for
        failures of the sandbox itself, bounded the same way. A check that
        fails while loading without killing its container gives every row that
        cause. (:mod:`engine.sandbox.jobs` runs it.)
        """
        self._jobs.run(check, rows, limits, labels, deliver, deliver_block)


def _configured_backend(settings: Settings) -> SandboxBackend:
    """The backend ``SCOREBOX_BACKEND`` names: Docker, or (development only) plain processes."""
    if settings.backend == "subprocess":
        from engine.sandbox.local import SubprocessBackend  # noqa: PLC0415 (lazy)

        return SubprocessBackend(settings)
    from engine.sandbox.docker.backend import DockerBackend  # noqa: PLC0415 (lazy: no docker SDK in processes that never start a container)

    return DockerBackend(settings)
