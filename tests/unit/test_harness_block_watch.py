"""The harness's parent watching a block-mode child, step by step, without forking one.

The child's side is played by the test: it writes to the record pipe and fills the shared
block at chosen moments, and each of the parent's looks (``BlockWatch.take``) comes after
the step scripted for it, so the interleaving a real child hits only by chance is certain.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.harness import supervise
from engine.harness.blocks import Block, BlockWatch
from engine.harness.channel import Reader, read_job
from engine.harness.gateway import Gateway
from engine.harness.supervise import JobRun
from engine.models import Row
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.protocol import Job, LoadedRecord, parse_records

OK_ROW = {"status": "ok", "score": 1, "output_type": "int", "ms": 0.1}


def job_of(n: int) -> dict[str, Any]:
    """A block-mode job of ``n`` rows as the harness reads it."""
    encoded = Job(
        nonce="n0nce",
        source="def evaluate(model_output):\n    return 1\n",
        row_timeout_seconds=5.0,
        max_output_bytes=4096,
        rows=[Row(model_output=str(i)) for i in range(n)],
    ).encode()
    with tempfile.TemporaryFile() as stdin:
        stdin.write(encoded)
        stdin.seek(0)
        document = read_job(Reader(stdin.fileno()), idle_exit=5.0)
    assert document is not None
    return document


@pytest.fixture
def pipes() -> Iterator[list[int]]:
    """The child's record pipe, its output pipe, the parent's result channel (read, write
    of each)."""
    fds: list[int] = []
    for _ in range(3):
        fds += os.pipe()
    yield fds
    for fd in fds:
        with contextlib.suppress(OSError):  # a test may have closed it
            os.close(fd)


def watch_scripted(
    monkeypatch: pytest.MonkeyPatch,
    steps: list[Callable[[], object]],
    run: JobRun,
    block: Block,
    fds: list[int],
) -> tuple[tuple[str, str] | None, bool]:
    """Run the parent's watch of a block-mode child whose every move is one of ``steps``,
    made just before the parent's next look."""
    records_read, _, out_read, _, _, _ = fds
    script = iter(steps)
    take = BlockWatch.take

    def scripted(watch: BlockWatch) -> bool:
        step = next(script, None)
        if step is not None:
            step()
        return take(watch)

    monkeypatch.setattr(BlockWatch, "take", scripted)
    # Finished rows travel at the first look that sees them (no 5 ms to wait out).
    monkeypatch.setattr(supervise, "BLOCK_FLUSH_SECONDS", 0.0)
    try:
        return run.watch_block(Reader(records_read), Reader(out_read), os.getpid(), block)
    finally:
        block.close()


def sent_rows(run: JobRun, result_read: int, result_write: int) -> list[int]:
    """The job's rows the parent sent to the host in blocks, by index."""
    run.channel.flush()
    os.close(result_write)
    data = b""
    while chunk := os.read(result_read, 1 << 16):
        data += chunk
    records, error = parse_records(data.splitlines(), "n0nce", 64 * 1024)
    assert error is None
    assert isinstance(records[0], LoadedRecord)
    rows: list[int] = []
    for record in records[1:]:
        assert isinstance(record, BlockRecord)
        rows += range(record.i, record.i + record.n)
    return rows


def test_a_malformed_line_is_blamed_on_the_row_counted_while_it_was_partial(
    monkeypatch: pytest.MonkeyPatch, pipes: list[int]
) -> None:
    _, records_write, _, _, result_read, result_write = pipes
    run = JobRun(job_of(2), result_write, Gateway())
    block = Block(2)

    def write(data: bytes) -> None:
        os.write(records_write, data)

    def put(k: int) -> None:
        block.put(k, dict(OK_ROW), lambda record: None)

    def row_0() -> None:
        # Row 0's check writes part of a line to its own pipe and returns: row 0 finishes
        # while that part waits for the rest.
        write(b'{"t":"row","i":')
        put(0)

    def row_1() -> None:
        # Row 1 finishes and the child ends: its end record completes the line, malformed.
        put(1)
        write(b'{"t":"end"}\n')

    steps: list[Callable[[], object]] = [
        lambda: write(b'{"t":"loaded","ok":true,"parameters":["model_output"]}\n'),
        row_0,
        lambda: None,  # the parent looks again: row 0 is counted, the line still partial
        row_1,
    ]
    fault, finished = watch_scripted(monkeypatch, steps, run, block, pipes)

    assert (fault, finished) == (None, False)
    # Row 0 is not reported ok: it runs again alone, first of the rows suspected.
    assert sent_rows(run, result_read, result_write) == []
    assert run.retry
    assert (run.pos, run.suspect_end) == (0, 2)


def test_rows_counted_while_a_good_line_was_partial_are_sent_once_it_is_whole(
    monkeypatch: pytest.MonkeyPatch, pipes: list[int]
) -> None:
    _, records_write, _, _, result_read, result_write = pipes
    run = JobRun(job_of(3), result_write, Gateway())
    block = Block(3)
    extras = b'{"output":"' + b"x" * 100 + b'","t":"x","i":1}\n'

    def write(data: bytes) -> None:
        os.write(records_write, data)

    def put(k: int) -> None:
        block.put(k, dict(OK_ROW), lambda record: None)

    def row_0() -> None:
        # Row 0 is done; row 1's extras (what it printed) are half written.
        put(0)
        write(extras[:50])

    def row_2() -> None:
        put(2)
        write(b'{"t":"end"}\n')

    steps: list[Callable[[], object]] = [
        lambda: write(b'{"t":"loaded","ok":true,"parameters":["model_output"]}\n'),
        row_0,
        lambda: None,
        lambda: write(extras[50:]),  # whole: row 0 may go, and row 1 after its count
        lambda: put(1),
        row_2,
    ]
    fault, finished = watch_scripted(monkeypatch, steps, run, block, pipes)

    assert (fault, finished) == (None, True)
    assert sent_rows(run, result_read, result_write) == [0, 1, 2]
    assert not run.retry
