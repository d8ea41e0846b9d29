"""One log format on every node (``scorebox serve``, ``scorebox worker``, the CLI).

Each line carries the time (UTC), the level, the logger, and what it was about: the
request id, the tenant and the run, from context variables that the API's
:class:`RequestContext` middleware, the key lookup and the run/chunk code set::

    2026-11-26T09:12:03.418Z WARNING scorebox.dispatch req=- tenant=acme run=r_5x1 message

``SCOREBOX_LOG_FORMAT=json`` writes one JSON object a line instead, with the same fields
(``time``, ``level``, ``logger``, ``message``, ``request_id``, ``tenant``, ``run``, and
``exception`` when there is one).

A failure that repeats on every tick of a loop (a dispatch pass while PostgreSQL is
down) is logged through :class:`Repeated`: one warning per interval, saying how many
times it failed meanwhile, with no traceback (at DEBUG each failure keeps its own).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["text", "json"]

#: The fields a line carries besides time, level, logger and message.
FIELDS = ("request_id", "tenant", "run")
_SHORT = {"request_id": "req", "tenant": "tenant", "run": "run"}

#: A mutable holder, so a value set in a worker thread (a sync dependency resolving the
#: tenant) is seen by the rest of the request: every copy of the context shares the dict.
_context: ContextVar[dict[str, str] | None] = ContextVar("scorebox_log_context", default=None)


def current() -> dict[str, str]:
    """The fields set for what is running now (a copy)."""
    return dict(_context.get() or {})


def annotate(**fields: str | None) -> None:
    """Add fields to the current request's or chunk's context (None values are skipped).

    Outside :func:`bound` (no request or chunk) it does nothing: a field set there would
    stay on every later line of the thread (a key resolved by a CLI command or a test).
    """
    holder = _context.get()
    if holder is None:
        return
    holder.update({k: str(v) for k, v in fields.items() if v is not None})


@contextmanager
def bound(**fields: str | None) -> Iterator[None]:
    """A new context for the block: the current fields plus ``fields``, restored after."""
    holder = {**(_context.get() or {}), **{k: str(v) for k, v in fields.items() if v}}
    token = _context.set(holder)
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Copies the context fields onto every record (``-`` when unset)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _context.get() or {}
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, fields.get(name, "-"))
        return True


def _time(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


#: what a field's value may hold in a text line (a request id comes from a header)
_UNSAFE = re.compile(r"[^A-Za-z0-9._:@/+-]")


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER req=… tenant=… run=… message``, tracebacks indented below."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(
            f"{_SHORT[name]}={_UNSAFE.sub('_', str(getattr(record, name, '-')))[:64]}"
            for name in FIELDS
        )
        line = f"{_time(record)} {record.levelname} {record.name} {fields} {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, "-")
            data[name] = None if value == "-" else value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler writing to whatever ``sys.stderr`` is when a record comes (a CLI
    run under a test runner swaps it, and closes the one it swapped in)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


#: what configure_logging installed, so a second call replaces it rather than doubling lines
_installed: list[logging.Handler] = []


#: the interval of a Repeated made without one (module-level ones, as in engine.storage)
_repeat_seconds = [60.0]


def configure_logging(
    level: str | int = "INFO", fmt: LogFormat = "text", repeat_seconds: float | None = None
) -> None:
    """Send every logger's records (uvicorn's and Celery's too) to stderr in one format;
    ``repeat_seconds`` is the default interval of :class:`Repeated`."""
    if repeat_seconds is not None:
        _repeat_seconds[0] = repeat_seconds
    root = logging.getLogger()
    for installed in _installed:
        root.removeHandler(installed)
    _installed.clear()
    handler = _Stderr()
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    wanted = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    handler.setLevel(wanted)
    root.addHandler(handler)
    _installed.append(handler)
    # lower the root's level when asked for more, never raise it (another handler, such as
    # a test's capture, may want what is below this one's level)
    if root.level == logging.NOTSET or root.level > wanted:
        root.setLevel(wanted)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn's own handlers (when it configured them) would print a second, other line
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True


class Repeated:
    """One warning per ``interval_seconds`` for a failure that repeats on every tick.

    The first failure is logged at once; later ones within the interval are counted and
    the next warning says how many there were. Tracebacks go to DEBUG only. ``ok()``
    after a failure logs once that it works again.
    """

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        interval_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.what = what
        self._interval = interval_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._last = 0.0
        self._since_last = 0
        self._failures = 0

    @property
    def interval_seconds(self) -> float:
        """The given interval, else SCOREBOX_LOG_REPEAT_SECONDS as the node configured it."""
        return self._interval if self._interval is not None else _repeat_seconds[0]

    def failed(self, exc: BaseException) -> None:
        """Count a failure; log it when the interval has passed since the last warning."""
        self.log.debug("%s failed", self.what, exc_info=exc)
        now = self._clock()
        with self._lock:
            self._failures += 1
            self._since_last += 1
            if self._last and now - self._last < self.interval_seconds:
                return
            repeats, self._since_last, self._last = self._since_last - 1, 0, now
        more = f" ({repeats} more failures since the last warning)" if repeats else ""
        self.log.warning(
            "%s failed: %s: %s%s; retrying every tick, next warning in %.0f s at the earliest",
            self.what,
            exc.__class__.__name__,
            _one_line(exc),
            more,
            self.interval_seconds,
        )

    def ok(self) -> None:
        """The operation worked: after failures, say so once."""
        with self._lock:
            failures, self._failures, self._since_last, self._last = self._failures, 0, 0, 0.0
        if failures:
            self.log.warning("%s works again after %d failures", self.what, failures)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def env_log_format() -> LogFormat:
    """``SCOREBOX_LOG_FORMAT`` read before any Settings exist (the CLI's entry point)."""
    return "json" if os.environ.get("SCOREBOX_LOG_FORMAT", "").strip().lower() == "json" else "text"
