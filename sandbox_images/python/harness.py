"""scorebox sandbox harness: a warm worker that serves jobs of one check, one at a time.

Stdlib only; started as ``python3 -I /opt/scorebox/harness.py [IDLE_EXIT_SECONDS]``.

The process is split in two so that nothing a check does can reach the result
channel or survive its job:

* the **parent** (this process, never running user code) reads jobs from stdin
  (a line with the byte length, then the JSON document), owns the private
  result channel (a copy of the original stdout; fd 1 itself points at stderr),
  frames every record with the job's nonce, and is non-dumpable, so a check
  can neither ptrace it nor open its descriptors through /proc;
* for each job it **forks a child** that (as the image's unprivileged user when
  the parent runs as root, which it does under gVisor) closes stdin and the result channel,
  loads the check from the job's source into a fresh module (never from a file
  on ``sys.path``) and writes one plain JSON record per row to a pipe. The
  parent checks every record (row order, size, statuses only a check may
  report, internal consistency) before relaying it, and is the per-row
  watchdog: a child silent for longer than the row's time limit is killed and
  its row is ``timeout``; a child that dies or corrupts its records costs its
  row ``crashed`` (or ``oom``), and the rest of the job goes on in a fresh child.

The parent is the container's PID 1 (the host starts it in place of the
image's tini), so no other process holds the container's stdin and stdout, a
check cannot signal it (``kill(-1)`` skips PID 1, and the parent ignores
SIGINT), and every orphan is its child. Under gVisor it runs as root inside
the sandbox and each child drops to the image's user (``drop_to_check_user``).

Between jobs the parent kills every other process and empties
/tmp and /dev/shm, so the next job starts from a clean slate. With no job for
IDLE_EXIT_SECONDS (the host died, say) it exits, and the container with it.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import ctypes
import faulthandler
import io
import json
import math
import mmap
import os
import select
import shutil
import signal
import sys
import time
import traceback
import types
from typing import Any

sys.path[:0] = ["/opt/scorebox", "/opt/scorebox/site-packages"]
#: Stand-ins for other tools' packages (reward_kit) come LAST: a check's declared
#: environment, put before them on sys.path, replaces them with the real package.
sys.path.append("/opt/scorebox/stand-in-modules")

import gateway  # noqa: E402  (the model gateway's container side, beside this file)

from engine import contract  # noqa: E402  (needs the path above)
from engine.contract import formats  # noqa: E402

#: A check's declared environment (PEP 723 block), present only in its derived image. The
#: forked child puts it first on the import path just before it loads the check, so a
#: declared package wins over the image's copy or stand-in (e.g. ``okareo``), and nothing
#: in it can shadow a module the harness's parent imports. See engine/environments.
DECLARED_ENVIRONMENT = "/opt/scorebox-env"

#: Statuses a check's own process may report; the others only the parent or the host know.
CHILD_STATUSES = frozenset(status.value for status in contract.CHECK_STATUSES)
#: A status's byte in a result block, and a score type's (engine/contract/statuses.py).
STATUS_CODE = {status.value: code for code, status in enumerate(contract.CHECK_STATUSES)}
KIND_CODE = {
    (kind.value if kind is not None else None): code
    for code, kind in enumerate(contract.SCORE_KINDS)
}
#: Status values as plain strings: run_row uses them once a row (an enum's .value is slow).
_OK, _ERROR, _OOM, _INVALID_SCORE, _OUTPUT_LIMIT, _SKIPPED = (
    contract.Status.OK.value,
    contract.Status.ERROR.value,
    contract.Status.OOM.value,
    contract.Status.INVALID_SCORE.value,
    contract.Status.OUTPUT_LIMIT.value,
    contract.Status.SKIPPED.value,
)
#: What of a row record travels beside its block's columns, when present.
EXTRA_KEYS = ("error", "explanation", "output", "passed", "metadata")
#: Ints beyond this travel exactly in the row's extras (a block's score column is float64).
EXACT_FLOAT_INT = 2**53
#: In block mode, how often the parent looks at the child's progress counter, and how long
#: finished rows may wait there before they travel to the host as one block.
POLL_SECONDS = 0.005
BLOCK_FLUSH_SECONDS = 0.005
#: Extra seconds past a row's time limit before the parent kills a silent child.
WATCHDOG_GRACE_SECONDS = 0.5
#: Records larger than this are a protocol fault (the host enforces its own cap too).
MAX_RECORD_BYTES = 64 * 1024
#: The end of what a check wrote to its raw descriptors, kept for crash messages.
OUTPUT_TAIL_BYTES = 4096
DEFAULT_IDLE_EXIT_SECONDS = 900.0
SCRATCH_DIRS = ("/tmp", "/dev/shm")
#: How long a finished row's record may wait to travel with the next ones.
FLUSH_SECONDS = 0.002
#: How long reset() may take to see every stray process gone.
RESET_SECONDS = 2.0
# Bound before any check runs: a check replacing json.dumps cannot corrupt its records.
_encode = json.JSONEncoder(ensure_ascii=False, default=repr).encode
CHECK_FILENAME = "<check>"
CHECK_MODULE = "scorebox_check"
MAX_ERROR_CHARS = 4000
TRACEBACK_FRAMES = 8


class OutputLimit(BaseException):
    """The check printed more than the job allows."""


def write_all(fd: int, data: bytes) -> None:
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
        self.relay(_encode(record).encode())

    def flush(self) -> None:
        if self.pending:
            write_all(self.fd, b"".join(self.pending))
            self.pending.clear()
            self.size = 0


class Capture(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr during a row: keeps a capped copy."""

    def __init__(self, budget: list[int], keep_chars: int) -> None:
        self.budget = budget  # shared remaining job budget, in characters
        self.keep_chars = keep_chars
        self.parts: list[str] = []
        self.kept = 0
        self.exceeded = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.exceeded:
            raise OutputLimit()
        self.budget[0] -= len(text)
        if self.kept < self.keep_chars:
            piece = text[: self.keep_chars - self.kept]
            self.parts.append(piece)
            self.kept += len(piece)
        if self.budget[0] < 0:
            self.exceeded = True
            raise OutputLimit()
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str | None:
        return "".join(self.parts) if self.parts else None


def short(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_exception(exc: BaseException) -> str:
    """Type, message and the check's own frames (not the harness's)."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename == CHECK_FILENAME
    ][-TRACEBACK_FRAMES:]
    head = f"{type(exc).__name__}: {exc}"
    if not frames:
        return short(head)
    lines = [f"  line {f.lineno}, in {f.name}" for f in frames]
    return short(head + "\nTraceback (check frames):\n" + "\n".join(lines))


class Entry:
    """The loaded check's entry: the callable, its format and its signature."""

    def __init__(
        self,
        func: Any,
        signature: contract.Signature,
        detected: formats.Detected | None = None,
    ) -> None:
        self.func = func
        self.signature = signature
        self.detected = detected

    @property
    def parameters(self) -> list[str]:
        """What the loaded record declares (the requirable inputs the host checks)."""
        return list(self.signature.bound)


def load_check(job: dict[str, Any]) -> Entry:
    """Execute the check's source as a fresh module and find its entry (any format)."""
    source = job["source"]
    if os.path.isdir(DECLARED_ENVIRONMENT) and DECLARED_ENVIRONMENT not in sys.path:
        sys.path.insert(0, DECLARED_ENVIRONMENT)
    if job.get("policy") == contract.Policy.RESTRICTED.value:
        from engine.contract.restricted import exec_restricted

        namespace = exec_restricted(source, CHECK_FILENAME)
    else:
        module = types.ModuleType(CHECK_MODULE)
        module.__file__ = CHECK_FILENAME
        sys.modules[CHECK_MODULE] = module
        # Typing names (Union, Optional, ...) that Okareo's examples use without importing.
        module.__dict__.update(contract.check_prelude())
        # dont_inherit: the harness's own `from __future__` flags must not leak into checks.
        code = compile(source, CHECK_FILENAME, "exec", dont_inherit=True)
        exec(code, module.__dict__)
        namespace = module.__dict__
    try:
        detected = formats.detect(*formats.shapes_of(ast.parse(source)), entry=job.get("entry"))
    except formats.FormatError:
        if contract.ENTRYPOINT_CLASS in namespace or contract.ENTRYPOINT_FUNCTION in namespace:
            detected = None  # an Okareo-shaped file: its own messages below
        else:
            raise
    if detected is None or detected.format is formats.Format.OKAREO:
        func, signature = contract.resolve_entrypoint(namespace)
        return Entry(func, signature)
    func = namespace.get(detected.entry)
    if not callable(func):
        raise contract.EntrypointError(f"`{detected.entry}` is not callable after loading")
    return Entry(func, contract.Signature(()), detected)


def _message_type() -> Any:
    """reward_kit.Message (the declared package's, else the stand-in's), or None."""
    module = sys.modules.get("reward_kit")
    if module is None:
        with contextlib.suppress(Exception):
            import reward_kit as module  # type: ignore[import-not-found,no-redef]
    message = getattr(module, "Message", None)
    if message is None:
        return None
    return lambda fields: message(**fields)


_loop: list[Any] = []


def await_value(value: Any) -> Any:
    """Run a coroutine (an ``async def`` scorer's result) to completion in this child.

    One event loop serves every row; the parent's watchdog bounds the row as it bounds a
    plain call, so a coroutine that never finishes ends as a ``timeout``.
    """
    if not _loop:
        import asyncio  # only a check with an async entry pays for it

        _loop.append(asyncio.new_event_loop())
    return _loop[0].run_until_complete(value)


def run_row(
    entry: Entry,
    row: dict[str, Any],
    job: dict[str, Any],
    budget: list[int],
    expected: list[contract.OutputType | None],
) -> dict[str, Any]:
    record: dict[str, Any] = {"t": "row", "i": row["i"], "status": _OK}
    signature = entry.signature
    missing = contract.missing_inputs(signature.bound, row)
    if missing:
        record.update(
            status=_SKIPPED,
            error=f"the row has no {', '.join(missing)}, which the check requires",
            ms=0.0,
        )
        return record
    capture = Capture(budget, int(job.get("max_row_output_chars", 4096)))
    detected = entry.detected
    args: list[Any] = []
    if detected is None:
        kwargs = contract.bind_arguments(signature.bound, row)
    else:
        assert detected.shape is not None
        message = _message_type() if detected.format is formats.Format.REWARD_KIT else None
        config = job.get("config")
        args, kwargs = formats.bind(detected.format, detected.shape, row, message, config)
    sys.stdout = sys.stderr = capture
    started = time.perf_counter()
    value: Any = None
    try:
        value = entry.func(*args, **kwargs)
        if (
            detected is not None
            and detected.format in formats.ASYNC_FORMATS
            and hasattr(value, "__await__")
        ):
            value = await_value(value)
    except OutputLimit:
        record.update(
            status=_OUTPUT_LIMIT,
            error=f"the check printed more than {job['max_output_bytes']} characters in this job",
        )
    except MemoryError:
        record.update(status=_OOM, error="MemoryError: out of memory")
    except BaseException as exc:
        record.update(status=_ERROR, error=describe_exception(exc))
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    record["ms"] = round((time.perf_counter() - started) * 1000, 3)
    if capture.exceeded and record["status"] == _OK:
        record.update(
            status=_OUTPUT_LIMIT,
            error=f"the check printed more than {job['max_output_bytes']} characters in this job",
        )
    output = capture.text()
    if output is not None:
        record["output"] = output
    if record["status"] != _OK:
        return record
    if detected is not None and formats.skips(detected.format, value):
        record.update(
            status=_SKIPPED,
            error="the scorer returned None: the row is skipped (as Braintrust does)",
        )
        return record
    try:
        if detected is None:
            score = contract.coerce_score(value, expected[0])
        else:
            score = formats.coerce(detected.format, value, expected[0])
    except contract.InvalidScore as exc:
        record.update(status=_INVALID_SCORE, error=str(exc))
        return record
    if expected[0] is None:
        expected[0] = score.output_type
    record.update(score=score.score, output_type=score.output_type.value)
    if score.explanation is not None:
        record["explanation"] = score.explanation
    if score.passed is not None:
        record["passed"] = score.passed
    metadata = formats.bounded_metadata(score.metadata)
    if metadata:
        record["metadata"] = metadata
    return record


# -- result blocks: the child's columns, shared with the parent -----------------------


class Block:
    """A child's results as columns in memory it shares with the parent (block mode).

    The child writes each row's status code, score kind, score and duration into the
    columns, then bumps the progress counter; a row with more to say (an error, an
    explanation, what it printed, a pass flag, metadata, an int too large for a float)
    first writes those extras to its pipe as one JSON line. The parent never parses the
    common row: it reads the counter (its per-row watchdog), and sends the finished rows'
    columns to the host as one block. The child can write anything here (the check runs
    in it), so the host checks every code and score (engine/sandbox/blocks.py); the parent
    only refuses a counter that goes back or past the end.
    """

    def __init__(self, rows: int) -> None:
        self.rows = rows
        # Layout: counter (8 bytes), scores (8n), ms (8n), codes (n), kinds (n).
        self.memory = mmap.mmap(-1, 8 + 18 * max(rows, 1))  # MAP_SHARED: survives fork
        view = memoryview(self.memory)
        self.counter = view[0:8].cast("Q")
        self.scores = view[8 : 8 + 8 * rows].cast("d")
        self.ms = view[8 + 8 * rows : 8 + 16 * rows].cast("d")
        self.codes = view[8 + 16 * rows : 8 + 17 * rows]
        self.kinds = view[8 + 17 * rows : 8 + 18 * rows]

    def count(self) -> int:
        return int(self.counter[0])

    def put(self, k: int, record: dict[str, Any], emit: Any) -> None:
        """Row ``k``'s record (as ``run_row`` made it) into the columns; extras to ``emit``."""
        extras = {key: record[key] for key in EXTRA_KEYS if key in record}
        score = record.get("score")
        kind = KIND_CODE[record.get("output_type")] if score is not None else 0
        value = math.nan
        if score is not None:
            value = float(score)
            if kind == KIND_CODE[contract.OutputType.INT.value] and abs(score) > EXACT_FLOAT_INT:
                extras["score"] = score  # exact, beside the column's approximation
        if extras:
            extras["t"] = "x"
            extras["i"] = k
            emit(extras)
        self.codes[k] = STATUS_CODE[record["status"]]
        self.kinds[k] = kind
        self.scores[k] = value
        self.ms[k] = float(record["ms"])
        self.counter[0] = k + 1  # last: the parent may send this row from now on

    def frame(self, first: int, start: int, stop: int, extras: list[Any]) -> dict[str, Any]:
        """The block record for rows ``start:stop`` (the job's row ``first + start`` on)."""

        def encode(view: memoryview[Any]) -> str:
            return base64.b64encode(view).decode()

        return {
            "t": "block",
            "i": first + start,
            "n": stop - start,
            "codes": encode(self.codes[start:stop]),
            "kinds": encode(self.kinds[start:stop]),
            "scores": encode(self.scores[start:stop]),
            "ms": encode(self.ms[start:stop]),
            "extras": extras,
        }

    def close(self) -> None:
        for view in (self.counter, self.scores, self.ms, self.codes, self.kinds):
            view.release()
        self.memory.close()


# -- the child: runs the check --------------------------------------------------


def run_child(
    job: dict[str, Any], rows: list[dict[str, Any]], out_fd: int, block: Block | None = None
) -> None:
    """Load the check and score ``rows``: one JSON line per record on ``out_fd``, or, with
    a ``block``, each row's result into its columns and only extras on ``out_fd``."""
    # The kernel's OOM killer takes the check before the parent.
    with contextlib.suppress(Exception), open("/proc/self/oom_score_adj", "w") as adj:
        adj.write("1000")
    budget = [int(job["max_output_bytes"])]
    keep = int(job.get("max_row_output_chars", 4096))
    expected: list[contract.OutputType | None] = [
        contract.OutputType(job["output_type"]) if job.get("output_type") else None
    ]

    def emit(record: dict[str, Any]) -> None:
        write_all(out_fd, _encode(record).encode() + b"\n")

    load_capture = Capture(budget, keep)
    sys.stdout = sys.stderr = load_capture
    load_error: str | None = None
    try:
        entry = load_check(job)
    except OutputLimit:
        load_error = "the check printed more than allowed while loading"
    except contract.EntrypointError as exc:
        load_error = str(exc)
    except BaseException as exc:
        load_error = "the check failed to load: " + describe_exception(exc)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if load_error is not None:
        emit({"t": "loaded", "ok": False, "error": short(load_error)})
        return
    loaded: dict[str, Any] = {"t": "loaded", "ok": True, "parameters": entry.parameters}
    if entry.detected is not None:
        loaded.update(format=entry.detected.format.value, entry=entry.detected.entry)
    emit(loaded)
    if block is None:
        for row in rows:
            emit(run_row(entry, row, job, budget, expected))
        return
    for k, row in enumerate(rows):
        block.put(k, run_row(entry, row, job, budget, expected), emit)
    emit({"t": "end"})


# -- the parent: owns the channel, watches the child ----------------------------


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
        newline = self.buffer.find(b"\n")
        if newline < 0:
            return None
        raw = bytes(self.buffer[:newline])
        del self.buffer[: newline + 1]
        return raw


def read_job(stdin: Reader, idle_exit: float) -> dict[str, Any] | None:
    """The next job, or None when stdin closed or no job came for ``idle_exit`` seconds."""
    deadline = time.monotonic() + idle_exit
    header = None
    while True:
        while gateway.read_reply(stdin) is not None:
            pass  # a model reply that came after its job ended
        if not stdin.buffer.startswith(b"r"):  # else: the rest of such a reply is due
            header = stdin.line()
            if header is not None:
                break
            if len(stdin.buffer) > 32:
                raise ValueError("bad job header")
        if stdin.eof:
            return None
        remaining = deadline - time.monotonic()
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
    for index, row in enumerate(job["rows"]):  # a row's index in the job is its record's "i"
        row["i"] = index
    return job


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


def kill_child(pid: int) -> int:
    """Kill and reap a child (already reaped: 0)."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def row_fault(i: int, status: str, error: str) -> dict[str, Any]:
    return {"t": "row", "i": i, "status": status, "error": error, "ms": 0.0}


class JobRun:
    """One job: forks children until every row has a record, relaying what they report."""

    def __init__(self, job: dict[str, Any], result_fd: int, stdin: Reader | None = None) -> None:
        self.job = job
        self.result_fd = result_fd
        self.stdin = stdin
        GATEWAY.begin(job)
        gateway_seconds = job.get("gateway_row_timeout_seconds")
        #: A row that called the model may run this long (None: the gateway adds no time).
        self.gateway_allowance = (
            float(gateway_seconds) + WATCHDOG_GRACE_SECONDS if gateway_seconds else None
        )
        self.channel = Channel(result_fd, job["nonce"])
        self.rows: list[dict[str, Any]] = job["rows"]
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

    def run(self) -> None:
        while self.pos < len(self.rows) or not self.loaded_sent:
            fault = self.run_child()
            if fault is None:
                continue
            if not self.loaded_sent:  # the check never loaded: every row gets the cause
                self.channel.send({"t": "loaded", "ok": False, "error": fault[1]})
                self.loaded_sent = True
                self.fail_rest(*fault)
            elif self.pos < len(self.rows):
                self.channel.send(row_fault(self.rows[self.pos]["i"], *fault))
                self.pos += 1
        GATEWAY.end()
        # Reset before "done": the host sends the next job only to a container that is clean.
        reusable = reset()
        budget = self.job.get("task_budget")
        if isinstance(budget, int) and Tasks.created >= budget:
            reusable = False
        self.channel.send({"t": "done", "rows": len(self.rows), "reusable": reusable})
        self.channel.flush()

    def fail_rest(self, status: str, error: str) -> None:
        for row in self.rows[self.pos :]:
            self.channel.send(row_fault(row["i"], status, error))
        self.pos = len(self.rows)

    def run_child(self) -> tuple[str, str] | None:
        """Fork a child for the remaining rows; the fault that ended it early, if any."""
        read_fd, write_fd = os.pipe()
        out_read, out_write = os.pipe()
        ooms_before = oom_kills()
        stop = self.pos + 1 if self.pos < self.suspect_end else len(self.rows)
        block = Block(stop - self.pos) if self.job.get("result_blocks") else None
        pid = os.fork()
        if pid:
            Tasks.saw(pid, ours=True)
        if pid == 0:  # the child: no way back to stdin or the result channel
            code = 70
            try:
                drop_to_check_user()
                signal.signal(signal.SIGINT, signal.default_int_handler)
                os.close(read_fd)
                os.close(out_read)
                os.close(self.result_fd)
                os.close(0)
                GATEWAY.close_in_child()
                # Whatever the check writes to fd 1 or 2 reaches only the parent, which counts it.
                os.dup2(out_write, 1)
                os.dup2(out_write, 2)
                os.close(out_write)
                run_child(self.job, self.rows[self.pos : stop], write_fd, block)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        os.close(out_write)
        output = Reader(out_read)
        try:
            if block is None:
                fault, finished = self.watch(Reader(read_fd), output, pid)
            else:
                fault, finished = self.watch_block(Reader(read_fd), output, pid, block)
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
        step_started = time.monotonic()
        called_model = False  # whether the row (or the load) in flight called the model
        deadline = step_started + self.load_seconds + WATCHDOG_GRACE_SECONDS
        while self.pos < len(self.rows) or not loaded:
            raw = reader.line()
            if raw is None:
                if capped:
                    error = f"the check wrote more than {self.job['max_output_bytes']} bytes"
                    return (contract.Status.OUTPUT_LIMIT.value, error), False
                if reader.eof:
                    return None, False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return self.timeout(loaded, called_model), False
                due = self.channel.due_in()
                if due is not None and due <= 0:
                    self.channel.flush()  # the oldest queued record has waited long enough
                    due = None
                watched = [reader.fd] if output.eof else [reader.fd, output.fd]
                watched += GATEWAY.fds()
                if self.stdin is not None and not self.stdin.eof:
                    watched.append(self.stdin.fd)
                wait = remaining if due is None else min(remaining, due)
                ready, _, _ = select.select(watched, [], [], wait)
                if self.serve_gateway(ready) and self.gateway_allowance is not None:
                    # Model calls count against the row, within the gateway's larger bound.
                    deadline = max(deadline, step_started + self.gateway_allowance)
                    called_model = True
                if output.fd in ready and not self.count_output(output):
                    # Past the cap: stop the check at once, then take the records it
                    # finished before, so the row in flight is the one that gets the blame.
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    while not reader.eof and reader.fill(0):
                        pass
                    capped = True
                elif reader.fd in ready:
                    reader.fill(0)
                continue
            try:
                if loaded:
                    check_record(raw, self.rows[self.pos]["i"])
                    self.channel.relay(raw)
                    self.pos += 1
                else:
                    loaded = self.on_loaded(raw)
                    if not loaded:
                        return None, True
            except ValueError as exc:
                what = f"the check corrupted the harness's result records ({short(str(exc), 200)})"
                return (contract.Status.CRASHED.value, what), False
            step_started = time.monotonic()
            called_model = False
            deadline = step_started + self.row_allowance
        return None, True

    def watch_block(
        self, reader: Reader, output: Reader, pid: int, block: Block
    ) -> tuple[tuple[str, str] | None, bool]:
        """Block mode's :meth:`watch`: the child's progress counter is the watchdog's clock,
        finished rows travel as blocks; (fault, whether the child finished its work)."""
        watch = BlockWatch(self, block, reader)
        capped = False
        was_loaded = False
        now = last_flush = step_started = time.monotonic()
        called_model = False
        deadline = step_started + self.load_seconds + WATCHDOG_GRACE_SECONDS
        gateway_ready: list[int] = []
        while True:
            try:
                moved = watch.take()
                if reader.eof and not watch.ended:  # the child is gone: its counter is final
                    moved = watch.take() or moved
            except ValueError as exc:
                watch.flush(watch.seen)
                if block.rows > 1:
                    # Which of the rows since the last good look wrote it is unknown: they
                    # run again one per child, and the one that does it alone is blamed.
                    self.suspect_end = self.pos + max(
                        1, min(block.count(), block.rows) - watch.seen
                    )
                    self.retry = True
                    return None, False
                what = f"the check corrupted the harness's result block ({short(str(exc), 200)})"
                return (contract.Status.CRASHED.value, what), False
            if watch.failed_load:
                return None, True
            now = time.monotonic()
            if moved or (watch.loaded and not was_loaded):
                was_loaded = True
                step_started, called_model = now, False
                deadline = step_started + self.row_allowance
            if watch.ended or capped or reader.eof:
                watch.flush(watch.seen, final=True)
                if watch.ended:
                    return None, True
                if capped:
                    error = f"the check wrote more than {self.job['max_output_bytes']} bytes"
                    return (contract.Status.OUTPUT_LIMIT.value, error), False
                return None, False
            if gateway_ready:
                # Rows finished before a model request go first: the host charges the
                # request to the row in flight.
                watch.flush(watch.seen)
                if self.serve_gateway(gateway_ready) and self.gateway_allowance is not None:
                    deadline = max(deadline, step_started + self.gateway_allowance)
                    called_model = True
                gateway_ready = []
            if watch.seen > watch.sent and now - last_flush >= BLOCK_FLUSH_SECONDS:
                watch.flush(watch.seen)
                last_flush = now
            due = self.channel.due_in()
            if due is not None and due <= 0:
                self.channel.flush()  # what an earlier child left queued has waited enough
                due = None
            remaining = deadline - now
            if remaining <= 0:
                watch.flush(watch.seen)
                return self.timeout(watch.loaded, called_model), False
            watched = [reader.fd] if output.eof else [reader.fd, output.fd]
            watched += GATEWAY.fds()
            if self.stdin is not None and not self.stdin.eof:
                watched.append(self.stdin.fd)
            wait = min(remaining, POLL_SECONDS) if due is None else min(remaining, due)
            ready, _, _ = select.select(watched, [], [], wait)
            gateway_ready = [
                fd for fd in ready if GATEWAY.owns(fd) or (self.stdin and fd == self.stdin.fd)
            ]
            if output.fd in ready and not self.count_output(output):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                capped = True

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
            if GATEWAY.owns(fd):
                for request in GATEWAY.on_ready(fd):
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
                    reply = gateway.read_reply(stdin)
                except ValueError:
                    stdin.buffer.clear()  # the host broke its own framing: drop it
                    break
                if reply is None:
                    break
                # A whole frame was taken (a skipped one too): the next starts a frame.
                released += GATEWAY.answer(reply)
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
            if fmt in {f.value for f in formats.Format} and isinstance(entry, str):
                loaded.update(format=fmt, entry=entry[:200])
            self.channel.send(loaded)
            self.loaded_sent = True
        return True


class BlockWatch:
    """What the parent knows of a block-mode child: its progress, its extras, what was sent."""

    def __init__(self, run: JobRun, block: Block, reader: Reader) -> None:
        self.run = run
        self.block = block
        self.reader = reader
        self.first = run.pos  # the job's index of the block's row 0
        self.sent = 0  # rows already sent to the host
        self.seen = 0  # the progress counter, as last read
        self.extras: dict[int, dict[str, Any]] = {}
        self.loaded = False
        self.failed_load = False
        self.ended = False
        limit = int(run.job.get("max_block_bytes") or MAX_RECORD_BYTES)
        self.budget = max(limit, 1024) - 512  # the record's frame and keys
        #: 18 bytes a row in base64 (24 characters)
        self.rows_per_block = self.budget // 24

    def take(self) -> bool:
        """Read the counter, then every line the child wrote before it (its rows' extras come
        before their count); whether rows finished since the last call. ValueError: the
        child broke the block protocol."""
        count = self.block.count()
        drained = False
        for _ in range(16):  # bounded: a child that floods its pipe cannot hold the watchdog
            if self.reader.eof or not self.reader.fill(0):
                drained = True
                break
        while (raw := self.reader.line()) is not None:
            if len(raw) > MAX_RECORD_BYTES:
                raise ValueError(f"a result record of {len(raw)} bytes")
            if not self.loaded:
                self.loaded = self.run.on_loaded(raw)
                if not self.loaded:
                    self.failed_load = True
                    return False
                continue
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise ValueError("not a record")
            kind = record.pop("t", None)
            if kind == "end":
                self.ended = True
                count = self.block.count()  # written before "end": final
                continue
            k = record.pop("i", None)
            if kind != "x" or type(k) is not int or not self.sent <= k < self.block.rows:
                raise ValueError(f"an extras record for row {k!r}")
            self.extras[k] = record
        if count < self.seen or count > self.block.rows:
            raise ValueError(f"progress {count} after {self.seen}, of {self.block.rows} rows")
        if self.ended and count != self.block.rows:
            raise ValueError(f"the end after {count} of {self.block.rows} rows")
        if not drained and not self.ended:
            return False  # rows count as finished only once every line before them is read
        moved = count > self.seen
        self.seen = count
        return moved

    def flush(self, upto: int, *, final: bool = False) -> None:
        """Send rows ``sent:upto`` to the host as blocks, each within the record size
        (``final``: the child is done; the blocks travel with what the job sends next, in
        one write: each write is a frame that the runtime, Docker and the host handle)."""
        start = self.sent
        while start < upto:
            stop = min(upto, start + self.rows_per_block)
            parts: list[list[Any]] = []
            if self.extras:
                size = 0
                for k in range(start, stop):
                    extra = self.extras.pop(k, None)
                    cost = 24 + (len(_encode(extra)) + 16 if extra is not None else 0)
                    if k > start and size + cost > self.budget:
                        if extra is not None:
                            self.extras[k] = extra
                        stop = k
                        break
                    size += cost
                    if extra is not None:
                        parts.append([k - start, extra])
            self.run.channel.send(self.block.frame(self.first, start, stop, parts))
            start = stop
        self.sent = max(self.sent, upto)
        self.run.pos = self.first + self.sent
        if not final:
            self.run.channel.flush()


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


def reset() -> bool:
    """Nothing a job started or wrote survives it: kill strays, empty scratch space.

    Returns whether the container is back to how the job found it. Killed processes are
    reaped (the harness is their subreaper) before the next job may look at ``/proc``;
    a process that outlives ``RESET_SECONDS`` makes the container single-use.
    """
    deadline = time.monotonic() + RESET_SECONDS
    for pid in sorted(strays()):
        Tasks.saw(pid, ours=False)
    while True:
        with contextlib.suppress(Exception):
            os.kill(-1, signal.SIGKILL)  # every process we may signal but PID 1 and us
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not strays():
            break
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    for directory in SCRATCH_DIRS:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(Exception):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
    return True


#: The model gateway's listener, bound once by the parent before any check runs.
GATEWAY = gateway.Gateway()  # listening once main() calls GATEWAY.listen()


#: The image's unprivileged user (Dockerfile: ``useradd --uid 10001``), a check's process's.
CHECK_UID = CHECK_GID = 10001


def drop_to_check_user() -> None:
    """In a child, before any check code: become the check's user if the parent is root.

    Under gVisor the parent runs as root inside the sandbox (the host's container options)
    so that the check, as another uid, can neither open the parent's descriptors through
    /proc (gVisor's procfs ignores non-dumpable there), nor signal it.
    Under runc the whole container already runs as the check's user and this does nothing.
    """
    if os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(CHECK_GID)
    os.setuid(CHECK_UID)
    if os.getuid() == 0 or os.geteuid() == 0:  # never run a check as root
        os._exit(71)


def become_subreaper() -> None:
    """PR_SET_CHILD_SUBREAPER: a job's orphans become our children, so reset() can reap them."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def make_undumpable() -> None:
    """PR_SET_DUMPABLE 0: a check cannot ptrace the parent or open its /proc/<pid>/fd."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


#: io_uring_setup, io_uring_enter, io_uring_register: 425-427 on x86_64, i386, aarch64, arm.
IO_URING_SYSCALLS = (425, 427)
_ENOSYS = 38


def deny_io_uring() -> None:
    """A seccomp filter on top of Docker's profile: io_uring_* fail with ENOSYS, for good.

    Docker before 25 allows io_uring in its default profile, which would put the host
    kernel's io_uring in reach of user code under runc. The filter is inherited by
    every check process and can never be removed. Without it the harness refuses to run.
    """
    first, last = IO_URING_SYSCALLS
    # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}: the syscall number, minus the
    # x32 bit; 425 <= nr <= 427 -> SECCOMP_RET_ERRNO | ENOSYS, else SECCOMP_RET_ALLOW.
    program = [
        (0x20, 0, 0, 0),  # BPF_LD | BPF_W | BPF_ABS: seccomp_data.nr
        (0x54, 0, 0, 0xBFFFFFFF),  # BPF_ALU | BPF_AND | BPF_K: drop __X32_SYSCALL_BIT
        (0x35, 0, 2, first),  # BPF_JMP | BPF_JGE | BPF_K
        (0x25, 1, 0, last),  # BPF_JMP | BPF_JGT | BPF_K
        (0x06, 0, 0, 0x00050000 | _ENOSYS),  # BPF_RET: SECCOMP_RET_ERRNO | ENOSYS
        (0x06, 0, 0, 0x7FFF0000),  # BPF_RET: SECCOMP_RET_ALLOW
    ]

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(program))(*(SockFilter(*op) for op in program))
    fprog = SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS (Docker's no-new-privileges set it too)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        errno = ctypes.get_errno()
        sys.stderr.write(f"harness: cannot install the io_uring seccomp filter: errno {errno}\n")
        os._exit(72)


def main(argv: list[str]) -> int:
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
    GATEWAY.listen()
    stdin = Reader(0)
    while True:
        job = read_job(stdin, idle_exit)
        if job is None:
            return 0
        JobRun(job, result_fd, stdin).run()


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
