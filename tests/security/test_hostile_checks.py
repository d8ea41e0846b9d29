"""Hostile checks: what an attacker's check tries, and what it gets (real Docker)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings

pytestmark = pytest.mark.docker

LIMITS = Limits(row_timeout_seconds=3, wall_seconds_max=60)


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    with SandboxRunner(docker_settings) as runner:
        yield runner


def probe(runner: SandboxRunner, body: str) -> tuple[Status, object, str | None]:
    """Run ``body`` (the inside of evaluate) once; returns (status, score, explanation)."""
    source = "import os, sys, socket, subprocess, ctypes\n\ndef evaluate(model_output):\n"
    source += textwrap.indent(textwrap.dedent(body), "    ")
    result = runner.run_check(CodeCheck(source), [{"model_output": "x"}], LIMITS)[0]
    return result.status, result.score, result.explanation or result.error


def test_no_docker_socket_or_host_files(runner: SandboxRunner) -> None:
    status, score, detail = probe(
        runner,
        """
        paths = ["/var/run/docker.sock", "/run/docker.sock", "/root", "/etc/shadow"]
        reachable = [p for p in paths if os.path.exists(p) and os.access(p, os.R_OK)]
        return (not reachable, repr(reachable))
        """,
    )
    assert status is Status.OK and score is True, detail


def test_cannot_become_root(runner: SandboxRunner) -> None:
    status, score, detail = probe(
        runner,
        """
        results = []
        for attempt in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.chroot("/tmp")):
            try:
                attempt()
                results.append("allowed")
            except OSError:
                results.append("denied")
        return (results == ["denied"] * 3, repr(results))
        """,
    )
    assert status is Status.OK and score is True, detail


def test_cannot_mount_or_create_namespaces(
    runner: SandboxRunner, sandbox_runtime: str | None
) -> None:
    # ptrace of the container's own same-uid processes (tini) is possible and
    # harmless: it never leaves the container. Namespaces and mounts are the way out.
    # Under gVisor, unshare() succeeds: the namespaces are the Sentry's own emulation
    # and never reach the host kernel; mounting is still refused inside them.
    status, _score, detail = probe(
        runner,
        """
        libc = ctypes.CDLL(None, use_errno=True)
        mounted = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
        userns = libc.unshare(0x10000000)  # CLONE_NEWUSER
        mountns = libc.unshare(0x00020000)  # CLONE_NEWNS
        remounted = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
        detail = f"mount={mounted} unshare(user)={userns} unshare(mnt)={mountns} then={remounted}"
        return (True, detail)
        """,
    )
    assert status is Status.OK and detail is not None, detail
    mounted, userns, mountns, remounted = (int(x.split("=")[1]) for x in detail.split())
    assert mounted != 0 and remounted != 0, detail
    if sandbox_runtime == "runsc":
        return
    assert userns != 0 and mountns != 0, detail


def test_cannot_see_host_processes_or_environment(runner: SandboxRunner) -> None:
    status, score, detail = probe(
        runner,
        """
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        try:
            environ = open("/proc/1/environ", "rb").read()
        except OSError:
            environ = b""
        return (len(pids) < 10 and b"SCOREBOX" not in environ, f"pids={pids}")
        """,
    )
    assert status is Status.OK and score is True, detail


def test_cannot_run_programs_from_tmp(runner: SandboxRunner) -> None:
    status, score, detail = probe(
        runner,
        """
        import shutil
        shutil.copy("/bin/true", "/tmp/t")
        os.chmod("/tmp/t", 0o755)
        try:
            subprocess.run(["/tmp/t"], check=True)
            return (False, "executed a binary from /tmp")
        except OSError as exc:
            return (True, str(exc))
        """,
    )
    assert status is Status.OK and score is True, detail


def test_tmp_is_size_limited(runner: SandboxRunner) -> None:
    status, score, detail = probe(
        runner,
        """
        written = 0
        try:
            with open("/tmp/fill", "wb") as handle:
                while written < 512 * 1024 * 1024:
                    handle.write(b"\\0" * (1024 * 1024))
                    written += 1024 * 1024
        except OSError as exc:
            return (True, f"stopped at {written >> 20} MiB: {exc}")
        return (False, "wrote 512 MiB to /tmp")
        """,
    )
    assert status is Status.OK and score is True, detail
