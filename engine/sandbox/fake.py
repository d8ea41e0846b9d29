"""A sandbox backend that runs no container: a shipped test double, like httpx's MockTransport.

:class:`FakeBackend` implements :class:`~engine.sandbox.backend.SandboxBackend`
by calling ``handler(job, row)`` for each row; the handler's answer (a score,
or a whole :class:`~engine.sandbox.protocol.RowRecord`) is what the check
"returned". The user's code is never executed. It speaks the harness's wire format
over a :class:`FakeChannel` (it reads the job the host writes, and answers with records
carrying the job's nonce), so whatever runs on it crosses the same protocol rules as a
container's records (:mod:`engine.sandbox.jobstream`). Use it to test what sits above
the sandbox (fairness, quotas, restarts, the API) without Docker::

    from engine.app import create_app
    from engine.sandbox.fake import FakeBackend, fake_runner_factory

    app = create_app(settings, runner_factory=fake_runner_factory(lambda job, row: True))

Anything about isolation, limits or the harness needs the real Docker backend.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from engine.contract import Status
from engine.gateway.service import current_session
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEvent
from engine.sandbox.channel import STDOUT, ExitState, Pieces
from engine.sandbox.jobstream import execute_on
from engine.sandbox.protocol import DoneRecord, Job, JobRow, LoadedRecord, RowRecord
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


class FakeChannel:
    """:class:`~engine.sandbox.channel.Channel` to a pretend harness that answers each row
    of the job it is sent with ``handler``, one record per :meth:`receive`."""

    def __init__(self, job: Job, handler: Handler, row_seconds: float) -> None:
        self.job = job
        self.id: str | None = None
        self.handler = handler
        self.row_seconds = row_seconds
        self.rows: list[JobRow] | None = None
        self._output: Iterator[bytes] | None = None
        self.killed = False
        self.reusable: bool | None = None  # how the job left it (None: still open)

    def send(self, data: bytes) -> None:
        if self.rows is not None:
            return  # a model reply: the pretend checks make no model calls
        head, _, body = data.partition(b"\n")
        document = json.loads(body[: int(head)])
        columns = document["columns"]
        self.rows = [
            JobRow(i=i, **{name: values[i] for name, values in columns.items()})
            for i in range(document["n"])
        ]
        self._output = self._records(document["nonce"].encode() + b" ", self.rows)

    def receive(self, timeout: float) -> Pieces | None:
        line = None if self.killed or self._output is None else next(self._output, None)
        return None if line is None else ((STDOUT, line),)

    def kill(self) -> None:
        self.killed = True

    def exit_state(self) -> ExitState:
        return ExitState(exit_code=137 if self.killed else 0)

    def close(self, *, reusable: bool) -> None:
        self.reusable = reusable

    def _records(self, prefix: bytes, rows: list[JobRow]) -> Iterator[bytes]:
        yield prefix + LoadedRecord(t="loaded", ok=True).model_dump_json().encode() + b"\n"
        for row in rows:
            started = time.perf_counter()
            if self.row_seconds:
                time.sleep(self.row_seconds)
            answer = self.handler(self.job, row)
            if not isinstance(answer, RowRecord):
                ms = (time.perf_counter() - started) * 1000
                answer = RowRecord(t="row", i=row.i, status=Status.OK, score=answer, ms=ms)
            yield prefix + answer.model_dump_json().encode() + b"\n"
        yield prefix + DoneRecord(t="done", rows=len(rows)).model_dump_json().encode() + b"\n"


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
        """The job's events, read from a :class:`FakeChannel` under the protocol's rules."""
        yield from execute_on(self, job, limits, labels, current_session())

    def open(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> FakeChannel:
        """A channel to a pretend harness; the job is recorded in :attr:`calls`."""
        with self._lock:
            self.calls.append(FakeCall(job, limits, dict(labels)))
        return FakeChannel(job, self.handler, self.row_seconds)

    def health(self) -> BackendHealth:
        return BackendHealth(
            engine_ok=True, image_ok=True, detail="fake sandbox backend: no containers"
        )

    def close(self) -> None:
        self.closed = True


def fake_runner_factory(
    handler: Handler = always_true, *, row_seconds: float = 0.0
) -> Callable[[Settings], SandboxRunner]:
    """A ``runner_factory`` for :func:`engine.app.create_app` whose runner uses one
    :class:`FakeBackend` (reachable as ``factory.backend``)."""
    backend = FakeBackend(handler, row_seconds=row_seconds)

    def factory(settings: Settings) -> SandboxRunner:
        return SandboxRunner(settings, backend=backend)

    factory.backend = backend  # type: ignore[attr-defined]
    return factory
