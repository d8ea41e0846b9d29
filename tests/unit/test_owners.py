"""The reaper's judgement of a container's maker: host, PID, PID namespace, start time.

Two scorebox processes sharing a hostname in different PID namespaces never take each
other's containers for orphans; a PID reused by another process does not keep an
orphan alive.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from engine.sandbox.docker.owners import LABEL_OWNER_PROCESS, owner_gone, process_identity

HOST = socket.gethostname()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _labels(pid: int, identity: str | None) -> dict[str, str]:
    labels = {"scorebox.owner": f"{HOST}:{pid}"}
    if identity is not None:
        labels[LABEL_OWNER_PROCESS] = identity
    return labels


def test_this_process_is_alive_and_a_dead_one_is_gone() -> None:
    namespace = process_identity().split(":")[0]
    assert not owner_gone(_labels(os.getpid(), process_identity()))
    assert owner_gone(_labels(_dead_pid(), f"{namespace}:12345"))


def test_another_pid_namespace_is_never_judged_from_here() -> None:
    # its maker's PID means nothing in this namespace, dead here or not
    assert not owner_gone(_labels(_dead_pid(), "4026599999:12345"))
    assert not owner_gone(_labels(os.getpid(), "4026599999:12345"))


def test_a_reused_pid_does_not_keep_an_orphan() -> None:
    namespace, started = process_identity().split(":")
    assert started.isdigit()
    assert owner_gone(_labels(os.getpid(), f"{namespace}:{int(started) + 1}"))


def test_another_host_and_old_labels() -> None:
    other = {"scorebox.owner": f"not-{HOST}:{_dead_pid()}", LABEL_OWNER_PROCESS: "1:1"}
    assert not owner_gone(other)
    assert owner_gone(_labels(_dead_pid(), None))  # made before the label: host and PID
    assert not owner_gone(_labels(os.getpid(), None))
    assert not owner_gone({})
