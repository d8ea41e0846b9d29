"""The check's process: load the check from the job's source, run it on each row.

Everything here runs in the forked child, as the check's user, with no way back to stdin
or the result channel: one plain JSON record per row goes to a pipe the parent reads (or,
in block mode, each row's result into the columns of :mod:`engine.harness.blocks`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import sys
import time
import traceback
import types
from typing import Any

from engine import contract
from engine.contract import formats
from engine.harness.blocks import Block
from engine.harness.channel import encode_json, write_all

#: A check's declared environment (PEP 723 block), present only in its derived image. The
#: forked child puts it first on the import path just before it loads the check, so a
#: declared package wins over the image's copy or stand-in (e.g. ``okareo``), and nothing
#: in it can shadow a module the harness's parent imports. See engine/environments.
DECLARED_ENVIRONMENT = "/opt/scorebox-env"
#: Status values as plain strings: run_row uses them once a row (an enum's .value is slow).
_OK, _ERROR, _OOM, _INVALID_SCORE, _OUTPUT_LIMIT, _SKIPPED = (
    contract.Status.OK.value,
    contract.Status.ERROR.value,
    contract.Status.OOM.value,
    contract.Status.INVALID_SCORE.value,
    contract.Status.OUTPUT_LIMIT.value,
    contract.Status.SKIPPED.value,
)
CHECK_FILENAME = "<check>"
CHECK_MODULE = "scorebox_check"
MAX_ERROR_CHARS = 4000
TRACEBACK_FRAMES = 8


class OutputLimit(BaseException):
    """The check printed more than the job allows."""


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
    """``text`` cut to ``limit`` characters, marked with ``...`` when cut."""
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
        # RestrictedPython is loaded only for a job under the restricted policy
        from engine.contract.restricted import exec_restricted  # noqa: PLC0415

        namespace = exec_restricted(source, CHECK_FILENAME)
    else:
        module = types.ModuleType(CHECK_MODULE)
        module.__file__ = CHECK_FILENAME
        sys.modules[CHECK_MODULE] = module
        # Typing names (Union, Optional, ...) that Okareo's examples use without importing.
        module.__dict__.update(contract.check_prelude())
        # dont_inherit: the harness's own `from __future__` flags must not leak into checks.
        code = compile(source, CHECK_FILENAME, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # nosec B102: running the check is the harness's job, confined
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
            import reward_kit as module  # type: ignore[import-not-found,no-redef]  # noqa: PLC0415
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
        import asyncio  # noqa: PLC0415 (only a check with an async entry pays for it)

        _loop.append(asyncio.new_event_loop())
    return _loop[0].run_until_complete(value)


def run_row(
    entry: Entry,
    row: dict[str, Any],
    job: dict[str, Any],
    budget: list[int],
    expected: list[contract.OutputType | None],
) -> dict[str, Any]:
    """Score one row: its record, with a typed status for whatever the check did.

    ``budget`` is what the job may still print; ``expected`` the job's score type, set by
    the first row that scores when the job names none (later rows must agree).
    """
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


def load_for(job: dict[str, Any], out_fd: int, budget: list[int]) -> Entry | None:
    """Load the check of ``job`` and send the parent its ``loaded`` record on ``out_fd``;
    the entry, or None when it failed to load. What loading prints is charged to
    ``budget``, the job's output budget, which its rows go on spending."""
    # The kernel's OOM killer takes the check before the parent.
    with contextlib.suppress(Exception), open("/proc/self/oom_score_adj", "w") as adj:
        adj.write("1000")
    load_capture = Capture(budget, int(job.get("max_row_output_chars", 4096)))
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
        _emit(out_fd, {"t": "loaded", "ok": False, "error": short(load_error)})
        return None
    loaded: dict[str, Any] = {"t": "loaded", "ok": True, "parameters": entry.parameters}
    if entry.detected is not None:
        loaded.update(format=entry.detected.format.value, entry=entry.detected.entry)
    _emit(out_fd, loaded)
    return entry


def serve_rows(
    entry: Entry,
    job: dict[str, Any],
    rows: list[dict[str, Any]],
    out_fd: int,
    block: Block | None,
    budget: list[int],
) -> None:
    """Score ``rows`` with the loaded ``entry``: one JSON line per record on ``out_fd``, or,
    with a ``block``, each row's result into its columns and only extras on ``out_fd``."""
    expected: list[contract.OutputType | None] = [
        contract.OutputType(job["output_type"]) if job.get("output_type") else None
    ]

    def emit(record: dict[str, Any]) -> None:
        _emit(out_fd, record)

    if block is None:
        for row in rows:
            emit(run_row(entry, row, job, budget, expected))
        return
    for k, row in enumerate(rows):
        block.put(k, run_row(entry, row, job, budget, expected), emit)
    emit({"t": "end"})


def _emit(out_fd: int, record: dict[str, Any]) -> None:
    write_all(out_fd, encode_json(record).encode() + b"\n")


def run_child(
    job: dict[str, Any], rows: list[dict[str, Any]], out_fd: int, block: Block | None = None
) -> None:
    """Load the check and score ``rows`` (:func:`load_for`, then :func:`serve_rows`)."""
    budget = [int(job["max_output_bytes"])]
    entry = load_for(job, out_fd, budget)
    if entry is not None:
        serve_rows(entry, job, rows, out_fd, block, budget)
