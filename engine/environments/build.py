"""Building, caching and recording declared environments (host side; no ``docker`` here).

An environment is built once per key (:func:`~engine.environments.spec.environment_key`):

1. **Download** on the host with ``pip download --only-binary=:all:`` through pip's own
   configuration (index, mirrors, proxy, certificates), or SCOREBOX_PACKAGE_INDEX_URL, plus
   SCOREBOX_PACKAGES_WHEELHOUSE as ``--find-links`` (:mod:`engine.environments.pip`). The one
   step with network; it runs no package code (wheels only: no build step, no setup.py).
   What resolved is checked before anything is installed
   (:mod:`engine.environments.downloaded`: the operator's rules, the unpacked size).
2. **Install** offline in a hardened container with no network (``--no-index
   --find-links``), through the :class:`~engine.environments.records.Installer` the Docker
   backend provides; the result is a derived image ``scorebox-env:<key>`` whose labels
   record what resolved (:mod:`engine.environments.records`).

Concurrent builders of one key (threads, processes, API servers and workers sharing a
Docker engine) are serialised by a file lock on the host beside the cache
(:mod:`engine.environments.locks`); whoever gets it second finds the image and builds
nothing. A failed build is remembered (its log kept) for
:data:`FAILURE_TTL_SECONDS`, so every row of a check gets the same ``sandbox_error``
without rebuilding.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.environments.admission import FairSlots, InFlight
from engine.environments.downloaded import check_downloaded
from engine.environments.locks import KeyLocks
from engine.environments.pip import HostPip, download_command
from engine.environments.prune import PruneItem, plan_prune
from engine.environments.records import (
    BuildOutcome,
    BuildState,
    EnvironmentRecord,
    Installer,
    RememberedFailure,
)
from engine.environments.spec import (
    Declared,
    PackageRules,
    environment_key,
    read_block,
)
from engine.errors import EnvironmentBuildError, PackageIndexError, ScoreboxError
from engine.settings import Settings

log = logging.getLogger(__name__)

#: A job's use of an environment is written down at most this often per key and process.
USE_MARK_SECONDS = 60.0
#: Seconds a failed build is remembered before a job may try it again.
FAILURE_TTL_SECONDS = 300.0


def log_hint(key: str) -> str:
    """Where an operator reads a build's log: said without the host's path (a tenant reads it)."""
    return f"`scorebox env show {key}` on the server"


def _build_error(message: str, retryable: bool) -> EnvironmentBuildError:
    """The error of a failed build: PackageIndexError when it may pass by itself."""
    return (PackageIndexError if retryable else EnvironmentBuildError)(message)


class Environments:
    """The environment cache of one host: key, build once, record, wait, prune."""

    def __init__(self, settings: Settings, installer: Installer) -> None:
        self.settings = settings
        self.installer = installer
        self.root = settings.data_dir / "environments"
        self.rules = PackageRules.of(settings.packages_allow, settings.packages_deny)
        #: One builder per key, in this process and on this host.
        self.locks = KeyLocks(self.root / "locks")
        self._ready: dict[str, EnvironmentRecord] = {}
        self._declared_cache: dict[str, Declared] = {}
        #: Builds this process ran (keys), for tests and the bench.
        self.built: list[str] = []
        #: Requirement sets being built per tenant (the ``environments`` quota counts them).
        self.in_flight = InFlight()
        #: SCOREBOX_ENV_MAX_CONCURRENT_BUILDS slots, served in turn across tenants.
        self.slots = FairSlots(settings.env_max_concurrent_builds)
        #: Called after every build attempt (name -> listener; the API adds the audit log).
        self.listeners: dict[str, Callable[[BuildOutcome], None]] = {}
        self._used: dict[str, float] = {}
        self.pip = HostPip(settings, self.root)

    # -- keys and paths ------------------------------------------------------------------

    def declared(self, source: str) -> Declared:
        """The block of ``source`` under this host's allow/deny rules."""
        return read_block(source, self.rules)

    def key(self, requirements: Sequence[str]) -> str:
        """The key of ``requirements`` on this host's base image."""
        return environment_key(requirements, self.settings.image)

    def log_path(self, key: str) -> Path:
        """Where the last build log of ``key`` is kept."""
        return self.root / "logs" / f"{key}.log"

    def _failure_path(self, key: str) -> Path:
        return self.root / "failed" / f"{key}.json"

    # -- use -----------------------------------------------------------------------------

    def image_for(self, source: str, tenant: str | None = None) -> str | None:
        """The image a check's job runs in: None without a block, else its built env.

        Builds on first use (waiting for another builder up to ``env_wait_seconds``).
        Raises EnvironmentBuildError naming the build and its log.
        """
        declared = self._declared_cache.get(source)
        if declared is None:
            declared = self.declared(source)
            if len(self._declared_cache) >= 256:
                self._declared_cache.clear()
            self._declared_cache[source] = declared
        if declared.problems:
            problem = declared.problems[0]
            raise EnvironmentBuildError(
                f"the check's `# /// script` block is refused (line {problem.line}): "
                f"{problem.message}"
            )
        if not declared.requirements:
            return None
        return self.ensure(declared.requirements, tenant).image

    def ensure(self, requirements: Sequence[str], tenant: str | None = None) -> EnvironmentRecord:
        """The built environment of ``requirements``: found, or built here once.

        ``tenant``: on whose behalf (its turn for a build slot, the audit record).
        """
        key = self.key(requirements)
        cached = self._ready.get(key)
        if cached is not None:
            self.mark_used(key)
            return cached
        with self.locks.hold(key, self.settings.env_wait_seconds, self._timed_out(key)):
            record = self.installer.find_environment(key)
            if record is None:
                self._raise_recent_failure(key)
                if self.settings.packages_offline:
                    raise EnvironmentBuildError(
                        f"environment {key} ({', '.join(requirements)}) is not built and "
                        "SCOREBOX_PACKAGES_OFFLINE is set: build it in advance with `scorebox "
                        "env build CHECK_FILE` on this host"
                    )
                record = self._build_in_turn(key, requirements, tenant)
        self._ready[key] = record
        self.mark_used(key)
        return record

    def mark_used(self, key: str) -> None:
        """Note that a job used ``key`` now (pruning removes the long unused first)."""
        now = time.time()
        if now - self._used.get(key, 0.0) < USE_MARK_SECONDS:
            return
        self._used[key] = now
        path = self.root / "used" / key
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()

    def last_used(self, record: EnvironmentRecord) -> float:
        """When a job last used ``record`` on this host (its build time if never)."""
        try:
            used = (self.root / "used" / record.key).stat().st_mtime
        except OSError:
            used = 0.0
        return max(used, record.built_at)

    def forget_image(self, image: str) -> None:
        """Drop a cached record whose image vanished (pruned): the next use looks again."""
        for key, record in list(self._ready.items()):
            if record.image == image:
                self._ready.pop(key, None)

    def state(self, requirements: Sequence[str]) -> BuildState:
        """Ready, building (another holder of the lock), failed or missing."""
        key = self.key(requirements)
        record = self._ready.get(key) or self.installer.find_environment(key)
        if record is not None:
            return BuildState(key, "ready", record, requirements=tuple(requirements))
        failure = self._failure(key)
        if failure is not None:
            return BuildState(
                key,
                "failed",
                None,
                failure.error,
                str(self.log_path(key)),
                tuple(requirements),
                retryable=failure.retryable,
                retry_after_seconds=round(failure.seconds_left, 1),
            )
        if self.locks.held_elsewhere(key):
            return BuildState(key, "building", requirements=tuple(requirements))
        return BuildState(key, "missing", requirements=tuple(requirements))

    # -- build ---------------------------------------------------------------------------

    def _build_in_turn(
        self, key: str, requirements: Sequence[str], tenant: str | None
    ) -> EnvironmentRecord:
        """Wait for a build slot (in turn across tenants), build, tell the listeners.

        The build counts among ``tenant``'s builds in flight while it waits and runs.
        """
        if tenant is not None:
            self.in_flight.add(tenant, tuple(requirements))
        try:
            return self._build_in_slot(key, requirements, tenant)
        finally:
            if tenant is not None:
                self.in_flight.done(tenant, tuple(requirements))

    def _build_in_slot(
        self, key: str, requirements: Sequence[str], tenant: str | None
    ) -> EnvironmentRecord:
        if not self.slots.acquire(tenant or "", self.settings.env_wait_seconds):
            raise EnvironmentBuildError(  # not remembered: the next use may find a slot
                f"environment {key} waited SCOREBOX_ENV_WAIT_SECONDS="
                f"{self.settings.env_wait_seconds:.0f} for one of the server's "
                f"{self.slots.size} build slots (SCOREBOX_ENV_MAX_CONCURRENT_BUILDS): "
                "try again later"
            )
        started = time.monotonic()
        try:
            record = self._build(key, requirements)
        except EnvironmentBuildError as exc:
            self._tell(
                BuildOutcome(
                    key,
                    tuple(requirements),
                    tenant,
                    "failed",
                    round(time.monotonic() - started, 3),
                    error=str(exc),
                )
            )
            raise
        finally:
            self.slots.release()
        self._tell(
            BuildOutcome(
                key,
                tuple(requirements),
                tenant,
                "built",
                round(time.monotonic() - started, 3),
                record.size_bytes,
                dict(record.resolved),
            )
        )
        self._prune_after_build(key)
        return record

    def close(self) -> None:
        """Tell no listener of builds that end from now on: their owner (the server's audit
        log, on its store) is shutting down. A build in flight goes on to its end, and what it
        ends with is kept as always: the environment, or its remembered failure and log."""
        self.listeners.clear()

    def _tell(self, outcome: BuildOutcome) -> None:
        for name, listener in list(self.listeners.items()):
            try:
                listener(outcome)
            except Exception:  # a listener (the audit log) must not fail the build
                log.exception("environment build listener %s failed", name)

    def _prune_after_build(self, key: str) -> None:
        try:
            removed = self.prune_unused(keep=(key,))
        except ScoreboxError as exc:
            log.warning("pruning environments after a build failed: %s", exc)
            return
        if removed:
            log.info("pruned environments %s", ", ".join(p.key for p in removed))

    def _build(self, key: str, requirements: Sequence[str]) -> EnvironmentRecord:
        log_file = self.log_path(key)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix=f"scorebox-env-{key}-") as tmp:
                wheels = Path(tmp)
                self._download(requirements, wheels, log_file)
                self._download_pip(wheels, log_file)
                spent = time.monotonic() - started
                record = self.installer.install_environment(
                    key,
                    wheels,
                    requirements,
                    timeout=max(self.settings.env_build_timeout_seconds - spent, 1.0),
                    max_bytes=self.settings.env_max_mb * 1024 * 1024,
                    log_file=log_file,
                )
        except EnvironmentBuildError as exc:
            retryable = isinstance(exc, PackageIndexError)
            message = (
                f"environment {key} failed to build: {self._for_tenant(str(exc))} "
                f"(build log: {log_hint(key)})"
            )
            log.warning("environment %s failed to build (log %s): %s", key, log_file, message)
            if retryable:
                message += (
                    f"; retryable: the next use after SCOREBOX_ENV_RETRY_SECONDS="
                    f"{self.settings.env_retry_seconds:.0f} tries again, or `scorebox env "
                    "build CHECK_FILE` now"
                )
            self._remember_failure(key, message, retryable=retryable)
            raise _build_error(message, retryable) from exc
        self._failure_path(key).unlink(missing_ok=True)
        self.built.append(key)
        log.info("built environment %s in %.1f s", key, time.monotonic() - started)
        return record

    def _download(self, requirements: Sequence[str], dest: Path, log_file: Path) -> None:
        wheels = dest
        wheels.mkdir(exist_ok=True)
        command = download_command(requirements, wheels, self.settings)
        self._pip(command, log_file, "download")
        # what resolved (dependencies too) against the rules, and its unpacked size
        check_downloaded(
            sorted(wheels.glob("*.whl")), requirements, self.rules, self.settings.env_max_mb
        )

    def _download_pip(self, dest: Path, log_file: Path) -> None:
        """pip's own wheel, which installs the others inside the container (no pip there)."""
        tools = self.root / "tools"
        tools.mkdir(parents=True, exist_ok=True)
        found = sorted(tools.glob("pip-*.whl"))
        if not found:
            self._pip(download_command(["pip"], tools, self.settings), log_file, "download pip")
            found = sorted(tools.glob("pip-*.whl"))
        if not found:
            raise EnvironmentBuildError("pip download fetched no pip wheel")
        shutil.copy2(found[-1], dest / "scorebox-installer-pip.whl")

    def _pip(self, command: list[str], log_file: Path, step: str) -> str:
        return self.pip.run(command, log_file, step)

    def _for_tenant(self, text: str) -> str:
        return self.pip.for_tenant(text)

    # -- failures ------------------------------------------------------------------------

    def _timed_out(self, key: str) -> Callable[[], EnvironmentBuildError]:
        """The error of a wait for ``key``'s build lock that ran out."""
        return lambda: EnvironmentBuildError(
            f"environment {key} is still being built by another process after "
            f"SCOREBOX_ENV_WAIT_SECONDS={self.settings.env_wait_seconds:.0f}: try again later "
            f"(build log: {log_hint(key)})"
        )

    def _remember_failure(self, key: str, message: str, *, retryable: bool = False) -> None:
        path = self._failure_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"at": time.time(), "error": message, "retryable": retryable}))

    def _failure(self, key: str) -> RememberedFailure | None:
        try:
            data = json.loads(self._failure_path(key).read_text())
        except (OSError, ValueError):
            return None
        retryable = bool(data.get("retryable", False))
        ttl = self.settings.env_retry_seconds if retryable else FAILURE_TTL_SECONDS
        left = float(data.get("at", 0)) + ttl - time.time()
        if left <= 0:
            return None
        return RememberedFailure(str(data.get("error", "failed")), retryable, left)

    def failure(self, key: str) -> RememberedFailure | None:
        """The remembered failed build of ``key`` on this host, if still remembered."""
        return self._failure(key)

    def building(self, key: str) -> bool:
        """Whether a process on this host holds ``key``'s build lock (is building it)."""
        return self.locks.held_elsewhere(key)

    def _raise_recent_failure(self, key: str) -> None:
        failure = self._failure(key)
        if failure is not None:
            raise _build_error(failure.error, failure.retryable)

    def forget_failure(self, key: str | None = None) -> None:
        """Let the next use build ``key`` (None: every key) again.

        ``scorebox env build`` forgets its key; ``scorebox env wheel`` forgets them all,
        since a new wheel in the wheelhouse may mend any failed build.
        """
        paths = [self._failure_path(key)] if key else list(self.root.glob("failed/*.json"))
        for path in paths:
            path.unlink(missing_ok=True)

    # -- operators -------------------------------------------------------------------------

    def records(self) -> list[EnvironmentRecord]:
        """Every environment built on this engine, newest first."""
        return sorted(self.installer.list_environments(), key=lambda r: -r.built_at)

    def prune(self, *, keep: Sequence[str] = (), all_bases: bool = False) -> list[str]:
        """Remove environments of other base images (or all but ``keep`` with all_bases)."""
        removed = []
        for record in self.installer.list_environments():
            if record.key in keep:
                continue
            stale = all_bases or record.base_image != self.settings.image
            if stale and self.installer.remove_environment(record.key):
                removed.append(record.key)
                self._ready.pop(record.key, None)
        return removed

    def prune_unused(
        self, *, keep: Sequence[str] = (), dry_run: bool = False, all_bases: bool = False
    ) -> list[PruneItem]:
        """Remove other base images' environments, the long unused, then the least
        recently used past SCOREBOX_ENV_MAX_TOTAL_MB (:func:`~.prune.plan_prune`)."""
        plan = plan_prune(
            self.installer.list_environments(),
            self.last_used,
            image=self.settings.image,
            now=time.time(),
            unused_days=self.settings.env_prune_unused_days,
            max_total_bytes=self.settings.env_max_total_mb * 1024 * 1024,
            keep=keep,
            all_bases=all_bases,
        )
        if dry_run:
            return plan
        removed = []
        for item in plan:
            if self.installer.remove_environment(item.key):
                removed.append(item)
                self._ready.pop(item.key, None)
                (self.root / "used" / item.key).unlink(missing_ok=True)
        return removed
