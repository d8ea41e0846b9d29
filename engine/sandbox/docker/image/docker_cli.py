"""The docker CLI through subprocess (docker_backend stays the only docker-py user)."""

from __future__ import annotations

import json
import os
import subprocess  # nosec B404
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from engine.errors import DockerUnavailableError, SandboxError
from engine.sandbox.docker.image.constants import PULL_TIMEOUT_SECONDS, Log

_UNREACHABLE_MARKERS = (
    "cannot connect to the docker daemon",
    "is the docker daemon running",
    "error during connect",
)


class DockerCLI:
    """The ``docker`` command, pointed at ``docker_host`` when set; errors become SandboxError."""

    def __init__(self, docker_host: str | None = None) -> None:
        self.env = dict(os.environ)
        if docker_host:
            self.env["DOCKER_HOST"] = docker_host
        self.where = self.env.get("DOCKER_HOST") or "the default socket"

    def _error(self, args: Sequence[str], output: str) -> SandboxError:
        lowered = output.lower()
        tail = " ".join(output.strip().splitlines()[-3:])[-600:]
        if "permission denied" in lowered and "docker" in lowered and "sock" in lowered:
            return DockerUnavailableError(
                f"Docker engine at {self.where} refused access: add your user to the `docker` "
                f"group or run as root ({tail})"
            )
        if any(marker in lowered for marker in _UNREACHABLE_MARKERS):
            return DockerUnavailableError(
                f"Docker engine not reachable at {self.where}: start it (`dockerd`, or "
                f"`scripts/dev.sh setup`) or set SCOREBOX_DOCKER_HOST ({tail})"
            )
        return SandboxError(f"`docker {' '.join(args[:2])}` failed: {tail}")

    def run(
        self,
        *args: str,
        timeout: float = 120.0,
        check: bool = True,
        stdin: IO[bytes] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``docker args...`` and capture its output."""
        try:
            # bandit B603 B607: argv is a list built here (no shell); no tenant input reaches it
            proc = subprocess.run(  # nosec B603 B607
                ["docker", *args],
                stdin=stdin,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError as exc:
            raise DockerUnavailableError(
                "the `docker` command is not installed: install Docker (`apt-get install "
                "docker.io`, or `scripts/dev.sh setup`)"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise SandboxError(f"`docker {args[0]}` did not finish within {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            raise self._error(args, proc.stderr + proc.stdout)
        return proc

    def stream(self, args: Sequence[str], log: Log, timeout: float) -> None:
        """Run ``docker args...``, passing each output line to ``log``."""
        _stream(["docker", *args], log, timeout, self.env, on_error=self._error)

    def check_engine(self) -> str:
        """The engine's version; DockerUnavailableError when it cannot be reached."""
        return self.run("version", "--format", "{{.Server.Version}}", timeout=30).stdout.strip()

    def inspect(self, ref: str) -> dict[str, Any] | None:
        """``docker image inspect`` of ``ref``, or None when there is no such image."""
        proc = self.run("image", "inspect", ref, check=False, timeout=60)
        if proc.returncode != 0:
            if "no such image" in (proc.stderr + proc.stdout).lower():
                return None
            raise self._error(("image", "inspect"), proc.stderr)
        found: list[dict[str, Any]] = json.loads(proc.stdout)
        return found[0] if found else None

    def image_id(self, ref: str) -> str | None:
        """The id of image ``ref``, or None when it is absent."""
        found = self.inspect(ref)
        return str(found["Id"]) if found else None

    def pull(self, ref: str, log: Log) -> bool:
        """Try to pull ``ref``; False (after logging why) when the registry cannot serve it."""
        log(f"pulling {ref} ...")
        try:
            proc = self.run("pull", "--quiet", ref, check=False, timeout=PULL_TIMEOUT_SECONDS)
        except SandboxError as exc:
            log(f"  pull failed: {exc}")
            return False
        if proc.returncode != 0:
            log(f"  pull failed: {' '.join(proc.stderr.split())[-300:]}")
            return False
        return True


def _stream(
    cmd: Sequence[str],
    log: Log,
    timeout: float,
    env: Mapping[str, str],
    on_error: Callable[[Sequence[str], str], SandboxError],
) -> None:
    deadline = time.monotonic() + timeout
    tail: list[str] = []
    try:
        # bandit B603: argv is a list built here (no shell); no tenant input reaches it
        proc = subprocess.Popen(  # nosec B603
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            text=True,
            errors="replace",
        )
    except FileNotFoundError as exc:
        raise SandboxError(f"`{cmd[0]}` is not installed") from exc
    assert proc.stdout is not None
    with proc:
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            log(line)
            tail = [*tail[-39:], line]
            if time.monotonic() > deadline:
                proc.kill()
                raise SandboxError(f"`{' '.join(cmd[:2])}` did not finish within {timeout:.0f} s")
        code = proc.wait()
    if code != 0:
        raise on_error(list(cmd[1:]) if cmd[0] == "docker" else list(cmd), "\n".join(tail))
