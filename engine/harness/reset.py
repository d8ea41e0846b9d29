"""Container hygiene between jobs: no process or scratch file a job made survives it.

The reset runs after a job's ``done`` (the host has its results sooner) and before the
parent reads another job, so nothing of one job reaches the next; where ``done`` said the
container may serve again and the reset fails, :class:`Unclean` ends the harness
(:data:`UNCLEAN_EXIT_CODE`) before it reads anything more.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time

SCRATCH_DIRS = ("/tmp", "/dev/shm")  # nosec B108: the container's own, emptied between jobs
#: How long reset() may take to see every stray process gone.
RESET_SECONDS = 2.0
#: The harness's exit code when a reset after a job failed where the container had been
#: promised clean (the ``done`` before it said ``reusable``): it reads no other job, and the
#: host runs that job's rows again in a fresh container.
UNCLEAN_EXIT_CODE = 75


class Unclean(Exception):
    """A process of the last job outlived the reset of a container promised clean."""


class Tasks:
    """Tasks (processes and threads) the checks created in this container so far.

    PIDs are handed out in order inside the container, so the gap between two children the
    harness forks is what the job in between created. Under gVisor's ptrace platform every
    such task leaves host threads behind for a while; the host sets a budget there, and a
    container past it is not reused.
    """

    last_child = 0
    created = 0

    @classmethod
    def saw(cls, pid: int, *, ours: bool) -> None:
        """A PID seen now (``ours``: a child the harness forked); count what came since."""
        if pid > cls.last_child:
            if cls.last_child:
                cls.created += pid - cls.last_child - (1 if ours else 0)
            cls.last_child = pid


def strays() -> list[int]:
    """Processes in the container other than PID 1 and this harness (the same one, as the
    host starts it; a harness started under an init leaves that init alone)."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and int(name) not in (1, me)]


def owns_namespace() -> bool:
    """Whether this harness is the init of its PID namespace (the container's PID 1, as the
    host starts it). Only then are "every other process" and /tmp the job's to take: under
    another init, or on a development host, they are not, and reset() leaves them alone."""
    return os.getpid() == 1


def survey() -> None:
    """Count the tasks the job created so far (:class:`Tasks`), before its ``done`` says
    whether the container may serve another job; :func:`reset` kills them after."""
    for pid in sorted(strays()):
        Tasks.saw(pid, ours=False)


def reset_or_raise() -> None:
    """:func:`reset` where the container was promised clean; :class:`Unclean` when it
    cannot be made so (the harness then exits, reading no other job)."""
    if not reset() and owns_namespace():
        raise Unclean(f"a process of the last job outlived {RESET_SECONDS} s of SIGKILL")


def reset() -> bool:
    """Nothing a job started or wrote survives it: kill strays, empty scratch space.

    Returns whether the container is back to how the job found it. Killed processes are
    reaped (the harness is their subreaper) before the next job may look at ``/proc``;
    a process that outlives ``RESET_SECONDS`` makes the container single-use. A harness
    that is not its namespace's PID 1 cleans nothing and is never reused.
    """
    if not owns_namespace():
        return False
    deadline = time.monotonic() + RESET_SECONDS
    survey()
    while True:
        with contextlib.suppress(Exception):
            os.kill(-1, signal.SIGKILL)  # every process we may signal but PID 1 and us
        reap()
        if not strays():
            break
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    for directory in SCRATCH_DIRS:
        empty(directory)
    return True


def reap() -> None:
    """Reap every child that has exited (the harness is the subreaper of every orphan)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def empty(directory: str) -> None:
    """Remove everything in ``directory`` (a scratch space a job may have written)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(Exception):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
