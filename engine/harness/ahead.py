"""Fork-ahead: the next job's child, forked and with the check loaded before the job comes.

A warm check container serves one check version, so once a job has ended and the
container is clean again (every process of that job killed, /tmp and /dev/shm emptied:
:func:`~engine.harness.reset.reset`, which runs after the job's ``done`` and before the
parent reads anything more), the parent forks the child of the next job at once.
That child is confined like any other (:func:`~engine.harness.fork.fork_check`), loads the
check from the source the parent kept (never the last job's rows), sends its ``loaded``
record, goes once through a job's path on no rows (:func:`~engine.harness.child.rehearse`:
the parent's pages that path touches are copied now, not once the job is in), and waits
on a pipe for its job. When the job comes, and it is of the same check
and small enough, the parent writes the job down that pipe and watches the child as if it
had just forked it: the fork and the load are off the job's path.

Nothing of the last job reaches it: it is forked after the reset, from the parent, which
never runs check code. What its own load does (files, processes) is the next job's, as it
would be had the job forked it. A child forked ahead and never used (another check, too
many rows, stdin closed, the container retiring) is killed and the container reset again,
so the job that comes instead finds none of its load (a reset that fails then raises
:class:`~engine.harness.reset.Unclean`: the harness exits rather than serve that job).
One whose load outlives the load bound while the container idles is killed the same way
(the next job then loads again, under its own watchdog).

Whether to fork ahead at all is :func:`worth_forking`'s call: only where the host may send
the container another job, does not send it back to back, and the next job is likely to
fit a child forked ahead.
"""

from __future__ import annotations

import mmap
import os
import select
import time
from typing import Any

from engine.harness.blocks import Block, block_bytes
from engine.harness.channel import Reader, encode_json
from engine.harness.child import load_for, rehearse, serve_rows
from engine.harness.fork import Forked, fork_check, kill_child
from engine.harness.gateway import Gateway
from engine.harness.reset import reset_or_raise

#: What loading a check depends on: a child forked ahead serves only a job equal in these.
LOAD_KEYS = ("source", "policy", "entry", "okareo", "max_output_bytes", "max_row_output_chars")
#: Rows a child forked ahead can take (its result block's memory is mapped before the fork).
AHEAD_MAX_ROWS = 1024
#: A job bigger than this, as the JSON the child reads, gets a child forked for it
#: instead: the pipe takes it in one write (64 KiB under runc and gVisor alike), so the
#: parent never waits on a child that is still loading.
AHEAD_MAX_JOB_BYTES = 32 * 1024
#: Keys of the job a child forked ahead is not sent: it has the source; the nonce frames
#: only what the parent writes.
NOT_SENT = frozenset({"source", "nonce"})
#: The job's key that says whether the host may send this container another job (absent:
#: it may). A container the host discards after one job gets no child forked ahead.
MORE_JOBS_KEY = "fork_ahead"
#: A job that comes this soon after the last one's ``done`` is sent back to back (a host
#: with the next job queued sends it at once). Kept short: a client's next call comes a
#: millisecond or two after the ``done``, and a child forked ahead needs most of one for
#: its fork and load (at 1 ms here, a job 1.5 ms after the ``done`` waited for that load:
#: one warm row's p50 1.95 ms, against 1.21 ms at 0.3 ms). One that comes later than this
#: and fits is served by the child forked ahead, loaded or not.
BACK_TO_BACK_SECONDS = 0.0003


def template_of(job: dict[str, Any]) -> dict[str, Any]:
    """What a child forked ahead of ``job``'s successor is given: the load keys (and the
    load bound), none of ``job``'s rows."""
    template = {key: job.get(key) for key in LOAD_KEYS}
    template["load_timeout_seconds"] = float(job.get("load_timeout_seconds", 20.0))
    return template


def payload_of(job: dict[str, Any]) -> bytes:
    """``job`` as a child forked ahead reads it (without what it has already)."""
    return encode_json({k: v for k, v in job.items() if k not in NOT_SENT}).encode()


def sendable(job: dict[str, Any]) -> bytes | None:
    """``job`` as a child forked ahead reads it, or None when it is past a child forked
    ahead's bounds (more than ``AHEAD_MAX_ROWS`` rows, or ``AHEAD_MAX_JOB_BYTES`` as sent)."""
    if job["n"] > AHEAD_MAX_ROWS:
        return None
    data = payload_of(job)
    return data if len(data) <= AHEAD_MAX_JOB_BYTES else None


def fits(job: dict[str, Any]) -> bool:
    """Whether a child forked ahead could serve ``job`` (its rows and its size)."""
    return sendable(job) is not None


def worth_forking(job: dict[str, Any], stdin: Reader, done_at: float | None = None) -> bool:
    """After ``job`` (served, its ``done`` sent at ``done_at``, a monotonic time; None: just
    now), and the reset after it: whether to fork a child ahead of the next.

    Forking holds the parent (about 1 ms under runc, 15 to 20 ms under gVisor, where the
    child's load takes tens of ms more). A host that sends jobs back to back gains nothing
    from a child forked ahead, since its next job would wait for the fork and the load
    either way, and would pay for one that cannot serve the job that comes. So the parent
    forks ahead only when

    - the host may send the container another job (``MORE_JOBS_KEY``);
    - no job comes within ``BACK_TO_BACK_SECONDS`` of the ``done`` (one that does is
      served by a child forked for it, as without fork-ahead); the reset after the
      ``done`` takes part of that window, so the child forked ahead is not later for it;
    - the job just served would have fitted a child forked ahead: the next job of a check
      is most likely like the last (a run's chunks, a client's calls).
    """
    if not job.get(MORE_JOBS_KEY, True):
        return False
    if stdin.buffer or stdin.eof:
        return False
    since = 0.0 if done_at is None else time.monotonic() - done_at
    wait = min(BACK_TO_BACK_SECONDS, max(0.0, BACK_TO_BACK_SECONDS - since))
    ready, _, _ = select.select([stdin.fd], [], [], wait)
    return not ready and fits(job)


def receive_job(job_fd: int) -> dict[str, Any] | None:
    """In the child: its job, read to the pipe's end (None: the parent closed it unused)."""
    data = bytearray()
    while chunk := os.read(job_fd, 1 << 16):
        data += chunk
    os.close(job_fd)
    if not data:
        return None
    import json  # noqa: PLC0415 (the child's own: a check that replaced it harms only itself)

    job: dict[str, Any] = json.loads(data)
    return job


def serve_ahead(template: dict[str, Any], job_fd: int, out_fd: int, memory: mmap.mmap) -> None:
    """In the child forked ahead: load the check, then wait for the job and score its rows."""
    budget = [int(template["max_output_bytes"])]
    entry = load_for(template, out_fd, budget)
    if entry is None:
        return
    if not select.select([job_fd], [], [], 0)[0]:  # a job already in goes first
        import json  # noqa: PLC0415 (as receive_job's)

        rehearse(entry, json.loads(encode_json({**template, "n": 0, "columns": {}})), budget)
    job = receive_job(job_fd)
    if job is None:
        return
    n: int = job["n"]
    block = Block(n, memory) if job.get("result_blocks") else None
    serve_rows(entry, job, 0, n, out_fd, block, budget)


class Spare:
    """The parent's side of a child forked ahead of the next job."""

    def __init__(
        self,
        forked: Forked,
        job_fd: int,
        memory: mmap.mmap,
        template: dict[str, Any],
        gateway: Gateway,
    ) -> None:
        self.forked = forked
        #: The write end of the pipe the child waits on for its job.
        self.job_fd = job_fd
        self.memory = memory
        self.template = template
        self.gateway = gateway
        #: Its records, read from while the container idles (the load record waits here).
        self.reader = Reader(forked.read_fd)
        #: The load must have reported by then, or the child is killed (while idle).
        self.load_deadline = time.monotonic() + float(template["load_timeout_seconds"])
        self.gone = False

    @classmethod
    def fork(cls, template: dict[str, Any], result_fd: int, gateway: Gateway) -> Spare:
        """Fork a child for the next job of ``template``'s check; it starts loading now."""
        job_read, job_write = os.pipe()
        memory = mmap.mmap(-1, block_bytes(AHEAD_MAX_ROWS))  # MAP_SHARED: survives fork
        try:
            forked = fork_check(
                result_fd,
                gateway,
                lambda out_fd: serve_ahead(template, job_read, out_fd, memory),
                close=(job_write,),
            )
        except BaseException:
            for fd in (job_read, job_write):
                os.close(fd)
            memory.close()
            raise
        os.close(job_read)
        return cls(forked, job_write, memory, template, gateway)

    def payload(self, job: dict[str, Any]) -> bytes | None:
        """``job`` as the child reads it, or None when this child cannot serve it."""
        if any(job.get(key) != self.template[key] for key in LOAD_KEYS):
            return None
        return sendable(job)

    def start(self, job: dict[str, Any]) -> tuple[Forked, Reader, Block | None] | None:
        """Hand ``job`` to the child: the child, the reader of its records (its load record
        may be read already) and its result block, to watch as a child just forked for the
        job; None when it cannot serve the job (it is discarded)."""
        data = None if self.gone else self.payload(job)
        if data is None:
            self.discard()
            return None
        os.set_blocking(self.job_fd, False)
        try:
            written = os.write(self.job_fd, data)
        except OSError:
            written = 0
        if written != len(data):
            self.discard()
            return None
        os.close(self.job_fd)
        self.gone = True
        block = Block(job["n"], self.memory) if job.get("result_blocks") else None
        if block is None:
            self.memory.close()
        return self.forked, self.reader, block

    def wake(self) -> float | None:
        """While the container idles: kill the child if its load outlived the load bound;
        when to look again (None: no need)."""
        if self.gone:
            return None
        if not self.reader.eof:
            self.reader.fill(0)
        if self.reader.eof or b"\n" in self.reader.buffer:
            return None  # loaded (or failed to): the job will read its record
        if time.monotonic() < self.load_deadline:
            return self.load_deadline
        self.discard()
        return None

    def discard(self) -> None:
        """Kill the unused child and reset the container: nothing its load did is left."""
        if self.gone:
            return
        self.gone = True
        kill_child(self.forked.pid)
        for fd in (self.job_fd, self.forked.read_fd, self.forked.out_read):
            os.close(fd)
        self.memory.close()
        # A model request its load made waits in the gateway's backlog: closed unread.
        self.gateway.end()
        reset_or_raise()  # a job must not find its load's processes: else Unclean, exit
        self.gateway.end()  # what its load's processes left in the backlog until the reset
