"""A sandbox backend that runs no container: a shipped test double, like httpx's MockTransport.

:class:`FakeBackend` implements :class:`~engine.sandbox.backend.SandboxBackend`
by calling ``handler(job, row)`` for each row; the handler's answer (a score,
or a whole :class:`~engine.sandbox.protocol.RowRecord`) is what the check
"returned". The user's code is never executed. Use it to test what sits above
the sandbox (fairness, quotas, restarts, the API) without Docker::

    from engine.api import create_app
    from engine.sandbox.fake import FakeBackend, fake_engine_factory

    app = create_app(settings, runner_factory=fake_engine_factory(lambda job, row: True))

Anything about isolation, limits or the harness needs the real Docker backend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEnd, JobEvent, Termination
from engine.sandbox.protocol import Job, JobRow, LoadedRecord, RowRecord
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings

#: What a handler answers for a row: a score, or the whole record.
Answer = bool | int | float | RowRecord
Handler = Callable[[Job, JobRow], Answer]


def always_true(job: Job, row: JobRow) -> Answer:
    """The default handler: every row scores ``True``."""
    return True


@dataclass(frozen=True)
class FakeCall:
    """One job the fake backend received."""

    job: Job
    limits: Limits
    labels: Mapping[str, str]


class FakeBackend:
    """:class:`~engine.sandbox.backend.SandboxBackend` answering rows with ``handler``.

    ``row_seconds`` sleeps before each row (to hold a sandbox slot, e.g. in
    fairness tests). Every job is recorded in :attr:`calls`. Thread-safe.
    """

    def __init__(self, handler: Handler = always_true, *, row_seconds: float = 0.0) -> None:
        self.handler = handler
        self.row_seconds = row_seconds
        self.calls: list[FakeCall] = []
        self._lock = threading.Lock()
        self.closed = False

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        with self._lock:
            self.calls.append(FakeCall(job, limits, dict(labels)))
        yield LoadedRecord(t="loaded", ok=True)
        for row in job.job_rows():
            started = time.perf_counter()
            if self.row_seconds:
                time.sleep(self.row_seconds)
            answer = self.handler(job, row)
            if isinstance(answer, RowRecord):
                yield answer
                continue
            ms = (time.perf_counter() - started) * 1000
            yield RowRecord(t="row", i=row.i, status=Status.OK, score=answer, ms=ms)
        yield JobEnd(Termination.DONE)

    def health(self) -> BackendHealth:
        return BackendHealth(
            engine_ok=True, image_ok=True, detail="fake sandbox backend: no containers"
        )

    def close(self) -> None:
        self.closed = True


def fake_engine_factory(
    handler: Handler = always_true, *, row_seconds: float = 0.0
) -> Callable[[Settings], SandboxRunner]:
    """An ``runner_factory`` for :func:`engine.api.create_app` whose engine uses one
    :class:`FakeBackend` (reachable as ``factory.backend``)."""
    backend = FakeBackend(handler, row_seconds=row_seconds)

    def factory(settings: Settings) -> SandboxRunner:
        return SandboxRunner(settings, backend=backend)

    factory.backend = backend  # type: ignore[attr-defined]
    return factory
