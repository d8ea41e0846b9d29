"""A sandbox backend that runs the harness as a plain child process on this host.

For development and tests only (``SCOREBOX_BACKEND=subprocess``): it gives **no isolation**
at all. The check runs on this host with the host's network, files and processes in
reach; there is no memory, process, file or network limit, and no container to throw
away. Only what the job stream enforces holds (deadlines, the output cap, the protocol's
rules), because the host reads the same bytes as from a container. It is never the
default, and every runner that uses it logs a warning saying so.

The harness runs as ``python -m engine.harness`` (the package the image carries), from
the interpreter running scorebox, in a new session so that a kill reaches the checks it
forked, with an empty environment (no host secret reaches a check) and a scratch working
directory removed afterwards. Each job gets a fresh process: nothing is reused.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import shutil
import signal
import subprocess  # nosec B404: the development backend runs the harness as a child
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import engine
from engine.gateway.service import current_session
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEvent
from engine.sandbox.channel import STDERR, STDOUT, ChannelError, ExitState, Pieces
from engine.sandbox.jobstream import execute_on
from engine.sandbox.protocol import Job
from engine.settings import Settings

log = logging.getLogger(__name__)

#: The harness exits this long after its last job if the host never closes its stdin.
IDLE_EXIT_SECONDS = 60.0
#: Where ``engine`` is imported from: the harness's child process imports the same tree.
_SOURCE_ROOT = str(Path(engine.__file__).resolve().parent.parent)
WARNING = (
    "SCOREBOX_BACKEND=subprocess: checks run as plain processes on this host with NO "
    "isolation (no container, no memory, process, file or network limit); for development "
    "and tests only, never for code you do not trust"
)


def harness_command() -> list[str]:
    """How the harness is started: the ``engine.harness`` package, run as ``python -m``."""
    return [sys.executable, "-s", "-m", "engine.harness", f"{IDLE_EXIT_SECONDS:.0f}"]


class SubprocessChannel:
    """:class:`~engine.sandbox.channel.Channel` over a child process's pipes."""

    def __init__(self, job: Job, process: subprocess.Popen[bytes], scratch: str) -> None:
        self.job = job
        self.process = process
        self.id: str | None = f"pid-{process.pid}"
        self.scratch = scratch
        assert process.stdin and process.stdout and process.stderr
        self._stdin = process.stdin
        self._lock = threading.Lock()
        self._open = {process.stdout.fileno(): STDOUT, process.stderr.fileno(): STDERR}
        self._selector = selectors.DefaultSelector()
        for fd in self._open:
            os.set_blocking(fd, False)
            self._selector.register(fd, selectors.EVENT_READ)

    def send(self, data: bytes) -> None:
        with self._lock:
            self._stdin.write(data)
            self._stdin.flush()

    def receive(self, timeout: float) -> Pieces | None:
        if not self._open:
            return None
        pieces: list[tuple[int, bytes]] = []
        for key, _ in self._selector.select(timeout):
            fd = int(key.fd)
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                pieces.append((self._open[fd], data))
                continue
            self._selector.unregister(fd)
            del self._open[fd]
        if not pieces and not self._open:
            return None
        return tuple(pieces)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def exit_state(self) -> ExitState:
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            return ExitState(lost="the harness process closed its output but did not exit")
        # A signal's death as a shell (and Docker) reports it: 128 + the signal's number.
        return ExitState(exit_code=128 - code if code < 0 else code)

    def close(self, *, reusable: bool) -> None:
        """Every job's process ends with it (with its whole session): nothing is reused."""
        self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._selector.close()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


class SubprocessBackend:
    """:class:`~engine.sandbox.backend.SandboxBackend` running each job's harness as a child
    process of this one. No isolation: see the module docstring."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        log.warning(WARNING)

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        """Run ``job`` in a fresh harness process; end with a JobEnd."""
        yield from execute_on(self, job, limits, labels, current_session())

    def open(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> SubprocessChannel:
        """Start a harness process for ``job``."""
        scratch = tempfile.mkdtemp(prefix="scorebox-check-")
        # a harness started as root runs checks as another user, who must write here
        os.chmod(scratch, 0o777)  # nosec B103
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": scratch}
        env["PYTHONPATH"] = _SOURCE_ROOT  # the same engine tree as this process's
        try:
            process = subprocess.Popen(  # nosec B603: a fixed command, no shell
                harness_command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=scratch,
                env=env,
                start_new_session=True,  # a kill reaches the checks the harness forked
            )
        except OSError as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            raise ChannelError(f"could not start the harness process: {exc}") from exc
        return SubprocessChannel(job, process, scratch)

    def health(self) -> BackendHealth:
        return BackendHealth(True, True, "subprocess backend: no isolation (development only)")

    def close(self) -> None:
        """Nothing to drain: every job's process ended with its job."""
