"""scorebox sandbox harness: runs one job inside a fresh container, then exits.

Stdlib only; started as ``python3 -I /opt/scorebox/harness.py``. It reads one
job from stdin (a line with the byte length, then the JSON document), loads the
check from the job's source (never from a file on ``sys.path``), runs
``evaluate`` on each row with a per-row timer and captured output, and writes
one record per line to a private copy of stdout, each prefixed with the job's
nonce. File descriptor 1 itself is pointed at stderr, so nothing the check
writes can reach the result channel.
"""

from __future__ import annotations

import faulthandler
import io
import json
import os
import signal
import sys
import time
import traceback
import types
from typing import Any

sys.path[:0] = ["/opt/scorebox", "/opt/scorebox/site-packages"]

from engine import contract  # noqa: E402  (needs the path above)

CHECK_FILENAME = "<check>"
CHECK_MODULE = "scorebox_check"
MAX_ERROR_CHARS = 4000
TRACEBACK_FRAMES = 8


class RowTimeout(BaseException):  # BaseException: `except Exception` cannot swallow it
    """The per-row timer fired."""


class OutputLimit(BaseException):
    """The check printed more than the job allows."""


class Channel:
    """The private result channel: one nonce-prefixed JSON record per line."""

    def __init__(self, fd: int, nonce: str) -> None:
        self.fd = fd
        self.prefix = nonce.encode() + b" "

    def send(self, record: dict[str, Any]) -> None:
        data = self.prefix + json.dumps(record, ensure_ascii=False, default=repr).encode() + b"\n"
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


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


def read_job() -> dict[str, Any]:
    stdin = sys.stdin.buffer
    header = stdin.readline(32)
    size = int(header.strip())
    body = stdin.read(size)
    if len(body) != size:
        raise ValueError(f"job truncated: {len(body)} of {size} bytes")
    job: dict[str, Any] = json.loads(body)
    if job.get("protocol") != contract.PROTOCOL_VERSION:
        raise ValueError(f"protocol {job.get('protocol')} != {contract.PROTOCOL_VERSION}")
    return job


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


def on_alarm(signum: int, frame: Any) -> None:
    raise RowTimeout()


def arm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, seconds)


def disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def load_check(job: dict[str, Any]) -> tuple[Any, contract.Signature]:
    """Execute the check's source as a fresh module and find ``evaluate``."""
    source = job["source"]
    if job.get("policy") == contract.Policy.RESTRICTED.value:
        from engine.restricted import exec_restricted

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
    return contract.resolve_entrypoint(namespace)


def run_row(
    func: Any,
    signature: contract.Signature,
    row: dict[str, Any],
    job: dict[str, Any],
    budget: list[int],
    expected: list[contract.OutputType | None],
) -> dict[str, Any]:
    record: dict[str, Any] = {"t": "row", "i": row["i"], "status": contract.Status.OK.value}
    missing = contract.missing_inputs(signature.bound, row)
    if missing:
        record.update(
            status=contract.Status.SKIPPED.value,
            error=f"the row has no {', '.join(missing)}, which the check requires",
            ms=0.0,
        )
        return record
    capture = Capture(budget, int(job.get("max_row_output_chars", 4096)))
    kwargs = contract.bind_arguments(signature.bound, row)
    sys.stdout = sys.stderr = capture
    started = time.perf_counter()
    value: Any = None
    try:
        arm(float(job["row_timeout_seconds"]))
        try:
            value = func(**kwargs)
        finally:
            disarm()
    except RowTimeout:
        record.update(
            status=contract.Status.TIMEOUT.value,
            error=f"evaluate ran longer than {job['row_timeout_seconds']} s",
        )
    except OutputLimit:
        record.update(
            status=contract.Status.OUTPUT_LIMIT.value,
            error=f"the check printed more than {job['max_output_bytes']} characters in this job",
        )
    except MemoryError:
        record.update(status=contract.Status.OOM.value, error="MemoryError: out of memory")
    except BaseException as exc:
        record.update(status=contract.Status.ERROR.value, error=describe_exception(exc))
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    record["ms"] = round((time.perf_counter() - started) * 1000, 3)
    if capture.exceeded and record["status"] == contract.Status.OK.value:
        record.update(
            status=contract.Status.OUTPUT_LIMIT.value,
            error=f"the check printed more than {job['max_output_bytes']} characters in this job",
        )
    output = capture.text()
    if output is not None:
        record["output"] = output
    if record["status"] != contract.Status.OK.value:
        return record
    try:
        score = contract.coerce_score(value, expected[0])
    except contract.InvalidScore as exc:
        record.update(status=contract.Status.INVALID_SCORE.value, error=str(exc))
        return record
    if expected[0] is None:
        expected[0] = score.output_type
    record.update(score=score.score, output_type=score.output_type.value)
    if score.explanation is not None:
        record["explanation"] = score.explanation
    return record


def main() -> int:
    # Keep a private copy of stdout for results; fd 1 now leads to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    faulthandler.enable(file=sys.__stderr__)
    signal.signal(signal.SIGALRM, on_alarm)
    job = read_job()
    channel = Channel(result_fd, job["nonce"])
    budget = [int(job["max_output_bytes"])]
    expected: list[contract.OutputType | None] = [
        contract.OutputType(job["output_type"]) if job.get("output_type") else None
    ]

    load_capture = Capture(budget, int(job.get("max_row_output_chars", 4096)))
    sys.stdout = sys.stderr = load_capture
    load_error: str | None = None
    try:
        arm(float(job.get("load_timeout_seconds", 20.0)))
        try:
            func, signature = load_check(job)
        finally:
            disarm()
    except RowTimeout:
        load_error = f"loading the check took longer than {job.get('load_timeout_seconds')} s"
    except OutputLimit:
        load_error = "the check printed more than allowed while loading"
    except contract.EntrypointError as exc:
        load_error = str(exc)
    except BaseException as exc:
        load_error = "the check failed to load: " + describe_exception(exc)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__

    if load_error is not None:
        channel.send({"t": "loaded", "ok": False, "error": short(load_error)})
        for row in job["rows"]:
            channel.send(
                {
                    "t": "row",
                    "i": row["i"],
                    "status": contract.Status.ERROR.value,
                    "error": short(load_error),
                    "ms": 0.0,
                }
            )
    else:
        channel.send({"t": "loaded", "ok": True, "parameters": list(signature.bound)})
        for row in job["rows"]:
            channel.send(run_row(func, signature, row, job, budget, expected))
    channel.send({"t": "done", "rows": len(job["rows"])})
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Threads the check left running must not keep the container alive.
    os._exit(code)
