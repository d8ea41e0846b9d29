"""The seam between the runner and whatever runs the harness (Docker, or a test double).

The runner depends on :class:`SandboxBackend`: a job in, its events out. The backends
scorebox ships supply only a byte channel (:mod:`engine.sandbox.channel`) and read it
with :class:`~engine.sandbox.jobstream.JobStream`, which holds the protocol's rules;
only :mod:`engine.sandbox.docker` imports ``docker``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from engine.models import Limits
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord


class Termination(StrEnum):
    """Why a job's stream ended."""

    DONE = "done"  # the harness sent its final record
    TIMEOUT = "timeout"  # a row or the job passed its wall clock; the container was killed
    OOM = "oom"  # the kernel killed the process for memory
    OUTPUT_LIMIT = "output_limit"  # the container wrote more than allowed; it was killed
    CRASHED = "crashed"  # the process died on its own (segfault, os._exit, signal)
    PROTOCOL_ERROR = "protocol_error"  # a record broke the protocol; the container was killed
    SANDBOX_ERROR = "sandbox_error"  # the backend itself failed


@dataclass(frozen=True)
class JobEnd:
    """The last event of a job: how it ended, with details for the in-flight row."""

    termination: Termination
    detail: str = ""
    exit_code: int | None = None
    container_id: str | None = None
    stderr_tail: str = ""
    #: the engine itself was unreachable, stopping or restarting (SANDBOX_ERROR only): the
    #: runner waits for it rather than spending the batch's retries
    engine_down: bool = False


JobEvent = LoadedRecord | RowRecord | BlockRecord | JobEnd


@dataclass(frozen=True)
class BackendHealth:
    """What ``/readyz`` and ``scorebox doctor`` report about a backend."""

    engine_ok: bool
    image_ok: bool
    detail: str
    pool_sizes: Mapping[str, int] = field(default_factory=dict)
    #: OCI runtimes the engine offers, and the one sandbox containers use.
    runtimes: tuple[str, ...] = ()
    runtime: str = ""


class SandboxBackend(Protocol):
    """Runs one job in a hardened container: a warm check container that ran the same check
    for the same tenant and ended cleanly (``SCOREBOX_REUSE=check``, the default), else a
    fresh one."""

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        """Stream the job's records; the last event is always a :class:`JobEnd`.

        Before the iterator finishes (or when it is closed early) the container is either
        kept as a warm check container for the next job of the same tenant, check version, policy
        and limits (the job ended cleanly and reuse is on) or destroyed (any timeout, oom,
        output limit, crash or protocol fault, or ``SCOREBOX_REUSE=never``). Never raises
        for anything the check does.
        """
        ...

    def health(self) -> BackendHealth:
        """Engine reachable, image present, warm pool sizes."""
        ...

    def close(self) -> None:
        """Drain warm pools and remove every container this backend made."""
        ...
