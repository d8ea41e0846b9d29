"""Forking a check's process: confined before any of its code runs, cut off from the parent.

Both ways a check's process starts go through :func:`fork_check`: the child a job forks
for its rows (:mod:`~engine.harness.supervise`) and the one forked ahead of the next job
(:mod:`~engine.harness.ahead`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from engine.harness.confine import drop_to_check_user
from engine.harness.gateway import Gateway
from engine.harness.reset import Tasks


@dataclass(frozen=True)
class Forked:
    """A check's process just forked: its pid and the parent's ends of its two pipes."""

    pid: int
    #: Its records (one JSON line each).
    read_fd: int
    #: What it writes to its own fd 1 and 2 (counted against the job's output cap).
    out_read: int
    #: The container's OOM-kill count at the fork (see :func:`oom_kills`).
    ooms_before: int | None


def oom_kills() -> int | None:
    """The container's OOM-kill count (cgroup v2), or None where the runtime hides it."""
    try:
        with open("/sys/fs/cgroup/memory.events") as events:
            for line in events:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


def kill_child(pid: int) -> int:
    """Kill and reap a child (already reaped: 0)."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def fork_check(
    result_fd: int,
    gateway: Gateway,
    work: Callable[[int], None],
    close: tuple[int, ...] = (),
) -> Forked:
    """Fork a check's process that runs ``work(records_fd)`` and exits.

    Before ``work`` (and so before any check code) the child becomes the check's user,
    closes stdin, the result channel, the gateway's descriptors and ``close`` (the
    parent's ends of other pipes), and has its fd 1 and 2 lead to a pipe the parent reads.
    """
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    ooms_before = oom_kills()
    pid = os.fork()
    if pid == 0:  # the child: no way back to stdin or the result channel
        code = 70
        try:
            drop_to_check_user()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for fd in (read_fd, out_read, result_fd, 0, *close):
                os.close(fd)
            gateway.close_in_child()
            # Whatever the check writes to fd 1 or 2 reaches only the parent, which counts it.
            os.dup2(out_write, 1)
            os.dup2(out_write, 2)
            os.close(out_write)
            work(write_fd)
            code = 0
        finally:
            os._exit(code)
    Tasks.saw(pid, ours=True)
    os.close(write_fd)
    os.close(out_write)
    return Forked(pid, read_fd, out_read, ooms_before)
