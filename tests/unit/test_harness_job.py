"""The harness's pieces without Docker: a job the host encodes is the job the harness reads,
and what the harness's parent writes back is what the host parses.

The harness runs here in the test's own process (its children are forked from it), never
as ``python -m engine.harness``: off a container's PID 1, its reset between jobs must
touch nothing, which the last test holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.contract import PROTOCOL_VERSION, Status
from engine.harness import reset as reset_module
from engine.harness.channel import Channel, Reader, read_job
from engine.harness.gateway import Gateway
from engine.harness.supervise import JobRun
from engine.models import Row
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.protocol import DoneRecord, Job, LoadedRecord, RowRecord, parse_records

SOURCE = textwrap.dedent(
    """
    def evaluate(model_output, scenario_input):
        if model_output == "boom":
            raise ValueError("no")
        return len(model_output)
    """
)


def job(*, blocks: bool) -> Job:
    rows = [
        Row(model_output="abc", scenario_input="q"),
        Row(model_output="boom", scenario_input="q"),
        Row(model_output="abcdef"),  # no scenario_input: skipped
    ]
    return Job(
        nonce="n0nce",
        source=SOURCE,
        row_timeout_seconds=5.0,
        max_output_bytes=4096,
        result_blocks=blocks,
        rows=rows,
    )


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):  # a test may have closed it
            os.close(fd)


def read_all(fd: int) -> bytes:
    out = b""
    while chunk := os.read(fd, 1 << 16):
        out += chunk
    return out


def test_the_harness_reads_the_job_the_host_encodes(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    os.write(write_fd, job(blocks=True).encode())
    os.close(write_fd)
    document = read_job(Reader(read_fd), idle_exit=5.0)
    assert document is not None
    assert document["protocol"] == PROTOCOL_VERSION
    assert document["nonce"] == "n0nce"
    assert document["n"] == 3  # a row's index in the columns is its records' "i"
    assert document["columns"] == {
        "model_output": ["abc", "boom", "abcdef"],
        "scenario_input": ["q", "q", None],
    }
    assert read_job(Reader(read_fd), idle_exit=0.1) is None  # stdin closed: no more jobs


def test_a_job_of_another_protocol_is_refused(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    body = b'{"protocol": 2, "rows": []}'
    os.write(write_fd, str(len(body)).encode() + b"\n" + body)
    with pytest.raises(ValueError, match="protocol 2 != "):
        read_job(Reader(read_fd), idle_exit=5.0)


@pytest.mark.parametrize(
    "columns",
    [{"model_output": ["a"]}, {"model_output": "ab"}, {"colour": ["a", "b"]}],
    ids=["short", "not-a-list", "unknown"],
)
def test_columns_that_do_not_hold_the_jobs_rows_are_refused(
    pipe: tuple[int, int], columns: dict[str, Any]
) -> None:
    read_fd, write_fd = pipe
    body = json.dumps({"protocol": PROTOCOL_VERSION, "n": 2, "columns": columns}).encode()
    os.write(write_fd, str(len(body)).encode() + b"\n" + body)
    with pytest.raises(ValueError, match="column"):
        read_job(Reader(read_fd), idle_exit=5.0)


def test_records_are_nonce_framed_lines() -> None:
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd, "abc")
    channel.send({"t": "done", "rows": 0, "reusable": True})
    channel.relay(b'{"t":"row"}')
    assert channel.due_in() is not None  # queued, not yet written
    channel.flush()
    os.close(write_fd)
    assert read_all(read_fd) == (
        b'abc {"t": "done", "rows": 0, "reusable": true}\nabc {"t":"row"}\n'
    )
    os.close(read_fd)


@pytest.mark.parametrize("blocks", [True, False], ids=["blocks", "rows"])
def test_the_host_parses_what_the_parent_sends(blocks: bool) -> None:
    encoded = job(blocks=blocks).encode()
    stdin_read, stdin_write = os.pipe()
    os.write(stdin_write, encoded)
    os.close(stdin_write)
    result_read, result_write = os.pipe()
    document = read_job(Reader(stdin_read), idle_exit=5.0)
    assert document is not None
    JobRun(document, result_write, Gateway()).run()
    os.close(result_write)
    lines = read_all(result_read).splitlines()
    os.close(result_read)
    os.close(stdin_read)
    assert all(line.startswith(b"n0nce ") for line in lines)
    records, error = parse_records(lines, "n0nce", 64 * 1024)
    assert error is None
    loaded, *results, done = records
    assert isinstance(loaded, LoadedRecord) and loaded.ok
    statuses: list[Status] = []
    scores: list[Any] = []
    for record in results:
        if isinstance(record, BlockRecord):
            statuses += [record.block.status(k) for k in range(record.n)]
            scores += [record.block.score(k) for k in range(record.n)]
        else:
            assert isinstance(record, RowRecord)
            statuses.append(record.status)
            scores.append(record.score)
    assert all(isinstance(r, BlockRecord if blocks else RowRecord) for r in results)
    assert statuses == [Status.OK, Status.ERROR, Status.SKIPPED]
    assert scores[0] == 3
    assert isinstance(done, DoneRecord)
    assert done.rows == 3
    assert done.reusable is False  # off a container's PID 1 nothing is cleaned, so no reuse


def test_off_pid_1_reset_kills_nothing_and_empties_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append((pid, sig)))
    monkeypatch.setattr(reset_module, "SCRATCH_DIRS", (str(tmp_path),))
    monkeypatch.setattr(reset_module, "RESET_SECONDS", 0.05)
    (tmp_path / "kept").write_text("x")
    assert not reset_module.owns_namespace()
    assert reset_module.reset() is False
    assert killed == []
    assert (tmp_path / "kept").read_text() == "x"
