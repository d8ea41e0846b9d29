"""The Docker sandbox backend: runs jobs in containers over Docker's attach stream.

With :mod:`engine.sandbox.docker.containers` (how every container is hardened, see
:func:`~engine.sandbox.docker.containers.container_options`), the only code that imports
``docker``. A
:class:`WarmPool` keeps started, never-used containers ready so a job starts in
milliseconds. With ``reuse="check"`` (the default) a container whose job ended
cleanly is kept as a warm check worker for later jobs of the same tenant, check
version, policy and limits profile (:class:`CheckWorkers`); the harness resets
itself between jobs. Any job that ends in a timeout, oom, output limit, crash or
protocol fault destroys its container, and ``reuse="never"`` destroys every one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import docker
import docker.errors

from engine.contract import Status
from engine.environments.build import Environments
from engine.environments.spec import BLOCK_MARKER
from engine.errors import (
    DockerUnavailableError,
    SandboxError,
)
from engine.gateway.service import (
    MAX_REPLY_BYTES,
    GatewaySession,
    cancelled_reply,
    current_session,
    no_gateway_reply,
    oversized_reply,
    too_many_reply,
)
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEnd, JobEvent, Termination
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.docker.containers import (
    LABEL_MANAGED,
    LABEL_RUN,
    LABEL_TENANT,
    container_options,
    describe_exit,
    docker_errors,
    engine_runtimes,
    is_gvisor,
    require_runtime,
)
from engine.sandbox.docker.environments import DockerEnvironments
from engine.sandbox.docker.owners import owner_gone
from engine.sandbox.pool import CheckWorkers, WarmPool
from engine.sandbox.protocol import (
    DoneRecord,
    Job,
    LLMRequestRecord,
    RowRecord,
    encode_reply,
    parse_records,
)
from engine.settings import Settings

log = logging.getLogger(__name__)

#: Row statuses after which a worker is not trusted with another job.
DIRTY_STATUSES = frozenset({"timeout", "oom", "output_limit", "crashed"})
#: Extra seconds the host allows past the harness's own per-row timer.
ROW_GRACE_SECONDS = 2.0
#: Output the container may write beyond the check's cap (harness messages, tracebacks).
STDERR_SLACK_BYTES = 64 * 1024
STDERR_TAIL_BYTES = 4096
#: Under gVisor, a warm worker is retired once its checks created this many tasks per
#: ``max_pids`` (host threads left behind grow with them, about 3.6 per task: 22 forks a
#: job took a sandbox from 215 host tasks to 414 in 4 jobs; the harness's own per-job
#: child does not count, and trivial checks stay near 70 host tasks over 300 jobs).
GVISOR_TASK_BUDGET = 2
STDOUT, STDERR = 1, 2


def reuse_key(job: Job, limits: Limits, labels: Mapping[str, str]) -> str:
    """The trust domain and way of running a warm worker is bound to."""
    digest = hashlib.sha256()
    for part in (
        labels.get(LABEL_TENANT, ""),
        job.source,
        job.policy.value,
        job.output_type.value if job.output_type else "",
        limits.profile,
    ):
        digest.update(part.encode(errors="surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


class _Frames:
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


class _GatewayLink:
    """One job's model calls: replies written back to the container while the job lasts,
    and what the host learned per row (the model that served it, an upstream failure).

    At most the session's ``container_concurrency`` requests are in flight (the harness
    holds the rest; one past the bound is answered 429 here); a reply frame over
    :data:`~engine.gateway.service.MAX_REPLY_BYTES` is never sent (the call gets an
    error instead, and the channel stays whole); when the job ends its queued requests
    are dropped (:meth:`close`)."""

    def __init__(self, sock: socket.socket, session: GatewaySession | None) -> None:
        self.sock = sock
        self.session = session
        self.lock = threading.Lock()
        self.open = True
        self.inflight = 0
        self.failures: dict[int, str] = {}
        self.models: dict[int, set[str]] = {}

    def request(self, record: LLMRequestRecord, row: int) -> None:
        """Answer ``record`` (made while ``row`` was in flight) off the caller's thread."""
        session = self.session
        if session is None:
            reply = no_gateway_reply(record.path)
            self.deliver(record.id, row, reply.status, reply.body, None, None, counted=False)
            return
        with self.lock:
            over = self.inflight >= session.container_concurrency
            if not over:
                self.inflight += 1
        if over:
            reply = too_many_reply(record.path, session.container_concurrency)
            self.deliver(record.id, row, reply.status, reply.body, None, None, counted=False)
            return

        def answer() -> None:
            try:
                reply = session.answer(record.method, record.path, record.body)
            except Exception as exc:  # a bug here must still answer the check
                log.exception("the model gateway failed")
                self.deliver(record.id, row, 500, '{"message": "gateway error"}', None, str(exc))
                return
            self.deliver(
                record.id, row, reply.status, reply.body, reply.served_by, reply.upstream_error
            )

        def cancelled(reason: str) -> None:
            reply = cancelled_reply(record.path, reason)
            self.deliver(record.id, row, reply.status, reply.body, None, None)

        session.submit(answer, owner=self, cancelled=cancelled)

    def deliver(
        self,
        request_id: int,
        row: int,
        status: int,
        body: str,
        served_by: str | None,
        failure: str | None,
        *,
        counted: bool = True,
    ) -> None:
        frame = encode_reply(request_id, status, body)
        if len(frame) - frame.index(b"\n") - 1 > MAX_REPLY_BYTES:
            # The harness could not take it whole: that call gets an error, the row and
            # the job's channel carry on.
            log.warning("a model reply of %d bytes was over the gateway's limit", len(frame))
            reply = oversized_reply(len(body.encode()))
            frame = encode_reply(request_id, reply.status, reply.body)
        with self.lock:
            if counted:
                self.inflight = max(0, self.inflight - 1)
            if failure is not None:
                self.failures.setdefault(row, failure)
            if served_by:
                self.models.setdefault(row, set()).add(served_by)
            if not self.open:
                return  # the job is over: the container (or its next job) never sees it
            with contextlib.suppress(OSError):
                self.sock.sendall(frame)

    def outcome(self, record: RowRecord) -> RowRecord:
        """``record`` with the host's knowledge: the model that served it (a container's
        own ``served_by`` is always replaced) and ``judge_error`` when the upstream failed."""
        with self.lock:
            failure = self.failures.pop(record.i, None)
            models = self.models.pop(record.i, None)
        update: dict[str, Any] = {"served_by": ", ".join(sorted(models)) if models else None}
        if failure is not None:
            update.update(
                status=Status.JUDGE_ERROR,
                score=None,
                output_type=None,
                explanation=None,
                error=short_error(failure, record.error),
            )
        return record.model_copy(update=update)

    def outcome_block(self, record: BlockRecord) -> None:
        """:meth:`outcome` for the rows of a block, in place."""
        block = record.block
        with self.lock:
            rows = range(record.i, record.i + record.n)
            failures = {i: self.failures.pop(i) for i in list(self.failures) if i in rows}
            models = {i: self.models.pop(i) for i in list(self.models) if i in rows}
        for i, served in models.items():
            block.served_by[i - record.i] = ", ".join(sorted(served))
        for i, failure in failures.items():
            k = i - record.i
            extra = block.extras.get(k)
            block.set_status(
                k, Status.JUDGE_ERROR, short_error(failure, extra.error if extra else None)
            )

    def close(self) -> None:
        """The job ended: no reply reaches the container any more, and its requests still
        queued for a slot are dropped (those running upstream are not waited for)."""
        with self.lock:
            self.open = False
        if self.session is not None:
            self.session.cancel(self)


def short_error(failure: str, check_error: str | None) -> str:
    text = failure if check_error is None else f"{failure} (the check: {check_error})"
    return text if len(text) <= 4000 else text[:3997] + "..."


@dataclass(eq=False)
class _Worker:
    """A started container with its open attach socket and stream state."""

    container: Any
    sock: socket.socket | None = None
    frames: _Frames = field(default_factory=_Frames)
    line: bytearray = field(default_factory=bytearray)
    jobs: int = 0
    born: float = field(default_factory=time.monotonic)
    clean: bool = False


class DockerBackend:
    """Runs jobs in hardened Docker containers: a warm pool of started, never-used ones, and
    (``reuse="check"``, the default) warm check workers kept after a clean job for the next
    job of the same tenant, check version, policy and limits; see the module docstring."""

    def __init__(self, settings: Settings, *, reap_orphans: bool = True) -> None:
        self.settings = settings
        with docker_errors(settings.docker_host):
            if settings.docker_host:
                self.client = docker.DockerClient(
                    base_url=settings.docker_host, max_pool_size=settings.max_parallel_jobs * 2 + 8
                )
            else:
                self.client = docker.from_env(max_pool_size=settings.max_parallel_jobs * 2 + 8)
        try:
            self.runtimes, self.default_runtime, offered = engine_runtimes(
                self.client, settings.docker_host
            )
            require_runtime(settings.runtime, self.runtimes, settings.docker_host)
            #: Whether containers run under gVisor (the named runtime, else the default).
            self.gvisor = is_gvisor(settings.runtime or self.default_runtime, offered)
        except BaseException:
            self.client.close()
            raise
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
            max_size=settings.pool_max_size,
            refills=settings.pool_refills,
        )
        self.workers = CheckWorkers(
            destroy=self._discard_worker,
            max_jobs=settings.worker_max_jobs,
            max_age=settings.worker_max_age_seconds,
            idle_seconds=settings.worker_idle_seconds,
        )
        #: Declared (PEP 723) environments, built on first use into derived images.
        self.environments = Environments(settings, DockerEnvironments(self.client, settings))

    # -- containers ---------------------------------------------------------

    def _create_started(
        self, limits: Limits, labels: Mapping[str, str], image: str | None = None
    ) -> Any:
        options = container_options(self.settings, limits, labels, gvisor=self.gvisor)
        if image is not None:
            options["image"] = image  # the check's declared environment, derived from it
        with docker_errors(self.settings.docker_host):
            container = self.client.containers.create(**options)
            try:
                container.start()
            except BaseException:
                self._discard(container)
                raise
        return container

    def _discard(self, container: Any) -> None:
        """Destroy a container in the background (results never wait for removal)."""
        self._trash.put(container)

    def _engine_lost(self, why: str) -> None:
        """The engine stopped or restarted (containers died under us): every warm container
        made before is dead or doomed, so the pool and the idle check workers are emptied
        and refill with fresh ones."""
        dropped = self.pool.drain() + self.workers.drain()
        log.warning("Docker engine lost (%s): dropped %d warm containers", why, dropped)

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
        """Remove containers left by gone scorebox processes of this host and PID namespace."""
        removed = 0
        host = socket.gethostname()
        with docker_errors(self.settings.docker_host):
            containers = self.client.containers.list(
                all=True, filters={"label": f"{LABEL_MANAGED}=1"}, ignore_removed=True
            )
        for container in containers:
            # host, PID, the maker's PID namespace and start time (sandbox/docker/owners.py)
            if not owner_gone(container.labels, host):
                continue
            self._discard(container)
            removed += 1
        return removed

    # -- jobs -----------------------------------------------------------------

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        """Run ``job`` in a warm check worker or a fresh container; end with a JobEnd."""
        key = reuse_key(job, limits, labels) if self.settings.reuse == "check" else None
        if self.gvisor and key and job.task_budget is None:
            job = job.model_copy(update={"task_budget": limits.max_pids * GVISOR_TASK_BUDGET})
        worker = self.workers.take(key) if key else None
        if worker is None:
            image = None
            if BLOCK_MARKER in job.source:
                try:  # builds on first use; waits for another builder up to a bound
                    image = self.environments.image_for(job.source, labels.get(LABEL_TENANT))
                except SandboxError as exc:
                    yield JobEnd(Termination.SANDBOX_ERROR, str(exc))
                    return
            container = self.pool.take(limits) if image is None else None
            if container is None:
                try:
                    container = self._create_started(limits, labels, image)
                except SandboxError as exc:
                    if image is not None:  # e.g. pruned meanwhile: a retry builds it again
                        self.environments.forget_image(image)
                    down = isinstance(exc, DockerUnavailableError)
                    yield JobEnd(Termination.SANDBOX_ERROR, str(exc), engine_down=down)
                    return
            else:
                log.debug(
                    "warm container %s serves tenant=%s run=%s",
                    container.id[:12],
                    labels.get(LABEL_TENANT),
                    labels.get(LABEL_RUN),
                )
            worker = _Worker(container)
        worker.clean = False
        try:
            yield from self._stream(worker, job, limits)
        finally:
            worker.jobs += 1
            if key and worker.clean:
                self.workers.give(key, worker, worker.jobs, worker.born)
            else:
                self._discard_worker(worker)

    def _discard_worker(self, worker: _Worker) -> None:
        if worker.sock is not None:
            with contextlib.suppress(OSError):
                worker.sock.close()
        self._discard(worker.container)

    def _stream(self, worker: _Worker, job: Job, limits: Limits) -> Iterator[JobEvent]:
        container = worker.container
        try:
            if worker.sock is None:
                with docker_errors(self.settings.docker_host):
                    attached = container.attach_socket(
                        params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                    )
                worker.sock = getattr(attached, "_sock", attached)
            sock: socket.socket = worker.sock
            sock.sendall(job.encode())
        except (SandboxError, OSError) as exc:
            self._engine_lost(f"could not attach to {container.id[:12]}")
            yield JobEnd(
                Termination.SANDBOX_ERROR,
                f"could not attach to the sandbox: {exc}",
                container_id=container.id,
                engine_down=True,  # a dead container or engine: the runner waits a moment
            )
            return
        sent_at = time.time()

        frames = worker.frames
        line = worker.line
        link = _GatewayLink(sock, current_session())
        dirty = False
        stderr_tail = bytearray()
        stderr_total = 0
        expected_row = 0
        start = time.monotonic()
        job_deadline = start + limits.job_wall_seconds(len(job.rows))
        step_deadline = start + job.load_timeout_seconds + ROW_GRACE_SECONDS
        step_started = start
        called_model = False  # the row in flight called the model: the gateway's bound holds
        row_allowance = job.row_timeout_seconds + ROW_GRACE_SECONDS
        cap = limits.max_output_bytes + STDERR_SLACK_BYTES

        def end(
            termination: Termination,
            detail: str,
            exit_code: int | None = None,
            *,
            engine_down: bool = False,
        ) -> JobEnd:
            return JobEnd(
                termination,
                detail,
                exit_code,
                container.id,
                stderr_tail.decode(errors="replace"),
                engine_down,
            )

        try:
            while True:
                now = time.monotonic()
                deadline = min(job_deadline, step_deadline)
                if now >= deadline:
                    self._kill(container)
                    if deadline == job_deadline:
                        detail = f"the job passed its wall clock of {job_deadline - start:.0f} s"
                    elif called_model:
                        detail = (
                            f"evaluate ran longer than {job.gateway_row_timeout_seconds} s, the "
                            "bound of a row that calls the model "
                            "(SCOREBOX_GATEWAY_ROW_TIMEOUT_SECONDS)"
                        )
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
                    last = line.rfind(b"\n")
                    if last < 0:
                        continue
                    complete = bytes(line[:last]).split(b"\n")
                    del line[: last + 1]
                    records, error = parse_records(complete, job.nonce, limits.max_record_bytes)
                    for record in records:
                        if isinstance(record, LLMRequestRecord):
                            link.request(record, expected_row)
                            if job.gateway_row_timeout_seconds:
                                # Model calls count against the row, within a larger bound.
                                allowance = job.gateway_row_timeout_seconds + ROW_GRACE_SECONDS
                                step_deadline = max(step_deadline, step_started + allowance)
                                job_deadline = max(job_deadline, time.monotonic() + allowance)
                                called_model = True
                            continue
                        if isinstance(record, DoneRecord):
                            if expected_row != len(job.rows):
                                self._kill(container)
                                yield end(
                                    Termination.PROTOCOL_ERROR,
                                    "the check broke the result protocol: done before every row",
                                )
                                return
                            worker.clean = record.reusable and not dirty
                            yield end(Termination.DONE, "")
                            return
                        if isinstance(record, RowRecord | BlockRecord):
                            if record.i != expected_row:
                                self._kill(container)
                                yield end(
                                    Termination.PROTOCOL_ERROR,
                                    f"the check broke the result protocol: row {record.i} "
                                    f"reported where {expected_row} was due",
                                )
                                return
                            if isinstance(record, BlockRecord):
                                expected_row += record.n
                                dirty = dirty or record.block.has_status(DIRTY_STATUSES)
                                link.outcome_block(record)
                            else:
                                expected_row += 1
                                dirty = dirty or record.status in DIRTY_STATUSES
                        step_started = time.monotonic()
                        called_model = False
                        step_deadline = step_started + row_allowance
                        yield link.outcome(record) if isinstance(record, RowRecord) else record
                    if error is not None:
                        self._kill(container)
                        yield end(
                            Termination.PROTOCOL_ERROR,
                            f"the check broke the result protocol: {error}",
                        )
                        return
                    if len(line) > limits.max_record_bytes:
                        self._kill(container)
                        yield end(
                            Termination.PROTOCOL_ERROR,
                            "the check broke the result protocol: result record too large",
                        )
                        return
        finally:
            link.close()
            if not worker.clean:
                with contextlib.suppress(OSError):
                    sock.close()
                worker.sock = None

        # The stream ended without the final record: the process died.
        state = self._final_state(container)
        if not state:
            self._engine_lost("a container's final state could not be read")
            yield end(
                Termination.SANDBOX_ERROR,
                "the sandbox ended and the Docker engine could not say how (it may have "
                "stopped or restarted); the rows without a result run again",
                engine_down=True,
            )
            return
        if _finished_before(state, sent_at):
            self._engine_lost(f"{container.id[:12]} had stopped before its job")
            yield end(
                Termination.SANDBOX_ERROR,
                "the sandbox had stopped before the job reached it (the Docker engine "
                "restarted?); the rows run again in a fresh one",
                engine_down=True,
            )
            return
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
        return BackendHealth(
            True,
            True,
            "ok",
            {**self.pool.sizes(), "check-workers": sum(self.workers.sizes().values())},
            runtimes=self.runtimes,
            runtime=self.settings.runtime or self.default_runtime,
        )

    def close(self) -> None:
        """Drain the warm pool and wait until every container made here is removed."""
        if self._closed:
            return
        self._closed = True
        self.workers.close()
        self.pool.close()
        self._trash.put(None)
        self._reaper.join(timeout=120)
        self.client.close()


def _finished_before(state: Mapping[str, Any], moment: float) -> bool:
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
