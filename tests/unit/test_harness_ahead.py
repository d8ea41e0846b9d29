"""Fork-ahead without Docker: the child forked before its job serves it, or is killed.

As in test_harness_job.py, the harness's parent is this test's process and its children
are forked from it (off a container's PID 1 the reset touches nothing).
"""

from __future__ import annotations

import json
import os
import select
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.contract import Status
from engine.harness.ahead import (
    AHEAD_MAX_ROWS,
    BACK_TO_BACK_SECONDS,
    Spare,
    fits,
    sendable,
    template_of,
    worth_forking,
)
from engine.harness.channel import Reader, read_job
from engine.harness.gateway import Gateway
from engine.harness.supervise import JobRun
from engine.models import Row
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord, parse_records

#: Each row's score is how many rows its process scored, times a million, plus its pid.
COUNTING = (
    "import os\n"
    "SCORED = []\n"
    "def evaluate(model_output):\n"
    "    SCORED.append(model_output)\n"
    "    return len(SCORED) * 1_000_000 + os.getpid()\n"
)


def job_of(source: str, n: int, *, blocks: bool = True, **extra: Any) -> dict[str, Any]:
    """A job as the harness reads it (encoded by the host, read by ``read_job``)."""
    fields: dict[str, Any] = {"row_timeout_seconds": 5.0, "max_output_bytes": 4096, **extra}
    encoded = Job(
        nonce="n0nce",
        source=source,
        result_blocks=blocks,
        rows=[Row(model_output=str(i)) for i in range(n)],
        **fields,
    ).encode()
    with tempfile.TemporaryFile() as stdin:  # a pipe would block past 64 KiB
        stdin.write(encoded)
        stdin.seek(0)
        document = read_job(Reader(stdin.fileno()), idle_exit=5.0)
    assert document is not None
    return document


def serve(job: dict[str, Any], spare: Spare | None = None) -> list[tuple[Status, Any]]:
    """Run ``job`` as the harness's parent does: (status, score) of each row."""
    result_read, result_write = os.pipe()
    JobRun(job, result_write, Gateway(), spare=spare).run()
    os.close(result_write)
    data = b""
    while chunk := os.read(result_read, 1 << 16):
        data += chunk
    os.close(result_read)
    records, error = parse_records(data.splitlines(), "n0nce", 64 * 1024)
    assert error is None
    assert isinstance(records[0], LoadedRecord) and records[0].ok, records[0]
    out: list[tuple[Status, Any]] = []
    for record in records[1:-1]:
        if isinstance(record, BlockRecord):
            out += [(record.block.status(k), record.block.score(k)) for k in range(record.n)]
        else:
            assert isinstance(record, RowRecord)
            out.append((record.status, record.score))
    return out


def loaded(spare: Spare, seconds: float = 10.0) -> None:
    """Wait, as the idle parent does, until the spare's load record is in."""
    deadline = time.monotonic() + seconds
    while spare.wake() is not None:
        assert time.monotonic() < deadline, "the spare never loaded"
        time.sleep(0.01)
    assert not spare.gone


@pytest.fixture
def devnull() -> Iterator[int]:
    """The spare's result channel: a child never writes there (it closes it first)."""
    fd = os.open(os.devnull, os.O_WRONLY)
    yield fd
    os.close(fd)


def reaped(pid: int) -> bool:
    """Whether ``pid`` is gone and reaped (no zombie of it waits)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("blocks", [True, False], ids=["blocks", "rows"])
def test_a_spare_serves_the_next_job_with_nothing_of_the_last(blocks: bool, devnull: int) -> None:
    first = job_of(COUNTING, 3, blocks=blocks)
    results = serve(first)
    assert [(status, score // 1_000_000) for status, score in results] == [
        (Status.OK, k) for k in (1, 2, 3)
    ]
    template = template_of(first)
    assert set(template) == {
        "source",
        "policy",
        "entry",
        "okareo",
        "max_output_bytes",
        "max_row_output_chars",
        "load_timeout_seconds",
    }  # none of the last job's rows, nor its nonce
    spare = Spare.fork(template, devnull, Gateway())
    loaded(spare)
    second = serve(job_of(COUNTING, 2, blocks=blocks), spare)
    # The spare's process scored job 2, from a fresh module: its global counts from 1.
    assert second == [
        (Status.OK, 1_000_000 + spare.forked.pid),
        (Status.OK, 2_000_000 + spare.forked.pid),
    ]
    assert reaped(spare.forked.pid)


@pytest.mark.parametrize(
    "job",
    [
        job_of(COUNTING.replace("os.getpid()", "os.getpid() + 0"), 1),  # another check
        job_of(COUNTING, AHEAD_MAX_ROWS + 1),  # more rows than its block holds
        job_of(COUNTING, 1, max_output_bytes=8192),  # another output budget (load's too)
    ],
    ids=["another-check", "too-many-rows", "other-limits"],
)
def test_a_spare_that_cannot_serve_the_job_is_killed_and_a_child_forked(
    job: dict[str, Any], devnull: int
) -> None:
    spare = Spare.fork(template_of(job_of(COUNTING, 1)), devnull, Gateway())
    loaded(spare)
    results = serve(job, spare)
    assert spare.gone
    assert reaped(spare.forked.pid)
    assert {status for status, _ in results} == {Status.OK}
    assert all(score % 1_000_000 != spare.forked.pid for _, score in results)


def test_an_unused_spare_is_killed(devnull: int) -> None:
    spare = Spare.fork(template_of(job_of(COUNTING, 1)), devnull, Gateway())
    loaded(spare)
    assert not reaped(spare.forked.pid)  # alive, waiting for its job
    spare.discard()  # stdin closed, or the container retires
    assert reaped(spare.forked.pid)


def test_a_spare_whose_load_outlives_the_load_bound_is_killed_while_idle(devnull: int) -> None:
    job = job_of("while True:\n    pass\ndef evaluate(model_output):\n    return 1\n", 1)
    job["load_timeout_seconds"] = 0.3
    spare = Spare.fork(template_of(job), devnull, Gateway())
    wake_at = spare.wake()
    assert wake_at is not None and wake_at <= time.monotonic() + 0.3
    time.sleep(0.4)
    assert spare.wake() is None
    assert spare.gone
    assert reaped(spare.forked.pid)


@pytest.fixture
def quiet_stdin() -> Iterator[tuple[Reader, int]]:
    """The harness's stdin as a pipe no job has come down yet (and its write end)."""
    read_fd, write_fd = os.pipe()
    yield Reader(read_fd), write_fd
    os.close(read_fd)
    os.close(write_fd)


def test_a_child_is_forked_ahead_when_the_host_leaves_the_container_idle(
    quiet_stdin: tuple[Reader, int],
) -> None:
    stdin, _ = quiet_stdin
    assert worth_forking(job_of(COUNTING, 3), stdin)


def test_no_child_is_forked_ahead_of_a_job_sent_back_to_back(
    quiet_stdin: tuple[Reader, int],
) -> None:
    # The next job's first bytes are there at once: a child forked for it serves it, and
    # a fork ahead would only hold the parent while the job waits.
    stdin, write_fd = quiet_stdin
    os.write(write_fd, b"123\n")
    assert not worth_forking(job_of(COUNTING, 3), stdin)
    stdin.fill(0)  # read already, as a partial job: the same
    assert stdin.buffer
    assert not worth_forking(job_of(COUNTING, 3), stdin)


def test_the_wait_for_a_job_sent_back_to_back_counts_from_the_done(
    quiet_stdin: tuple[Reader, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reset after the done took its part of the window: only the rest is waited.
    stdin, _ = quiet_stdin
    job = job_of(COUNTING, 3)
    waits: list[float] = []
    real_select = select.select

    def recording(r: list[int], w: list[int], x: list[int], timeout: float) -> Any:
        waits.append(timeout)
        return real_select(r, w, x, timeout)

    monkeypatch.setattr(select, "select", recording)
    now = time.monotonic()
    assert worth_forking(job, stdin, now - 10 * BACK_TO_BACK_SECONDS)
    assert worth_forking(job, stdin, now + 60.0)  # (a clock far ahead)
    assert worth_forking(job, stdin)
    assert waits == [0.0, BACK_TO_BACK_SECONDS, BACK_TO_BACK_SECONDS]


@pytest.mark.parametrize(
    ("rows", "extra", "sent"),
    [
        (3, {}, True),
        (AHEAD_MAX_ROWS, {}, True),
        (AHEAD_MAX_ROWS + 1, {}, False),
        (1, {"config": {"padding": "x" * 40_000}}, False),  # past the pipe's one write
    ],
    ids=["small", "most-rows", "too-many-rows", "too-many-bytes"],
)
def test_one_rule_says_what_a_child_forked_ahead_can_be_sent(
    rows: int, extra: dict[str, Any], sent: bool
) -> None:
    job = job_of(COUNTING, rows, **extra)
    data = sendable(job)
    assert fits(job) is sent
    assert (data is not None) is sent
    if data is not None:  # the job without its source and nonce, as the child reads it
        assert json.loads(data) == {k: v for k, v in job.items() if k not in ("source", "nonce")}
    result_read, result_write = os.pipe()
    spare = Spare.fork(template_of(job), result_write, Gateway())
    try:
        assert spare.payload(job) == data  # the spare asks the same rule
    finally:
        spare.discard()
        os.close(result_read)
        os.close(result_write)


def test_no_child_is_forked_ahead_in_a_container_the_host_discards(
    quiet_stdin: tuple[Reader, int],
) -> None:
    stdin, _ = quiet_stdin
    assert not worth_forking(job_of(COUNTING, 1, fork_ahead=False), stdin)


@pytest.mark.parametrize(
    "job",
    [
        job_of(COUNTING, AHEAD_MAX_ROWS + 1),
        job_of(COUNTING, 1, config={"padding": "x" * 40_000}),  # past the pipe's one write
    ],
    ids=["too-many-rows", "too-many-bytes"],
)
def test_no_child_is_forked_ahead_of_a_job_like_one_it_could_not_serve(
    job: dict[str, Any], quiet_stdin: tuple[Reader, int]
) -> None:
    # The next job of a check is most likely like the last: a child forked ahead that could
    # not have served this one would be killed unused.
    stdin, _ = quiet_stdin
    assert not worth_forking(job, stdin)
