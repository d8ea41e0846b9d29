"""The Docker sandbox backend: the only module that imports ``docker``.

Every container is hardened the same way (see :func:`container_options`),
serves exactly one job and is then destroyed. A :class:`WarmPool` keeps
started, never-used containers ready so a job starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.types import LogConfig, Ulimit

from engine.errors import DockerUnavailableError, ImageNotFoundError, SandboxError
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEnd, JobEvent, Termination
from engine.sandbox.pool import WarmPool
from engine.sandbox.protocol import (
    DoneRecord,
    Job,
    LoadedRecord,
    ProtocolError,
    RowRecord,
    parse_record,
)
from engine.settings import Settings

log = logging.getLogger(__name__)

HARNESS_COMMAND = ["python3", "-I", "/opt/scorebox/harness.py"]
SANDBOX_USER = "10001:10001"
LABEL_MANAGED = "scorebox.managed"
LABEL_POOL = "scorebox.pool"
LABEL_TENANT = "scorebox.tenant"
LABEL_RUN = "scorebox.run"
LABEL_OWNER = "scorebox.owner"
#: Extra seconds the host allows past the harness's own per-row timer.
ROW_GRACE_SECONDS = 2.0
#: Output the container may write beyond the check's cap (harness messages, tracebacks).
STDERR_SLACK_BYTES = 64 * 1024
STDERR_TAIL_BYTES = 4096
STDOUT, STDERR = 1, 2


@contextlib.contextmanager
def docker_errors(docker_host: str | None) -> Iterator[None]:
    """Translate docker-py and transport errors into scorebox's own, once."""
    where = docker_host or "the default Docker socket"
    try:
        yield
    except docker.errors.ImageNotFound as exc:
        raise ImageNotFoundError(
            f"sandbox image not found ({exc.explanation}): build it with `scorebox image build`"
        ) from exc
    except (requests.exceptions.ConnectionError, ConnectionError, FileNotFoundError) as exc:
        raise DockerUnavailableError(
            f"Docker engine not reachable at {where}: start it (`dockerd`, or "
            f"`scripts/dev.sh setup`) or set SCOREBOX_DOCKER_HOST ({exc})"
        ) from exc
    except docker.errors.DockerException as exc:
        raise SandboxError(f"Docker engine error: {exc}") from exc
    except requests.exceptions.RequestException as exc:
        raise SandboxError(f"Docker engine request failed: {exc}") from exc


def owner_label() -> str:
    """Who made a container: host and pid, so a later process can reap orphans."""
    return f"{socket.gethostname()}:{os.getpid()}"


def container_options(
    settings: Settings, limits: Limits, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The hardened ``containers.create`` arguments: every guarantee of DESIGN.md §4."""
    memory = f"{limits.memory_mb}m"
    options: dict[str, Any] = {
        "image": settings.image,
        "command": HARNESS_COMMAND,
        "stdin_open": True,
        "tty": False,
        "detach": True,
        "network_mode": "none",
        "network_disabled": True,
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m,mode=1777"},
        "user": SANDBOX_USER,
        "working_dir": "/tmp",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": limits.max_pids,
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(limits.cpus * 1_000_000_000),
        "ulimits": [
            Ulimit(name="nofile", soft=limits.max_open_files, hard=limits.max_open_files),
            Ulimit(name="fsize", soft=limits.max_file_bytes, hard=limits.max_file_bytes),
            Ulimit(name="core", soft=0, hard=0),
        ],
        "environment": {},
        "ipc_mode": "private",
        "hostname": "sandbox",
        "log_config": LogConfig(type=LogConfig.types.NONE),
        "labels": {
            LABEL_MANAGED: "1",
            LABEL_OWNER: owner_label(),
            **settings.container_labels,
            **labels,
        },
    }
    if settings.runtime:
        options["runtime"] = settings.runtime
    return options


def describe_exit(exit_code: int | None, stderr_tail: str) -> str:
    """A human cause for a container that ended without finishing its job."""
    if exit_code is None:
        cause = "the sandbox process died"
    elif exit_code > 128:
        try:
            name = signal.Signals(exit_code - 128).name
        except ValueError:
            name = f"signal {exit_code - 128}"
        cause = f"the check's process was killed by {name}"
    else:
        cause = f"the check's process exited with code {exit_code} before finishing"
    fatal = [line for line in stderr_tail.splitlines() if line.startswith("Fatal Python error")]
    if fatal:
        cause += f" ({fatal[-1]})"
    return cause


class _Frames:
    """Demultiplexes Docker's attach stream (8-byte headers) into (stream, payload)."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        self.buffer += data
        while len(self.buffer) >= 8:
            stream, size = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + size:
                return
            payload = bytes(self.buffer[8 : 8 + size])
            del self.buffer[: 8 + size]
            yield stream, payload


class DockerBackend:
    """Runs jobs in hardened, single-use Docker containers, with a warm pool."""

    def __init__(self, settings: Settings, *, reap_orphans: bool = True) -> None:
        self.settings = settings
        with docker_errors(settings.docker_host):
            if settings.docker_host:
                self.client = docker.DockerClient(
                    base_url=settings.docker_host, max_pool_size=settings.max_parallel_jobs * 2 + 8
                )
            else:
                self.client = docker.from_env(max_pool_size=settings.max_parallel_jobs * 2 + 8)
        self._trash: queue.Queue[Any] = queue.Queue()
        self._reaper = threading.Thread(target=self._reap_loop, name="scorebox-reaper", daemon=True)
        self._reaper.start()
        self._closed = False
        if reap_orphans:
            self.reap_orphans()
        self.pool = WarmPool(
            create=self._create_started,
            destroy=self._discard,
            size=settings.pool_size,
            idle_seconds=settings.pool_idle_seconds,
        )

    # -- containers ---------------------------------------------------------

    def _create_started(self, limits: Limits, labels: Mapping[str, str]) -> Any:
        with docker_errors(self.settings.docker_host):
            container = self.client.containers.create(
                **container_options(self.settings, limits, labels)
            )
            try:
                container.start()
            except BaseException:
                self._discard(container)
                raise
        return container

    def _discard(self, container: Any) -> None:
        """Destroy a container in the background (results never wait for removal)."""
        self._trash.put(container)

    def _reap_loop(self) -> None:
        while True:
            container = self._trash.get()
            if container is None:
                self._trash.task_done()
                return
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                # 409: the engine is already removing it (e.g. a kill raced the remove).
                if exc.status_code != 409:
                    log.warning("could not remove container %s: %s", container.id[:12], exc)
            except Exception:  # keep reaping: one stuck container must not leak the rest
                log.exception("could not remove container %s", getattr(container, "id", "?"))
            finally:
                self._trash.task_done()

    def reap_orphans(self) -> int:
        """Remove containers left by scorebox processes on this host that are gone."""
        removed = 0
        host = socket.gethostname()
        with docker_errors(self.settings.docker_host):
            containers = self.client.containers.list(
                all=True, filters={"label": f"{LABEL_MANAGED}=1"}, ignore_removed=True
            )
        for container in containers:
            owner = container.labels.get(LABEL_OWNER, "")
            owner_host, _, pid = owner.rpartition(":")
            if owner_host != host or not pid.isdigit() or _alive(int(pid)):
                continue
            self._discard(container)
            removed += 1
        return removed

    # -- jobs -----------------------------------------------------------------

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        """Run ``job`` in a fresh container; stream its records, end with a JobEnd."""
        container = self.pool.take(limits)
        if container is None:
            try:
                container = self._create_started(limits, labels)
            except SandboxError as exc:
                yield JobEnd(Termination.SANDBOX_ERROR, str(exc))
                return
        else:
            log.debug(
                "warm container %s serves tenant=%s run=%s",
                container.id[:12],
                labels.get(LABEL_TENANT),
                labels.get(LABEL_RUN),
            )
        try:
            yield from self._stream(container, job, limits)
        finally:
            self._discard(container)

    def _stream(self, container: Any, job: Job, limits: Limits) -> Iterator[JobEvent]:
        try:
            with docker_errors(self.settings.docker_host):
                attached = container.attach_socket(
                    params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                )
            sock: socket.socket = getattr(attached, "_sock", attached)
            sock.sendall(job.encode())
        except (SandboxError, OSError) as exc:
            yield JobEnd(
                Termination.SANDBOX_ERROR,
                f"could not attach to the sandbox: {exc}",
                container_id=container.id,
            )
            return

        frames = _Frames()
        line = bytearray()
        stderr_tail = bytearray()
        stderr_total = 0
        expected_row = 0
        start = time.monotonic()
        job_deadline = start + limits.job_wall_seconds(len(job.rows))
        step_deadline = start + job.load_timeout_seconds + ROW_GRACE_SECONDS
        row_allowance = job.row_timeout_seconds + ROW_GRACE_SECONDS
        cap = limits.max_output_bytes + STDERR_SLACK_BYTES

        def end(termination: Termination, detail: str, exit_code: int | None = None) -> JobEnd:
            return JobEnd(
                termination, detail, exit_code, container.id, stderr_tail.decode(errors="replace")
            )

        try:
            while True:
                now = time.monotonic()
                deadline = min(job_deadline, step_deadline)
                if now >= deadline:
                    self._kill(container)
                    if deadline == job_deadline:
                        detail = f"the job passed its wall clock of {job_deadline - start:.0f} s"
                    else:
                        detail = f"evaluate ran longer than {job.row_timeout_seconds} s"
                    yield end(Termination.TIMEOUT, detail)
                    return
                sock.settimeout(deadline - now)
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                for stream, payload in frames.feed(chunk):
                    if stream == STDERR:
                        stderr_total += len(payload)
                        stderr_tail += payload
                        del stderr_tail[:-STDERR_TAIL_BYTES]
                        if stderr_total > cap:
                            self._kill(container)
                            yield end(
                                Termination.OUTPUT_LIMIT,
                                f"the check wrote more than {limits.max_output_bytes} bytes",
                            )
                            return
                        continue
                    line += payload
                    while True:
                        newline = line.find(b"\n")
                        if newline < 0:
                            break
                        raw = bytes(line[:newline])
                        del line[: newline + 1]
                        try:
                            record = parse_record(raw, job.nonce, limits.max_record_bytes)
                        except ProtocolError as exc:
                            self._kill(container)
                            yield end(Termination.PROTOCOL_ERROR, str(exc))
                            return
                        if record is None:
                            continue
                        if isinstance(record, DoneRecord):
                            if expected_row != len(job.rows):
                                self._kill(container)
                                yield end(Termination.PROTOCOL_ERROR, "done before every row")
                                return
                            yield end(Termination.DONE, "")
                            return
                        if isinstance(record, RowRecord):
                            if record.i != expected_row:
                                self._kill(container)
                                yield end(
                                    Termination.PROTOCOL_ERROR,
                                    f"row {record.i} reported where {expected_row} was due",
                                )
                                return
                            expected_row += 1
                        step_deadline = time.monotonic() + row_allowance
                        assert isinstance(record, LoadedRecord | RowRecord)
                        yield record
                    if len(line) > limits.max_record_bytes:
                        self._kill(container)
                        yield end(Termination.PROTOCOL_ERROR, "result record too large")
                        return
        finally:
            with contextlib.suppress(OSError):
                sock.close()

        # The stream ended without the final record: the process died.
        state = self._final_state(container)
        if state.get("OOMKilled"):
            yield end(
                Termination.OOM,
                f"the check passed the memory limit of {limits.memory_mb} MiB",
                state.get("ExitCode"),
            )
            return
        exit_code = state.get("ExitCode")
        yield end(
            Termination.CRASHED,
            describe_exit(exit_code, stderr_tail.decode(errors="replace")),
            exit_code,
        )

    def _kill(self, container: Any) -> None:
        with contextlib.suppress(Exception):
            container.kill()

    def _final_state(self, container: Any) -> dict[str, Any]:
        try:
            container.wait(timeout=10)
            container.reload()
            state: dict[str, Any] = container.attrs.get("State", {})
            return state
        except Exception:  # the container is gone or the engine is slow: cause unknown
            log.warning("could not read the final state of %s", container.id[:12], exc_info=True)
            return {}

    # -- lifecycle ----------------------------------------------------------------

    def prewarm(self, limits: Limits) -> None:
        """Start keeping warm containers for ``limits`` (the pool fills in the background)."""
        self.pool.ensure_profile(limits)

    def health(self) -> BackendHealth:
        """Engine reachable, image present, warm pool sizes."""
        try:
            with docker_errors(self.settings.docker_host):
                self.client.ping()
        except SandboxError as exc:
            return BackendHealth(False, False, str(exc))
        try:
            with docker_errors(self.settings.docker_host):
                self.client.images.get(self.settings.image)
        except SandboxError as exc:
            return BackendHealth(True, False, str(exc))
        return BackendHealth(True, True, "ok", self.pool.sizes())

    def close(self) -> None:
        """Drain the warm pool and wait until every container made here is removed."""
        if self._closed:
            return
        self._closed = True
        self.pool.close()
        self._trash.put(None)
        self._reaper.join(timeout=120)
        self.client.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
