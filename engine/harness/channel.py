"""The harness's framing: jobs in on stdin, nonce-framed records out on the result channel.

A job comes as a line with its byte length, then the JSON document, its rows as columns
(:mod:`~engine.harness.binding`). Every record the
parent sends back is one JSON line prefixed with the job's nonce, written in batches to
the private result channel (a copy of the original stdout; no check process holds it).
"""

from __future__ import annotations

import json
import os
import select
import time
from collections.abc import Callable
from typing import Any

from engine import contract
from engine.harness.binding import check_columns
from engine.harness.gateway import read_reply

#: Records larger than this are a protocol fault (the host enforces its own cap too).
MAX_RECORD_BYTES = 64 * 1024
#: How long a finished row's record may wait to travel with the next ones.
FLUSH_SECONDS = 0.002
# Bound before any check runs: a check replacing json.dumps cannot corrupt its records.
encode_json = json.JSONEncoder(ensure_ascii=False, default=repr).encode


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a pipe may take less per call)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Channel:
    """The parent's private result channel: nonce-prefixed JSON lines, written in batches."""

    def __init__(self, fd: int, nonce: str) -> None:
        self.fd = fd
        self.prefix = nonce.encode() + b" "
        self.pending: list[bytes] = []
        self.size = 0
        self.since = 0.0  # when the oldest queued record was queued

    def relay(self, line: bytes) -> None:
        """Queue a record line (already checked) for the host."""
        if not self.pending:
            self.since = time.monotonic()
        self.pending.append(self.prefix + line + b"\n")
        self.size += len(line)
        if self.size >= 60_000:
            self.flush()

    def due_in(self) -> float | None:
        """Seconds until the queued records must reach the host (None: nothing queued).

        Records wait up to ``FLUSH_SECONDS`` to travel together: every write is a frame
        that the container runtime, Docker and the host each handle, so one a row cost
        more than the row itself for a fast check.
        """
        if not self.pending:
            return None
        return self.since + FLUSH_SECONDS - time.monotonic()

    def send(self, record: dict[str, Any]) -> None:
        """Queue a record the parent made itself."""
        self.relay(encode_json(record).encode())

    def flush(self) -> None:
        """Write every queued record now, in one write."""
        if self.pending:
            write_all(self.fd, b"".join(self.pending))
            self.pending.clear()
            self.size = 0


class Reader:
    """Buffered line reads from a descriptor, with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.eof = False
        #: Bytes of a skipped reply frame still to drop as they come (see gateway.read_reply).
        self.discard = 0

    def fill(self, timeout: float | None) -> bool:
        """Read what is available (waiting up to ``timeout``); False on timeout."""
        if self.eof:
            return True
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        data = os.read(self.fd, 1 << 20)
        if not data:
            self.eof = True
        self.buffer += data
        return True

    def line(self) -> bytes | None:
        """The next whole line read (without its newline), else None."""
        newline = self.buffer.find(b"\n")
        if newline < 0:
            return None
        raw = bytes(self.buffer[:newline])
        del self.buffer[: newline + 1]
        return raw


def read_job(
    stdin: Reader, idle_exit: float, wake: Callable[[], float | None] | None = None
) -> dict[str, Any] | None:
    """The next job, or None when stdin closed or no job came for ``idle_exit`` seconds.

    ``wake``, while waiting, is called before each wait and says when (a monotonic time)
    it wants to be called again, if ever.
    """
    deadline = time.monotonic() + idle_exit
    header = None
    while True:
        while read_reply(stdin) is not None:
            pass  # a model reply that came after its job ended
        if not stdin.buffer.startswith(b"r"):  # else: the rest of such a reply is due
            header = stdin.line()
            if header is not None:
                break
            if len(stdin.buffer) > 32:
                raise ValueError("bad job header")
        if stdin.eof:
            return None
        now = time.monotonic()
        remaining = deadline - now
        wake_at = wake() if wake is not None else None
        if wake_at is not None and wake_at < deadline:
            stdin.fill(max(0.0, wake_at - now))
            continue
        if remaining <= 0 or not stdin.fill(remaining):
            return None
    size = int(header.strip())
    while len(stdin.buffer) < size:
        if stdin.eof:
            raise ValueError(f"job truncated: {len(stdin.buffer)} of {size} bytes")
        stdin.fill(None)
    body = bytes(stdin.buffer[:size])
    del stdin.buffer[:size]
    job: dict[str, Any] = json.loads(body)
    if job.get("protocol") != contract.PROTOCOL_VERSION:
        raise ValueError(f"protocol {job.get('protocol')} != {contract.PROTOCOL_VERSION}")
    check_columns(job)  # its rows come as columns; a row's index in them is its record's "i"
    return job
