"""Per-job supervision: the parent forks a child for the rows left and watches it.

The parent checks every record a child sends (row order, size, statuses only a check may
report, internal consistency) before relaying it, and is the per-row watchdog: a child
silent for longer than the row's time limit is killed and its row is ``timeout``; a child
that dies or corrupts its records costs its row ``crashed`` (or ``oom``), and the rest of
the job goes on in a fresh child. Model requests are relayed through the gateway while a
child runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from typing import Any

from engine import contract
from engine.contract import formats
from engine.harness.ahead import Spare
from engine.harness.blocks import BLOCK_FLUSH_SECONDS, POLL_SECONDS, Block, BlockWatch
from engine.harness.channel import MAX_RECORD_BYTES, Channel, Reader
from engine.harness.child import run_child, short
from engine.harness.fork import fork_check, kill_child, oom_kills
from engine.harness.gateway import Gateway, read_reply
from engine.harness.reset import Tasks, owns_namespace, reset, reset_or_raise, survey
from engine.harness.watchdog import WATCHDOG_GRACE_SECONDS, Watchdog, stop_child

#: Statuses a check's own process may report; the others only the parent or the host know.
CHILD_STATUSES = frozenset(status.value for status in contract.CHECK_STATUSES)
#: The formats a load record may name (read once: an enum's iteration is slow).
FORMAT_VALUES = frozenset(f.value for f in formats.Format)
#: The end of what a check wrote to its raw descriptors, kept for crash messages.
OUTPUT_TAIL_BYTES = 4096


def check_record(raw: bytes, expected_i: int) -> dict[str, Any]:
    """A child's row record, parsed and checked; ValueError if it is not one the check may send."""
    if len(raw) > MAX_RECORD_BYTES:
        raise ValueError(f"a result record of {len(raw)} bytes")
    record = json.loads(raw)
    if not isinstance(record, dict) or record.get("t") != "row":
        raise ValueError("not a row record")
    if record.get("i") != expected_i or type(record.get("i")) is not int:
        raise ValueError(f"row {record.get('i')!r} reported where {expected_i} was due")
    status = record.get("status")
    if status not in CHILD_STATUSES:
        raise ValueError(f"status {status!r} cannot come from a check")
    score = record.get("score")
    if status == contract.Status.OK.value:
        if type(score) not in (bool, int, float) or "error" in record:
            raise ValueError("an ok record without a score, or with an error")
    elif score is not None or not isinstance(record.get("error"), str):
        raise ValueError(f"a {status} record with a score, or without an error")
    return record


def describe_death(status: int, ooms_before: int | None) -> tuple[str, str]:
    """(status, error) for a row whose child died without reporting it."""
    after = oom_kills()
    if ooms_before is not None and after is not None and after > ooms_before:
        return contract.Status.OOM.value, "the check passed the memory limit"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        if sig == signal.SIGKILL and ooms_before is None:
            return (
                contract.Status.OOM.value,
                "the check was killed (SIGKILL): most likely the memory limit",
            )
        return contract.Status.CRASHED.value, f"the check's process was killed by {name}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return (
        contract.Status.CRASHED.value,
        f"the check's process exited with code {code} before finishing",
    )


def row_fault(i: int, status: str, error: str) -> dict[str, Any]:
    """A row record the parent writes for a row its child could not report."""
    return {"t": "row", "i": i, "status": status, "error": error, "ms": 0.0}


class JobRun:
    """One job: forks children until every row has a record, relaying what they report."""

    def __init__(
        self,
        job: dict[str, Any],
        result_fd: int,
        gateway: Gateway,
        stdin: Reader | None = None,
        spare: Spare | None = None,
    ) -> None:
        self.job = job
        #: A child forked ahead with the check loaded: the job's first child, if it fits.
        self.spare = spare
        self.result_fd = result_fd
        self.stdin = stdin
        #: The model gateway's listener (bound once, by ``main``, before any check ran).
        self.gateway = gateway
        gateway.begin(job)
        gateway_seconds = job.get("gateway_row_timeout_seconds")
        #: A row that called the model may run this long (None: the gateway adds no time).
        self.gateway_allowance = (
            float(gateway_seconds) + WATCHDOG_GRACE_SECONDS if gateway_seconds else None
        )
        self.channel = Channel(result_fd, job["nonce"])
        #: The job's rows (as columns: a row is known by its index, its records' ``i``).
        self.n: int = job["n"]
        self.row_allowance = float(job["row_timeout_seconds"]) + WATCHDOG_GRACE_SECONDS
        self.load_seconds = float(job.get("load_timeout_seconds", 20.0))
        self.pos = 0  # the first row without a record
        self.loaded_sent = False
        #: What the check may still write to its raw file descriptors in this job.
        self.output_left = int(job["max_output_bytes"])
        self.output_tail = bytearray()
        #: Block mode: rows before this run one per child (one of them broke the protocol).
        self.suspect_end = 0
        #: The child was stopped to run its unconfirmed rows again (see ``suspect_end``).
        self.retry = False
        #: The last child, killed once its work was in and reaped after the job's "done".
        self.unreaped: int | None = None
        #: When the job's "done" was sent (a monotonic time; 0.0: not yet).
        self.done_at = 0.0

    def run(self) -> bool:
        """Serve the job to its ``done`` record (after the reset, so reuse is decided);
        whether the container is clean for another job."""
        while self.pos < self.n or not self.loaded_sent:
            fault = self.run_child()
            if fault is None:
                continue
            if not self.loaded_sent:  # the check never loaded: every row gets the cause
                self.channel.send({"t": "loaded", "ok": False, "error": fault[1]})
                self.loaded_sent = True
                self.fail_rest(*fault)
            elif self.pos < self.n:
                self.channel.send(row_fault(self.pos, *fault))
                self.pos += 1
        if self.spare is not None:  # never reached: the first child takes or discards it
            self.spare.discard()
        self.gateway.end()
        # "done" goes as soon as every row has its record and the last child is killed; the
        # reset comes after it, and the parent reads the next job only once the reset is
        # over (a reset that fails where "done" said reusable raises Unclean: the harness
        # exits unread), so nothing of this job reaches the next.
        reusable = self.may_serve_again()
        self.channel.send({"t": "done", "rows": self.n, "reusable": reusable})
        self.channel.flush()
        self.done_at = time.monotonic()
        if self.unreaped is not None:
            kill_child(self.unreaped)
            self.unreaped = None
        if reusable:
            reset_or_raise()
        else:
            reset()
        # A process of this job may have connected to the gateway until the reset killed
        # it: what it left in the listen backlog is closed unread, as the job's own.
        self.gateway.end()
        return reusable

    def may_serve_again(self) -> bool:
        """Whether the container may serve another job once reset: it is its namespace's
        init, and (under a task budget) the tasks its checks created are within it."""
        if not owns_namespace():
            return False
        budget = self.job.get("task_budget")
        if not isinstance(budget, int):
            return True
        survey()
        return Tasks.created < budget

    def fail_rest(self, status: str, error: str) -> None:
        """Give every row without a record this fault."""
        for i in range(self.pos, self.n):
            self.channel.send(row_fault(i, status, error))
        self.pos = self.n

    def run_child(self) -> tuple[str, str] | None:
        """Fork a child for the remaining rows (or take the one forked ahead); the fault
        that ended it early, if any."""
        start = self.pos
        stop = start + 1 if start < self.suspect_end else self.n
        started = None
        if self.spare is not None:
            spare, self.spare = self.spare, None
            started = spare.start(self.job)
        if started is not None:
            forked, records, block = started
        else:
            block = Block(stop - start) if self.job.get("result_blocks") else None
            job = self.job
            forked = fork_check(
                self.result_fd, self.gateway, lambda fd: run_child(job, start, stop, fd, block)
            )
            records = Reader(forked.read_fd)
        pid, read_fd, out_read = forked.pid, forked.read_fd, forked.out_read
        ooms_before = forked.ooms_before
        output = Reader(out_read)
        try:
            if block is None:
                fault, finished = self.watch(records, output, pid)
            else:
                fault, finished = self.watch_block(records, output, pid, block)
            if fault is None and finished and not self.retry:
                # Its every record is in: killed, and reaped only after the job's "done"
                # (its exit takes most of a millisecond under runc).
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                self.unreaped = pid
                return None
            if fault is not None or finished or self.retry:
                self.retry = False
                kill_child(pid)
                return fault
            death = os.waitpid(pid, 0)[1]
            # Its last words (a fatal error's report) are in the pipe by now, read or not.
            for _ in range(8):
                if output.eof or not output.fill(0):
                    break
                self.keep_tail(output)  # kept for the message, not charged to the job
        finally:
            os.close(read_fd)
            os.close(out_read)
            if block is not None:
                block.close()
        status, error = describe_death(death, ooms_before)
        fatal = [
            line
            for line in bytes(self.output_tail).decode(errors="replace").splitlines()
            if line.startswith("Fatal Python error")
        ]
        return status, error + (f" ({fatal[-1]})" if fatal else "")

    def count_output(self, output: Reader) -> bool:
        """Take what the child wrote to fd 1/2; False once past the job's output cap."""
        output.fill(0)
        self.output_left -= len(output.buffer)
        self.keep_tail(output)
        return self.output_left >= 0

    def keep_tail(self, output: Reader) -> None:
        """Move what ``output`` read into the tail kept for crash messages."""
        self.output_tail += output.buffer
        del self.output_tail[:-OUTPUT_TAIL_BYTES]
        output.buffer.clear()

    def watch(
        self, reader: Reader, output: Reader, pid: int
    ) -> tuple[tuple[str, str] | None, bool]:
        """Relay the child's records: (fault, whether it finished its work)."""
        loaded = False
        capped = False
        clock = Watchdog(self.load_seconds, self.row_allowance, self.gateway_allowance)
        while self.pos < self.n or not loaded:
            raw = reader.line()
            if raw is None:
                if capped:
                    return self.output_fault(), False
                if reader.eof:
                    return None, False
                remaining = clock.deadline - time.monotonic()
                if remaining <= 0:
                    return self.timeout(loaded, clock.called_model), False
                capped = self.wait_for_records(reader, output, pid, clock, remaining)
                continue
            try:
                if loaded:
                    check_record(raw, self.pos)
                    self.channel.relay(raw)
                    self.pos += 1
                elif not (loaded := self.on_loaded(raw)):
                    return None, True
            except ValueError as exc:
                what = f"the check corrupted the harness's result records ({short(str(exc), 200)})"
                return (contract.Status.CRASHED.value, what), False
            clock.step(time.monotonic())
        return None, True

    def wait_for_records(
        self, reader: Reader, output: Reader, pid: int, clock: Watchdog, remaining: float
    ) -> bool:
        """Wait (up to ``remaining`` seconds) for the child's next records, serving model
        requests and counting what it prints meanwhile; whether it passed the output cap."""
        due = self.due_in()
        ready = self.wait_ready(reader, output, remaining if due is None else min(remaining, due))
        if self.serve_gateway(ready):
            clock.model_called()
        if output.fd in ready and not self.count_output(output):
            # Past the cap: stop the check at once, then take the records it finished
            # before, so the row in flight is the one that gets the blame.
            stop_child(pid)
            while not reader.eof and reader.fill(0):
                pass
            return True
        if reader.fd in ready:
            reader.fill(0)
        return False

    def watch_block(
        self, reader: Reader, output: Reader, pid: int, block: Block
    ) -> tuple[tuple[str, str] | None, bool]:
        """Block mode's :meth:`watch`: the child's progress counter is the watchdog's clock,
        finished rows travel as blocks; (fault, whether the child finished its work)."""
        watch = BlockWatch(self, block, reader)
        capped = was_loaded = False
        last_flush = time.monotonic()
        clock = Watchdog(self.load_seconds, self.row_allowance, self.gateway_allowance)
        gateway_ready: list[int] = []
        while True:
            try:
                moved = watch.look()
            except ValueError as exc:
                return self.block_fault(watch, block, exc), False
            if watch.failed_load:
                return None, True
            now = time.monotonic()
            if moved or (watch.loaded and not was_loaded):
                was_loaded = True
                clock.step(now)
            if watch.ended or capped or reader.eof:
                return self.block_end(watch, capped)
            self.serve_block_gateway(watch, gateway_ready, clock)
            if watch.confirmed > watch.sent and now - last_flush >= BLOCK_FLUSH_SECONDS:
                watch.flush(watch.confirmed)
                last_flush = now
            due = self.due_in()
            remaining = clock.deadline - now
            if remaining <= 0:
                watch.flush(watch.seen)
                return self.timeout(watch.loaded, clock.called_model), False
            ready = self.wait_ready(
                reader, output, min(remaining, POLL_SECONDS if due is None else due)
            )
            gateway_ready = [fd for fd in ready if self.from_gateway(fd)]
            if output.fd in ready and not self.count_output(output):
                stop_child(pid)
                capped = True

    def serve_block_gateway(self, watch: BlockWatch, ready: list[int], clock: Watchdog) -> None:
        """Relay the model requests and replies ``ready`` (if any) in block mode: the rows
        finished before a request go first, since the host charges it to the row in flight."""
        if not ready:
            return
        watch.flush(watch.confirmed)
        if self.serve_gateway(ready):
            clock.model_called()

    def block_fault(
        self, watch: BlockWatch, block: Block, exc: ValueError
    ) -> tuple[str, str] | None:
        """A block-mode child broke the protocol: its rows confirmed before the bad line go to
        the host; with more than one row in its block, the rows since run again one per
        child (None: no fault yet), else the row is ``crashed``."""
        good = watch.confirmed  # rows counted while a bad line was partial: suspects
        watch.flush(good)
        if block.rows > 1:
            # Which of the rows since the last good look wrote it is unknown: they run
            # again one per child, and the one that does it alone is blamed.
            self.suspect_end = self.pos + max(1, min(block.count(), block.rows) - good)
            self.retry = True
            return None
        what = f"the check corrupted the harness's result block ({short(str(exc), 200)})"
        return contract.Status.CRASHED.value, what

    def block_end(self, watch: BlockWatch, capped: bool) -> tuple[tuple[str, str] | None, bool]:
        """A block-mode child ended, was stopped at the output cap, or died: its rows seen
        go to the host; (fault, whether it finished its work)."""
        watch.flush(watch.seen, final=True)
        if watch.ended:
            return None, True
        if capped:
            return self.output_fault(), False
        return None, False

    def output_fault(self) -> tuple[str, str]:
        """The fault of a child stopped for writing past the job's output cap."""
        error = f"the check wrote more than {self.job['max_output_bytes']} bytes"
        return contract.Status.OUTPUT_LIMIT.value, error

    def due_in(self) -> float | None:
        """Seconds until the queued records must travel (None: nothing queued), flushing
        them first when the oldest has waited long enough."""
        due = self.channel.due_in()
        if due is not None and due <= 0:
            self.channel.flush()
            return None
        return due

    def wait_ready(self, reader: Reader, output: Reader, wait: float) -> list[int]:
        """The descriptors ready within ``wait`` seconds, of the child's pipes, the model
        gateway's and (for the gateway's replies) the host's stdin."""
        watched = [reader.fd] if output.eof else [reader.fd, output.fd]
        watched += self.gateway.fds()
        if self.stdin is not None and not self.stdin.eof:
            watched.append(self.stdin.fd)
        ready, _, _ = select.select(watched, [], [], wait)
        return ready

    def from_gateway(self, fd: int) -> bool:
        """Whether ``fd`` carries a model request or a reply (the gateway's, or stdin)."""
        return self.gateway.owns(fd) or (self.stdin is not None and fd == self.stdin.fd)

    def timeout(self, loaded: bool, called_model: bool) -> tuple[str, str]:
        """The fault of a child that passed its watchdog's deadline: loading, or a row."""
        if called_model:
            error = (
                f"evaluate ran longer than {self.job['gateway_row_timeout_seconds']} s,"
                " the bound of a row that calls the model (the operator's "
                "SCOREBOX_GATEWAY_ROW_TIMEOUT_SECONDS)"
            )
        elif loaded:
            error = f"evaluate ran longer than {self.job['row_timeout_seconds']} s"
        else:
            error = f"loading the check took longer than {self.load_seconds} s"
        return contract.Status.TIMEOUT.value, error

    def serve_gateway(self, ready: list[int]) -> bool:
        """Relay model requests to the host and its replies back; whether one was sent."""
        sent = False
        for fd in ready:
            if self.gateway.owns(fd):
                for request in self.gateway.on_ready(fd):
                    self.channel.send(request)
                    sent = True
        if sent:
            self.channel.flush()
        stdin = self.stdin
        if stdin is not None and stdin.fd in ready:
            stdin.fill(0)
            released = []
            while True:
                try:
                    reply = read_reply(stdin)
                except ValueError:
                    stdin.buffer.clear()  # the host broke its own framing: drop it
                    break
                if reply is None:
                    break
                # A whole frame was taken (a skipped one too): the next starts a frame.
                released += self.gateway.answer(reply)
            for request in released:  # requests held for a slot that a reply freed
                self.channel.send(request)
            if released:
                self.channel.flush()
                sent = True
        return sent

    def on_loaded(self, raw: bytes) -> bool:
        """Handle the child's load record; False when the check failed to load."""
        record = json.loads(raw)
        if not isinstance(record, dict) or record.get("t") != "loaded":
            raise ValueError("no load record")
        if not record.get("ok"):
            error = short(str(record.get("error") or "the check failed to load"))
            if not self.loaded_sent:
                self.channel.send({"t": "loaded", "ok": False, "error": error})
                self.loaded_sent = True
            self.fail_rest(contract.Status.ERROR.value, error)
            return False
        if not self.loaded_sent:
            params = [p for p in record.get("parameters", []) if isinstance(p, str)]
            loaded: dict[str, Any] = {"t": "loaded", "ok": True, "parameters": params[:16]}
            fmt, entry = record.get("format"), record.get("entry")
            if fmt in FORMAT_VALUES and isinstance(entry, str):
                loaded.update(format=fmt, entry=entry[:200])
            self.channel.send(loaded)
            self.loaded_sent = True
        return True
