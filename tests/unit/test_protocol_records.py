"""The host refuses result records a container may not send (forged or self-contradicting)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.models import Row
from engine.sandbox.docker.channel import AttachFrames
from engine.sandbox.protocol import (
    DoneRecord,
    Job,
    ProtocolError,
    RowRecord,
    parse_record,
    parse_records,
)

NONCE = "n" * 32


def line(record: dict[str, Any]) -> bytes:
    return NONCE.encode() + b" " + json.dumps(record).encode()


OK = {"t": "row", "i": 0, "status": "ok", "score": True, "output_type": "bool", "ms": 1.0}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"status": "sandbox_error", "score": None, "output_type": None}, "host's to give"),
        ({"status": "judge_error", "score": None, "output_type": None}, "host's to give"),
        ({"error": "boom"}, "no error"),
        ({"score": None}, "needs a score"),
        ({"status": "error", "error": "x"}, "carries no score"),
        ({"score": 3, "output_type": "bool"}, "not of type bool"),
        ({"score": 1.5, "output_type": "int"}, "not of type int"),
    ],
)
def test_forged_or_inconsistent_rows_are_refused(change: dict[str, Any], why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        parse_record(line({**OK, **change}), NONCE, 1 << 20)


def test_non_finite_score_is_refused() -> None:
    raw = (
        NONCE.encode()
        + b' {"t":"row","i":0,"status":"ok","score":NaN,"output_type":"float","ms":1}'
    )
    with pytest.raises(ProtocolError, match="finite"):
        parse_record(raw, NONCE, 1 << 20)


@pytest.mark.parametrize(
    "record",
    [
        OK,
        {**OK, "score": 0.5, "output_type": "float"},
        {**OK, "score": 3, "output_type": "int"},
        {"t": "row", "i": 0, "status": "error", "error": "ValueError: x", "ms": 1.0},
        {"t": "row", "i": 0, "status": "skipped", "error": "no scenario_input", "ms": 0.0},
        {"t": "row", "i": 0, "status": "timeout", "error": "slow", "ms": 3.0},
    ],
)
def test_honest_rows_are_accepted(record: dict[str, Any]) -> None:
    assert isinstance(parse_record(line(record), NONCE, 1 << 20), RowRecord)


def test_attach_frames_are_handed_on_before_they_are_complete() -> None:
    frames = AttachFrames()
    header = bytes([2, 0, 0, 0]) + (50_000_000).to_bytes(4, "big")
    got = list(frames.feed(header + b"x" * 1000))
    assert got == [(2, b"x" * 1000)]  # the cap can count these bytes now
    tail = b"y" * (50_000_000 - 1000)
    assert sum(len(p) for _, p in frames.feed(tail)) == len(tail)
    nxt = bytes([1, 0, 0, 0]) + (3).to_bytes(4, "big") + b"abc"
    assert list(frames.feed(nxt[:5])) == []
    assert list(frames.feed(nxt[5:])) == [(1, b"abc")]


# -- a read's records are parsed at once --------------------------------------------


def test_a_batch_of_lines_parses_in_order_ignoring_foreign_lines() -> None:
    lines = [
        line(OK),
        b"something the check printed",
        line({**OK, "i": 1, "score": False}),
        line({"t": "done", "rows": 2}),
    ]
    records, error = parse_records(lines, NONCE, 65536)
    assert error is None
    assert [type(r) for r in records] == [RowRecord, RowRecord, DoneRecord]
    assert [r.score for r in records if isinstance(r, RowRecord)] == [True, False]


def test_a_bad_record_keeps_the_ones_before_it_and_names_the_fault() -> None:
    lines = [line(OK), line({**OK, "i": 1, "status": "sandbox_error", "score": None}), line(OK)]
    records, error = parse_records(lines, NONCE, 65536)
    assert len(records) == 1
    assert error is not None and "host's to give" in str(error)


def test_two_records_on_one_line_are_refused_not_split() -> None:
    # Joined into one JSON array, "a, b" on one line would parse as two records.
    body = json.dumps(OK) + ", " + json.dumps({**OK, "i": 1})
    records, error = parse_records([NONCE.encode() + b" " + body.encode()], NONCE, 65536)
    assert records == []
    assert error is not None


def test_an_oversized_line_in_a_batch_is_refused() -> None:
    big = line({**OK, "explanation": "x" * 5000})
    records, error = parse_records([line(OK), big], NONCE, 4096)
    assert len(records) == 1
    assert error is not None and "exceeds 4096" in str(error)


def test_job_rows_go_without_client_ids_and_are_known_by_index() -> None:
    job = Job(
        nonce=NONCE,
        source="def evaluate(model_output):\n    return 1\n",
        row_timeout_seconds=1,
        max_output_bytes=1024,
        rows=[Row(id="secret-id", model_output="a"), Row(id=7, model_output="b")],
    )
    header, _, body = job.encode().partition(b"\n")
    assert int(header) == len(body)
    sent = json.loads(body)
    assert sent["n"] == 2
    assert sent["columns"] == {"model_output": ["a", "b"]}  # as columns, without the ids
    assert sent["source"] == job.source and sent["protocol"] == job.protocol
    assert [r.i for r in job.job_rows()] == [0, 1]
