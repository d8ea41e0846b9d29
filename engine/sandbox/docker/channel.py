"""A byte channel to a harness in a Docker container, over the container's attach socket.

Docker multiplexes the container's stdout and stderr on one socket in frames with 8-byte
headers (:class:`AttachFrames`); the channel hands their payloads on as they arrive. Its
end reads the container's final state, and it gives a clean container back to its backend
for the next job of the same kind (:meth:`DockerChannel.close`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engine.harness.reset import UNCLEAN_EXIT_CODE
from engine.sandbox.channel import ExitState, Pieces
from engine.sandbox.protocol import Job

log = logging.getLogger(__name__)


class AttachFrames:
    """Demultiplexes Docker's attach stream (8-byte headers) into (stream, payload) pieces.

    Payloads are handed on as they arrive, not when a frame is complete: one
    50 MB write is one frame, and the output cap must act on its first bytes.
    """

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.stream = 0
        self.remaining = 0  # bytes of the current frame not yet handed on

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        self.buffer += data
        while self.buffer:
            if self.remaining == 0:
                if len(self.buffer) < 8:
                    return
                self.stream = self.buffer[0]
                self.remaining = struct.unpack(">I", self.buffer[4:8])[0]
                del self.buffer[:8]
                continue
            take = min(self.remaining, len(self.buffer))
            payload = bytes(self.buffer[:take])
            del self.buffer[:take]
            self.remaining -= take
            yield self.stream, payload


@dataclass(eq=False)
class AttachedContainer:
    """A started container with its open attach socket and stream state."""

    container: Any
    sock: socket.socket | None = None
    frames: AttachFrames = field(default_factory=AttachFrames)
    jobs: int = 0
    born: float = field(default_factory=time.monotonic)


class DockerChannel:
    """:class:`~engine.sandbox.channel.Channel` over a container's attach socket.

    ``release(attached, reusable)`` is the backend's: it keeps a clean container warm or
    destroys it; ``engine_lost(why)`` empties the backend's warm containers when the
    engine itself went away.
    """

    def __init__(
        self,
        attached: AttachedContainer,
        job: Job,
        *,
        release: Callable[[AttachedContainer, bool], None],
        engine_lost: Callable[[str], None],
    ) -> None:
        assert attached.sock is not None  # attached by the backend
        self.attached = attached
        self.sock: socket.socket = attached.sock
        self.job = job
        self.id: str | None = attached.container.id
        self._release = release
        self._engine_lost = engine_lost
        self._lock = threading.Lock()
        self._sent_at: float | None = None
        self._closed = False

    def send(self, data: bytes) -> None:
        with self._lock:
            self.sock.sendall(data)
            if self._sent_at is None:
                self._sent_at = time.time()  # the job reached it: it was alive until now

    def receive(self, timeout: float) -> Pieces | None:
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return ()
        except OSError:
            chunk = b""
        if not chunk:
            return None
        return tuple(self.attached.frames.feed(chunk))

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.attached.container.kill()

    def exit_state(self) -> ExitState:
        container = self.attached.container
        state = self._final_state()
        if not state:
            self._engine_lost("a container's final state could not be read")
            return ExitState(
                lost="the sandbox ended and the Docker engine could not say how (it may have "
                "stopped or restarted); the rows without a result run again"
            )
        if state.get("ExitCode") == UNCLEAN_EXIT_CODE:
            # It ended itself after its last job, unclean: no sign of a lost engine.
            return ExitState(exit_code=UNCLEAN_EXIT_CODE)
        if self._sent_at is not None and finished_before(state, self._sent_at):
            self._engine_lost(f"{container.id[:12]} had stopped before its job")
            return ExitState(
                lost="the sandbox had stopped before the job reached it (the Docker engine "
                "restarted?); the rows run again in a fresh one"
            )
        return ExitState(exit_code=state.get("ExitCode"), oom_killed=bool(state.get("OOMKilled")))

    def close(self, *, reusable: bool) -> None:
        if self._closed:
            return
        self._closed = True
        if not reusable:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.attached.sock = None
        self._release(self.attached, reusable)

    def _final_state(self) -> dict[str, Any]:
        container = self.attached.container
        try:
            container.wait(timeout=10)
            container.reload()
            state: dict[str, Any] = container.attrs.get("State", {})
            return state
        except Exception:  # the container is gone or the engine is slow: cause unknown
            log.warning("could not read the final state of %s", container.id[:12], exc_info=True)
            return {}


def finished_before(state: Mapping[str, Any], moment: float) -> bool:
    """Whether a container's ``FinishedAt`` is before ``moment`` (a time.time()), with a
    second of slack for clocks: it was dead before the job was sent to it."""
    finished = str(state.get("FinishedAt") or "")
    if not finished or finished.startswith("0001-"):
        return False
    stamp = finished.rstrip("Z")
    head, _, fraction = stamp.partition(".")
    try:
        when = datetime.fromisoformat(head + (f".{fraction[:6]}" if fraction else ""))
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() < moment - 1.0
