"""engine.logs: one line format (text or JSON) with request, tenant and run; one warning
per interval for a failure that repeats on every tick."""

from __future__ import annotations

import json
import logging
import re

import pytest

from engine import logs


def _record(message: str = "hello", exc: BaseException | None = None) -> logging.LogRecord:
    record = logging.LogRecord("scorebox.x", logging.WARNING, __file__, 1, message, (), None)
    if exc is not None:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    logs.ContextFilter().filter(record)
    return record


def test_a_text_line_has_time_level_logger_request_tenant_and_run() -> None:
    with logs.bound(request_id="r-1", tenant="t_9"), logs.bound(run="run_3"):
        line = logs.TextFormatter().format(_record())
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING scorebox\.x "
        r"req=r-1 tenant=t_9 run=run_3 hello",
        line,
    ), line
    outside = logs.TextFormatter().format(_record())
    assert " req=- tenant=- run=- hello" in outside  # bound() restored what was before


def test_json_lines_carry_the_same_fields() -> None:
    try:
        raise ValueError("boom")
    except ValueError as exc:
        caught = exc
    with logs.bound(request_id="r-2", tenant="t_1"):
        data = json.loads(logs.JsonFormatter().format(_record("m", caught)))
    assert {k: data[k] for k in ("level", "logger", "message", "request_id", "tenant", "run")} == {
        "level": "WARNING",
        "logger": "scorebox.x",
        "message": "m",
        "request_id": "r-2",
        "tenant": "t_1",
        "run": None,
    }
    assert data["time"].endswith("Z")
    assert "ValueError: boom" in data["exception"]


def test_annotate_reaches_every_copy_of_the_request_context() -> None:
    # a sync dependency resolves the tenant in a worker thread (a copied context)
    import contextvars

    with logs.bound(request_id="r-3"):
        contextvars.copy_context().run(logs.annotate, tenant="t_5")
        assert logs.current() == {"request_id": "r-3", "tenant": "t_5"}


def test_a_request_id_from_a_header_cannot_forge_a_field() -> None:
    with logs.bound(request_id="x tenant=admin\nFAKE"):
        line = logs.TextFormatter().format(_record())
    assert "\n" not in line and " tenant=admin" not in line


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_repeated_failure_is_one_warning_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    repeated = logs.Repeated(logging.getLogger("scorebox.t"), "dispatch pass", 60, clock)
    caplog.set_level(logging.WARNING, "scorebox.t")
    for _ in range(240):  # two minutes of failures every 0.5 s
        repeated.failed(ConnectionError("server closed the connection\nmore detail"))
        clock.now += 0.5
    repeated.ok()
    repeated.ok()  # said once
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "dispatch pass failed: ConnectionError: server closed the connection; retrying every "
        "tick, next warning in 60 s at the earliest",
        "dispatch pass failed: ConnectionError: server closed the connection (119 more "
        "failures since the last warning); retrying every tick, next warning in 60 s at the "
        "earliest",
        "dispatch pass works again after 240 failures",
    ]
    assert not any(r.exc_info for r in caplog.records)  # tracebacks only at DEBUG


def test_configure_logging_writes_one_line_to_the_current_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import sys

    root = logging.getLogger()
    level = root.level
    try:
        logs.configure_logging("WARNING", "json")
        logs.configure_logging("WARNING", "json")  # again: replaces, does not double
        out = io.StringIO()
        monkeypatch.setattr(sys, "stderr", out)  # swapped after the handler was made
        logging.getLogger("scorebox.cfg").warning("once")
        logging.getLogger("scorebox.cfg").info("below the handler's level")
        (line,) = out.getvalue().splitlines()
        assert json.loads(line)["message"] == "once"
        assert root.level <= level or level == logging.NOTSET  # never raised
    finally:
        for handler in list(logs._installed):
            root.removeHandler(handler)
        logs._installed.clear()
        root.setLevel(level)


def test_a_field_annotated_outside_a_request_stays_off_later_lines() -> None:
    logs.annotate(tenant="t_outside")  # a key resolved outside any request or chunk
    assert " tenant=- " in logs.TextFormatter().format(_record())
    with logs.bound(request_id="r-4"):
        logs.annotate(tenant="t_inside")
        assert " tenant=t_inside " in logs.TextFormatter().format(_record())
    assert " tenant=- " in logs.TextFormatter().format(_record())
