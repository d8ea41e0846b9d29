"""The Docker sandbox backend: containers for jobs, opened as byte channels.

The backend keeps the Docker client, the warm pools and reaping, and hands each job a
:class:`~engine.sandbox.docker.channel.DockerChannel` over a container's attach socket;
what the bytes mean, and the rules they must keep, are the job stream's
(:mod:`engine.sandbox.jobstream`). With :mod:`engine.sandbox.docker.containers` (how
every container is hardened, see
:func:`~engine.sandbox.docker.containers.container_options`), the only code that imports
``docker``. A :class:`WarmPool` keeps started, never-used containers ready so a job
starts in milliseconds. With ``reuse="check"`` (the default) a container whose job ended
cleanly is kept as a warm check container for later jobs of the same tenant, check
version, policy and limits profile (:class:`CheckContainers`); the harness resets
itself between jobs. Any job that ends in a timeout, oom, output limit, crash or
protocol fault destroys its container, and ``reuse="never"`` destroys every one.
Declared environments' images are built by :mod:`engine.sandbox.docker.environments`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import docker
import docker.errors

from engine.environments.build import Environments
from engine.environments.spec import BLOCK_MARKER
from engine.errors import DockerUnavailableError, SandboxError
from engine.gateway.service import current_session
from engine.models import Limits
from engine.sandbox.backend import BackendHealth, JobEvent
from engine.sandbox.channel import ChannelError
from engine.sandbox.docker.channel import AttachedContainer, DockerChannel
from engine.sandbox.docker.containers import (
    LABEL_MANAGED,
    LABEL_RUN,
    LABEL_TENANT,
    container_options,
    docker_errors,
    engine_runtimes,
    is_gvisor,
    require_runtime,
)
from engine.sandbox.docker.environments import DockerEnvironments
from engine.sandbox.docker.owners import owner_gone
from engine.sandbox.jobstream import execute_on
from engine.sandbox.pool import CheckContainers, WarmPool
from engine.sandbox.protocol import Job
from engine.settings import Settings

log = logging.getLogger(__name__)

#: Under gVisor, a warm check container is retired once its checks created this many tasks per
#: ``max_pids`` (host threads left behind grow with them, about 3.6 per task: 22 forks a
#: job took a sandbox from 215 host tasks to 414 in 4 jobs; the harness's own per-job
#: child does not count, and trivial checks stay near 70 host tasks over 300 jobs).
GVISOR_TASK_BUDGET = 2


def reuse_key(job: Job, limits: Limits, labels: Mapping[str, str]) -> str:
    """The trust domain and way of running a warm check container is bound to."""
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


class DockerBackend:
    """Runs jobs in hardened Docker containers: a warm pool of started, never-used ones, and
    (``reuse="check"``, the default) warm check containers kept after a clean job for the next
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
        self.kept = CheckContainers(
            destroy=self._discard_attached,
            max_jobs=settings.reuse_max_jobs,
            max_age=settings.reuse_max_age_seconds,
            idle_seconds=settings.reuse_idle_seconds,
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
        made before is dead or doomed, so the pool and the idle check containers are emptied
        and refill with fresh ones."""
        dropped = self.pool.drain() + self.kept.drain()
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
        """Run ``job`` in a warm check container or a fresh container; end with a JobEnd."""
        yield from execute_on(self, job, limits, labels, current_session())

    def open(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> DockerChannel:
        """A channel to a warm check container of the job's kind, else to a fresh container."""
        key = reuse_key(job, limits, labels) if self.settings.reuse == "check" else None
        if self.gvisor and key and job.task_budget is None:
            job = job.model_copy(update={"task_budget": limits.max_pids * GVISOR_TASK_BUDGET})
        if not key:  # discarded after this job: a child forked ahead would only be killed
            job = job.model_copy(update={"fork_ahead": False})
        attached = self.kept.take(key) if key else None
        if attached is None:
            attached = AttachedContainer(self._start_for(job, limits, labels))
        if attached.sock is None:
            try:
                with docker_errors(self.settings.docker_host):
                    sock = attached.container.attach_socket(
                        params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                    )
            except (SandboxError, OSError) as exc:
                self._engine_lost(f"could not attach to {attached.container.id[:12]}")
                self._discard_attached(attached)
                raise ChannelError(
                    f"could not attach to the sandbox: {exc}",
                    engine_down=True,  # a dead container or engine: the runner waits a moment
                    container_id=attached.container.id,
                ) from exc
            attached.sock = getattr(sock, "_sock", sock)

        def release(done: AttachedContainer, reusable: bool) -> None:
            done.jobs += 1
            if key and reusable:
                self.kept.give(key, done, done.jobs, done.born)
            else:
                self._discard_attached(done)

        return DockerChannel(attached, job, release=release, engine_lost=self._engine_lost)

    def _start_for(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Any:
        """A started container for ``job``: from the warm pool, or made now (in the check's
        declared environment's image, built on first use)."""
        image = None
        if BLOCK_MARKER in job.source:
            try:  # builds on first use; waits for another builder up to a bound
                image = self.environments.image_for(job.source, labels.get(LABEL_TENANT))
            except SandboxError as exc:
                raise ChannelError(str(exc)) from exc
        container = self.pool.take(limits) if image is None else None
        if container is not None:
            log.debug(
                "warm container %s serves tenant=%s run=%s",
                container.id[:12],
                labels.get(LABEL_TENANT),
                labels.get(LABEL_RUN),
            )
            return container
        try:
            return self._create_started(limits, labels, image)
        except SandboxError as exc:
            if image is not None:  # e.g. pruned meanwhile: a retry builds it again
                self.environments.forget_image(image)
            down = isinstance(exc, DockerUnavailableError)
            raise ChannelError(str(exc), engine_down=down) from exc

    def _discard_attached(self, attached: AttachedContainer) -> None:
        if attached.sock is not None:
            with contextlib.suppress(OSError):
                attached.sock.close()
        self._discard(attached.container)

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
            {**self.pool.sizes(), "check-containers": sum(self.kept.sizes().values())},
            runtimes=self.runtimes,
            runtime=self.settings.runtime or self.default_runtime,
        )

    def close(self) -> None:
        """Drain the warm pool and wait until every container made here is removed."""
        if self._closed:
            return
        self._closed = True
        self.environments.close()  # a build still running reports to no one now
        self.kept.close()
        self.pool.close()
        self._trash.put(None)
        self._reaper.join(timeout=120)
        self.client.close()
