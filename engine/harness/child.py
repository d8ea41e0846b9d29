"""The check's process: load the check from the job's source, run it on each row.

Everything here runs in the forked child, as the check's user, with no way back to stdin
or the result channel: one plain JSON record per row goes to a pipe the parent reads (or,
in block mode, each row's result into the columns of :mod:`engine.harness.blocks`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

from engine import contract
from engine.contract import formats
from engine.harness.binding import Calls
from engine.harness.blocks import EXACT_FLOAT_INT, KIND_OF, STATUS_CODE, Block
from engine.harness.channel import encode_json, write_all

#: A check's declared environment (PEP 723 block), present only in its derived image. The
#: forked child puts it first on the import path just before it loads the check, so a
#: declared package wins over the image's copy or stand-in (e.g. ``okareo``), and nothing
#: in it can shadow a module the harness's parent imports. See engine/environments.
DECLARED_ENVIRONMENT = "/opt/scorebox-env"
#: Status values as plain strings: serve_rows uses them once a row (an enum's .value is slow).
_OK, _ERROR, _OOM, _INVALID_SCORE, _OUTPUT_LIMIT, _SKIPPED = (
    contract.Status.OK.value,
    contract.Status.ERROR.value,
    contract.Status.OOM.value,
    contract.Status.INVALID_SCORE.value,
    contract.Status.OUTPUT_LIMIT.value,
    contract.Status.SKIPPED.value,
)
_OK_CODE = STATUS_CODE[_OK]
_INT_KIND = KIND_OF[contract.OutputType.INT]
CHECK_FILENAME = "<check>"
CHECK_MODULE = "scorebox_check"
MAX_ERROR_CHARS = 4000
#: The error of a row whose scorer returned None (a format whose tool skips such a row).
_RETURNED_NONE = "the scorer returned None: the row is skipped (as Braintrust does)"
TRACEBACK_FRAMES = 8
#: The names bound in a check's module before it runs, made once in the parent.
_PRELUDE = contract.check_prelude()


class OutputLimit(BaseException):
    """The check printed more than the job allows."""


class Capture(io.TextIOBase):
    """Stands in for sys.stdout/sys.stderr while a job's rows run (or its check loads):
    keeps a capped copy of what each row prints, taken at the row's end (:meth:`take`)."""

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

    def take(self) -> str | None:
        """What the row printed (capped), and start afresh for the next row (the job's
        budget goes on: a row past it leaves none for the next)."""
        if not self.parts and not self.exceeded:
            return None
        text = self.text()
        self.parts = []
        self.kept = 0
        self.exceeded = False
        return text


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
        """What the loaded record declares (the requirable inputs the host checks): the
        parameters ``evaluate`` names, not those ``**kwargs`` takes."""
        return list(self.signature.parameters)


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
        module.__dict__.update(_PRELUDE)
        # dont_inherit: the harness's own `from __future__` flags must not leak into checks.
        code = compile(source, CHECK_FILENAME, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # nosec B102: running the check is the harness's job, confined
        namespace = module.__dict__
    try:
        if job.get("okareo") is True:
            # the host parsed this source and found it an Okareo check: parsing it again in
            # a process just forked costs most of a millisecond of copied pages (the host
            # is trusted; the entry is still looked up and checked below)
            detected = None
        else:
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


def load_for(job: dict[str, Any], out_fd: int, budget: list[int]) -> Entry | None:
    """Load the check of ``job`` and send the parent its ``loaded`` record on ``out_fd``;
    the entry, or None when it failed to load. What loading prints is charged to
    ``budget``, the job's output budget, which its rows go on spending."""
    # The kernel's OOM killer takes the check before the parent. (os.open, not open(): the
    # io stack's objects would cost dozens of pages copied from the parent.)
    with contextlib.suppress(OSError):
        adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(adj, b"1000")
        finally:
            os.close(adj)
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
    start: int,
    stop: int,
    out_fd: int,
    block: Block | None,
    budget: list[int],
) -> None:
    """Score the job's rows ``start:stop`` with the loaded ``entry``: each row's result
    straight into the ``block``'s columns (only extras and the end on ``out_fd``), or,
    without one, one JSON line per row on ``out_fd``.

    The arguments are bound from the columns once for the job (:mod:`~engine.harness.binding`);
    stdout and stderr lead to one capture for the job, which gives each row what it printed.
    ``budget`` is what the job may still print; the job's score type, when it names none,
    is set by the first row that scores (later rows must agree).
    """
    detected = entry.detected
    reward_kit = detected is not None and detected.format is formats.Format.REWARD_KIT
    calls = Calls(entry, job, start, stop, _message_type() if reward_kit else None)
    capture = Capture(budget, int(job.get("max_row_output_chars", 4096)))
    sys.stdout = sys.stderr = capture
    try:
        _score_rows(
            calls,
            _caller_for(entry),
            _scorer_for(detected),
            _finisher_for(out_fd, start, block),
            capture,
            contract.OutputType(job["output_type"]) if job.get("output_type") else None,
            f"the check printed more than {job['max_output_bytes']} characters in this job",
        )
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if block is not None:
        _emit(out_fd, {"t": "end"})


def rehearse(entry: Entry, job: dict[str, Any], budget: list[int]) -> None:
    """Go through a job's path on none of its rows, calling nothing of the check.

    In a child forked ahead, the first pass over that path copies the parent's pages it
    touches (every object's reference count is written): done here, while the container
    idles, it is off the path of the job that comes (about 40 pages, a quarter of a
    millisecond of a one-row job's here). ``job`` is a job of no rows (``n`` 0, no
    ``columns``), as decoded.
    """
    with contextlib.suppress(Exception):
        serve_rows(entry, job, 0, 0, -1, None, budget)


#: (row k, status, ms, error, what it printed, score): one row's result on its way out.
Finish = Callable[[int, str, float, "str | None", "str | None", "contract.Score | None"], None]
#: What the entry returned, as a Score (InvalidScore naming the fix, or Skipped).
Scorer = Callable[[Any, "contract.OutputType | None"], "contract.Score"]


class Skipped(Exception):
    """What the entry returned skips its row (a format whose tool skips on None)."""


def _score_rows(
    calls: Calls,
    call: Callable[..., Any],
    score_of: Scorer,
    finish: Finish,
    capture: Capture,
    expected: contract.OutputType | None,
    too_much: str,
) -> None:
    """The row loop: call the entry on each row, read what it returned, ``finish`` the row.

    Every per-job choice (how to call, how to read a value, where a row's result goes) is
    made before the loop, so a row costs the check's call and little else.
    """
    lacking = calls.lacking()
    clock = time.perf_counter
    error: str | None
    value: Any
    score: contract.Score | None = None
    for k, (args, kwargs) in enumerate(calls):
        if k in lacking:
            error = f"the row has no {', '.join(lacking[k])}, which the check requires"
            finish(k, _SKIPPED, 0.0, error, None, None)
            continue
        sys.stdout = sys.stderr = capture  # as cheap as asking whether an earlier row moved them
        status, error, score = _OK, None, None
        started = clock()
        try:
            value = call(*args, **kwargs)
        except OutputLimit:
            status, error = _OUTPUT_LIMIT, too_much
        except MemoryError:
            status, error = _OOM, "MemoryError: out of memory"
        except BaseException as exc:
            status, error = _ERROR, describe_exception(exc)
        ms = round((clock() - started) * 1000, 3)
        if status != _OK:
            pass  # the call failed: its status stands
        elif capture.exceeded:  # it printed past the budget and caught OutputLimit itself
            status, error = _OUTPUT_LIMIT, too_much
        else:
            try:
                score = score_of(value, expected)
                expected = expected or score.output_type  # the first score sets the job's type
            except contract.InvalidScore as exc:
                status, error = _INVALID_SCORE, str(exc)
            except OutputLimit:  # printed while its result was read (a __float__)
                status, error = _OUTPUT_LIMIT, too_much
            except Skipped:
                status, error = _SKIPPED, _RETURNED_NONE
        finish(k, status, ms, error, capture.take(), score)


def _caller_for(entry: Entry) -> Callable[..., Any]:
    """How the job calls its entry: the entry itself, or for a format whose tool awaits
    an ``async def`` entry, a call that runs what it returns to completion."""
    func = entry.func
    detected = entry.detected
    if detected is None or detected.format not in formats.ASYNC_FORMATS:
        return func  # type: ignore[no-any-return]

    def awaiting(*args: Any, **kwargs: Any) -> Any:
        value = func(*args, **kwargs)
        return await_value(value) if hasattr(value, "__await__") else value

    return awaiting


def _scorer_for(detected: formats.Detected | None) -> Scorer:
    """How the job reads what its entry returned: an Okareo check's value is coerced; another
    format's adapter may first find it skips the row (:class:`Skipped`)."""
    if detected is None:
        return contract.coerce_score
    adapter = formats.ADAPTERS[detected.format]
    skips, coerce = adapter.skips, adapter.coerce

    def score_of(value: Any, expected: contract.OutputType | None) -> contract.Score:
        if skips(value):
            raise Skipped()
        return coerce(value, expected)

    return score_of


def _finisher_for(out_fd: int, start: int, block: Block | None) -> Finish:
    """Where the job's row results go: one ``row`` record each on ``out_fd``, or, with a
    ``block``, into its columns (extras on ``out_fd``)."""
    if block is None:

        def to_records(
            k: int,
            status: str,
            ms: float,
            error: str | None,
            output: str | None,
            score: contract.Score | None,
        ) -> None:
            _emit(out_fd, row_record(start + k, status, ms, error, output, score))

        return to_records

    def emit(record: dict[str, Any]) -> None:
        _emit(out_fd, record)

    def to_block(
        k: int,
        status: str,
        ms: float,
        error: str | None,
        output: str | None,
        score: contract.Score | None,
    ) -> None:
        into_block(block, k, status, ms, error, output, score, emit)

    return to_block


def row_record(
    i: int,
    status: str,
    ms: float,
    error: str | None,
    output: str | None,
    score: contract.Score | None,
) -> dict[str, Any]:
    """Row ``i``'s record, for a job without result blocks."""
    record: dict[str, Any] = {"t": "row", "i": i, "status": status, "ms": ms}
    if error is not None:
        record["error"] = error
    if output is not None:
        record["output"] = output
    if score is not None:
        record.update(score=score.score, output_type=score.output_type.value)
        record.update(_score_extras(score))
    return record


def into_block(
    block: Block,
    k: int,
    status: str,
    ms: float,
    error: str | None,
    output: str | None,
    score: contract.Score | None,
    emit: Any,
) -> None:
    """Row ``k``'s result straight into the block's columns; what the columns cannot hold
    first to ``emit``, as the row's extras."""
    extras: dict[str, Any] | None = None
    if error is not None or output is not None:
        extras = {}
        if error is not None:
            extras["error"] = error
        if output is not None:
            extras["output"] = output
    if score is None:
        code, kind, value = STATUS_CODE[status], 0, math.nan
    else:
        code, kind, value = _OK_CODE, KIND_OF[score.output_type], float(score.score)
        more = None
        if score.explanation is not None or score.passed is not None or score.metadata:
            more = _score_extras(score)  # most rows have none: no dict made for them
        if kind == _INT_KIND and abs(score.score) > EXACT_FLOAT_INT:
            more = more or {}
            more["score"] = score.score  # exact, beside the column's approximation
        if more:
            extras = more if extras is None else {**extras, **more}
    if extras is not None:
        extras["t"] = "x"
        extras["i"] = k
        emit(extras)
    block.write(k, code, kind, value, ms)


def _score_extras(score: contract.Score) -> dict[str, Any]:
    """What of a score beside its value travels: explanation, pass flag, metadata."""
    extras: dict[str, Any] = {}
    if score.explanation is not None:
        extras["explanation"] = score.explanation
    if score.passed is not None:
        extras["passed"] = score.passed
    metadata = formats.bounded_metadata(score.metadata)
    if metadata:
        extras["metadata"] = metadata
    return extras


def _emit(out_fd: int, record: dict[str, Any]) -> None:
    write_all(out_fd, encode_json(record).encode() + b"\n")


def run_child(
    job: dict[str, Any], start: int, stop: int, out_fd: int, block: Block | None = None
) -> None:
    """Load the check and score the job's rows ``start:stop`` (:func:`load_for`, then
    :func:`serve_rows`)."""
    budget = [int(job["max_output_bytes"])]
    entry = load_for(job, out_fd, budget)
    if entry is not None:
        serve_rows(entry, job, start, stop, out_fd, block, budget)
