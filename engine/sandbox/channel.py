"""The byte channel to one harness: all a backend supplies to run a job.

A backend (Docker, the fake, a plain subprocess) opens a :class:`Channel` to a started
harness; :class:`~engine.sandbox.jobstream.JobStream` writes the job into it and turns what
comes back into job events under the protocol's rules. The channel knows nothing of
records, rows or deadlines: it moves bytes, kills, and says how the process ended. Like
httpx's ``BaseTransport``, this module is the whole interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from engine.errors import SandboxError
from engine.models import Limits
from engine.sandbox.backend import BackendHealth
from engine.sandbox.protocol import Job

#: The harness's two output streams, as Docker's attach stream numbers them.
STDOUT, STDERR = 1, 2

#: What one :meth:`Channel.receive` hands on: output pieces as ``(stream, bytes)``.
Pieces = tuple[tuple[int, bytes], ...]


@dataclass(frozen=True)
class ExitState:
    """How the harness's process ended, as the backend saw it.

    ``lost`` is set when the backend cannot tell (the engine stopped or restarted, or the
    process had ended before the job reached it): the job is then the sandbox's failure,
    never the check's, and the runner waits for the engine before running it again.
    """

    exit_code: int | None = None
    oom_killed: bool = False
    lost: str | None = None


class ChannelError(SandboxError):
    """A backend could not open a channel (the container could not start, attach or build)."""

    def __init__(
        self, detail: str, *, engine_down: bool = False, container_id: str | None = None
    ) -> None:
        super().__init__(detail)
        #: The engine itself is away: the runner waits for it rather than spend retries.
        self.engine_down = engine_down
        self.container_id = container_id


class Channel(Protocol):
    """Bytes to and from one harness, for one job."""

    #: The job as this channel runs it (a backend may bound it further, e.g. a task budget).
    job: Job
    #: The container's (or process's) id, named in the job's end for operators.
    id: str | None

    def send(self, data: bytes) -> None:
        """Write ``data`` to the harness's stdin whole; raises OSError once it is gone.
        Thread-safe: model replies are sent from the gateway's threads."""
        ...

    def receive(self, timeout: float) -> Pieces | None:
        """Output that arrived within ``timeout`` seconds: ``()`` if none did, ``None`` once
        the process's output has ended."""
        ...

    def kill(self) -> None:
        """Kill the harness now (the job broke a rule); never raises."""
        ...

    def exit_state(self) -> ExitState:
        """How the process ended; called once its output has ended."""
        ...

    def close(self, *, reusable: bool) -> None:
        """The job is over: keep the harness for another job of the same kind when
        ``reusable`` (and the backend reuses), else destroy it. Never raises."""
        ...


class ChannelBackend(Protocol):
    """A backend as channels: it starts harnesses and hands out their byte channels."""

    def open(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Channel:
        """A channel to a started harness for ``job``; raises :class:`ChannelError`."""
        ...

    def health(self) -> BackendHealth:
        """Engine reachable, image present, warm pool sizes."""
        ...

    def close(self) -> None:
        """Stop every harness this backend started."""
        ...
