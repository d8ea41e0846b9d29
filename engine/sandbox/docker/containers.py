"""How a sandbox container is made: the hardened options, labels and OCI runtimes.

Every container is hardened the same way (:func:`container_options`; docs/architecture.md,
"Sandbox"); gVisor (runsc) needs its process limit counted differently (:func:`pids_options`).
Used by :mod:`engine.sandbox.docker.backend`, which runs jobs in these containers.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator, Mapping
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.types import LogConfig, Ulimit

from engine.errors import (
    DockerUnavailableError,
    ImageNotFoundError,
    RuntimeUnavailableError,
    SandboxError,
)
from engine.models import Limits
from engine.sandbox.docker.owners import LABEL_OWNER_PROCESS, process_identity
from engine.settings import Settings

#: The harness is the container's PID 1 (the image's tini is bypassed): the process that
#: holds the container's stdin and stdout (the job stream and the result channel) must be
#: one a check cannot reach. tini, as the check's uid and dumpable, let a check open
#: ``/proc/1/fd/1`` and write to the host's stream, or ``/proc/1/fd/0`` and inject a job.
#: As PID 1 the harness also cannot be killed from inside (``kill(-1)`` skips it), and it
#: reaps every orphan itself.
HARNESS_COMMAND = ["python3", "-I", "/opt/scorebox/harness.py"]


#: The harness exits this long after the host's own idle limits if no job comes (orphans).
IDLE_EXIT_SLACK_SECONDS = 10.0


SANDBOX_USER = "10001:10001"
#: Under gVisor the harness's parent starts as root *inside the sandbox* (gVisor's own
#: kernel: not the host's root) with only these capabilities, and drops every process it
#: forks for a check to ``SANDBOX_USER`` (the harness's ``drop_to_check_user``). gVisor's
#: procfs does not honour the parent's non-dumpable flag for ``/proc/<pid>/fd``, so under
#: runsc only another uid keeps a check from the parent's descriptors: the result channel
#: and the job stream. Under runc the whole container runs as SANDBOX_USER.
GVISOR_HARNESS_USER = "0:0"
GVISOR_HARNESS_CAPS = ("SETUID", "SETGID", "KILL", "DAC_OVERRIDE", "FOWNER")


LABEL_MANAGED = "scorebox.managed"


LABEL_POOL = "scorebox.pool"


LABEL_TENANT = "scorebox.tenant"


LABEL_RUN = "scorebox.run"


LABEL_OWNER = "scorebox.owner"


#: Under gVisor, host tasks allowed per process the check may have (measured: 64 sleeping
#: processes in the sandbox make 375 host tasks with the ptrace platform), and beside them.
GVISOR_HOST_TASKS_PER_PROCESS = 16


GVISOR_HOST_TASKS_BASE = 192


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


def engine_runtimes(
    client: Any, docker_host: str | None
) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    """The OCI runtimes the Docker engine offers, its default one, and their settings."""
    with docker_errors(docker_host):
        info = client.info()
    offered: dict[str, Any] = dict(info.get("Runtimes") or {})
    return tuple(sorted(offered)), str(info.get("DefaultRuntime") or "runc"), offered


def require_runtime(runtime: str | None, offered: tuple[str, ...], docker_host: str | None) -> None:
    """Refuse a SCOREBOX_RUNTIME the engine does not offer, naming the fix."""
    if not runtime or runtime in offered:
        return
    where = docker_host or "the default Docker socket"
    fix = (
        "install and register gVisor on the Docker host (`sudo scripts/gvisor.sh`, or "
        '`apt-get install runsc` and add it to /etc/docker/daemon.json\'s "runtimes")'
        if runtime == "runsc"
        else f"register {runtime} in the Docker host's /etc/docker/daemon.json"
    )
    raise RuntimeUnavailableError(
        f"SCOREBOX_RUNTIME={runtime}, but the Docker engine at {where} offers only "
        f"{', '.join(offered) or 'no runtimes'}: {fix}, or unset SCOREBOX_RUNTIME"
    )


def _ask_runtimes(settings: Settings) -> tuple[tuple[str, ...], str] | None:
    """The engine's runtimes and its default one, or None when it cannot be asked."""
    try:
        with docker_errors(settings.docker_host):
            client = (
                docker.DockerClient(base_url=settings.docker_host)
                if settings.docker_host
                else docker.from_env()
            )
        try:
            offered, default, _ = engine_runtimes(client, settings.docker_host)
        finally:
            client.close()
    except SandboxError:
        return None
    return offered, default


def check_runtime(settings: Settings) -> None:
    """Start-up check of SCOREBOX_RUNTIME; silent when the engine cannot be asked yet."""
    if not settings.runtime:
        return
    asked = _ask_runtimes(settings)
    if asked is None:
        return  # Docker is down: the service starts and the sandbox retries later
    require_runtime(settings.runtime, asked[0], settings.docker_host)


def default_runtime(settings: Settings) -> str | None:
    """The Docker engine's default OCI runtime, or None when the engine cannot be asked."""
    asked = _ask_runtimes(settings)
    return None if asked is None else asked[1]


def harness_idle_exit(settings: Settings) -> float:
    """Seconds a harness waits for a job before exiting: past every host-side idle limit."""
    return max(settings.pool_idle_seconds, settings.reuse_idle_seconds) + IDLE_EXIT_SLACK_SECONDS


def owner_label() -> str:
    """Who made a container: host and pid, so a later process can reap orphans."""
    return f"{socket.gethostname()}:{os.getpid()}"


def is_gvisor(runtime: str | None, runtimes: Mapping[str, Any] | None = None) -> bool:
    """Whether ``runtime`` (a name Docker knows) is gVisor's runsc."""
    if not runtime:
        return False
    path = str(((runtimes or {}).get(runtime) or {}).get("path") or runtime)
    return os.path.basename(path) == "runsc" or runtime == "runsc"


def pids_options(limits: Limits, *, gvisor: bool) -> dict[str, Any]:
    """How ``max_pids`` is enforced.

    Under runc the container's pids cgroup holds the check's own processes, so it is the
    limit. Under gVisor the same cgroup also holds the sandbox kernel's host threads and
    the ptrace platform's stub processes (about 45 for an idle harness, about 5 more per
    process inside; google/gvisor#2490): a cgroup limit of ``max_pids`` kills gVisor
    itself (``fatal error: newosproc``, exit code 2). There the check's processes are
    counted by gVisor's own kernel through RLIMIT_NPROC (per user inside the sandbox, so
    it cannot be used under runc, where the host kernel counts that uid across
    containers), and the cgroup limit keeps a bound on the host side that is sized for
    gVisor's overhead.
    """
    if not gvisor:
        return {"pids_limit": limits.max_pids, "ulimits": []}
    return {
        "pids_limit": limits.max_pids * GVISOR_HOST_TASKS_PER_PROCESS + GVISOR_HOST_TASKS_BASE,
        "ulimits": [Ulimit(name="nproc", soft=limits.max_pids, hard=limits.max_pids)],
    }


def container_options(
    settings: Settings, limits: Limits, labels: Mapping[str, str], *, gvisor: bool = False
) -> dict[str, Any]:
    """The hardened ``containers.create`` arguments: every sandbox guarantee (docs/security.md)."""
    memory = f"{limits.memory_mb}m"
    pids = pids_options(limits, gvisor=gvisor)
    options: dict[str, Any] = {
        "image": settings.image,
        "entrypoint": [*HARNESS_COMMAND, f"{harness_idle_exit(settings):.0f}"],
        "stdin_open": True,
        "tty": False,
        "detach": True,
        "network_mode": "none",
        "network_disabled": True,
        "read_only": True,
        # bandit B108: the container's own size-limited tmpfs, not the host's /tmp
        "tmpfs": {"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m,mode=1777"},  # nosec B108
        "user": SANDBOX_USER,
        # bandit B108: the container's working directory, inside its tmpfs
        "working_dir": "/tmp",  # nosec B108
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": pids["pids_limit"],
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(limits.cpus * 1_000_000_000),
        "ulimits": [
            Ulimit(name="nofile", soft=limits.max_open_files, hard=limits.max_open_files),
            Ulimit(name="fsize", soft=limits.max_file_bytes, hard=limits.max_file_bytes),
            Ulimit(name="core", soft=0, hard=0),
            *pids["ulimits"],
        ],
        "environment": {},
        "ipc_mode": "private",
        "hostname": "sandbox",
        "log_config": LogConfig(type=LogConfig.types.NONE),
        "labels": {
            LABEL_MANAGED: "1",
            LABEL_OWNER: owner_label(),
            LABEL_OWNER_PROCESS: process_identity(),
            **settings.container_labels,
            **labels,
        },
    }
    if gvisor:
        options["user"] = GVISOR_HARNESS_USER
        options["cap_add"] = list(GVISOR_HARNESS_CAPS)
    if settings.runtime:
        options["runtime"] = settings.runtime
    return options
