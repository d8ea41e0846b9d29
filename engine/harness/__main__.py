"""``python -m engine.harness [IDLE_EXIT_SECONDS]``: the container's PID 1, serving jobs.

In the image the host starts ``python3 -I /opt/scorebox/harness.py``, a launcher that puts
``/opt/scorebox`` on the import path and runs this module as ``python -m`` does.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys

from engine.harness.ahead import Spare, template_of, worth_forking
from engine.harness.channel import Reader, read_job
from engine.harness.confine import become_subreaper, deny_io_uring, make_undumpable
from engine.harness.gateway import Gateway
from engine.harness.reset import UNCLEAN_EXIT_CODE, Unclean
from engine.harness.supervise import JobRun

DEFAULT_IDLE_EXIT_SECONDS = 900.0


def main(argv: list[str]) -> int:
    """Serve jobs from stdin until it closes or none comes for IDLE_EXIT_SECONDS."""
    idle_exit = float(argv[1]) if len(argv) > 1 else DEFAULT_IDLE_EXIT_SECONDS
    # Keep a private copy of stdout for results; fd 1 now leads to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    faulthandler.enable(file=2)  # the original stderr (fd 1 now leads there too)
    make_undumpable()
    become_subreaper()
    deny_io_uring()
    # As PID 1 only signals with a handler reach us from inside: Python's own SIGINT
    # handler would let a check raise KeyboardInterrupt here. (Children restore it.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The model gateway's listener, bound once before any check runs (no check can take it).
    gateway = Gateway()
    gateway.listen()
    return serve(Reader(0), idle_exit, result_fd, gateway)


def serve(stdin: Reader, idle_exit: float, result_fd: int, gateway: Gateway) -> int:
    """The job loop, to the harness's exit code: 0 when stdin closed or no job came, or
    ``UNCLEAN_EXIT_CODE`` when a reset failed where the container was promised clean (a
    process of the last job outlived it), reading no other job."""
    try:
        return serve_jobs(stdin, idle_exit, result_fd, gateway)
    except Unclean:
        return UNCLEAN_EXIT_CODE


def serve_jobs(stdin: Reader, idle_exit: float, result_fd: int, gateway: Gateway) -> int:
    """Each job served, then (when worth it) the next one's child forked ahead."""
    spare: Spare | None = None
    while True:
        job = read_job(stdin, idle_exit, spare.wake if spare is not None else None)
        if job is None:
            if spare is not None:  # forked ahead for a job that never came
                spare.discard()
            return 0
        run = JobRun(job, result_fd, gateway, stdin, spare)
        reusable = run.run()
        spare = None
        if reusable and worth_forking(job, stdin, run.done_at):
            # The container is clean again, and may get another job of this check only: its
            # child forks and loads now, from what loading needs (none of this job's rows).
            template = template_of(job)
            del job
            spare = Spare.fork(template, result_fd, gateway)


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
