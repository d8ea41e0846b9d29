"""The host refuses result records a container may not send (forged or self-contradicting)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.sandbox.docker_backend import _Frames
from engine.sandbox.protocol import ProtocolError, RowRecord, parse_record

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
    frames = _Frames()
    header = bytes([2, 0, 0, 0]) + (50_000_000).to_bytes(4, "big")
    got = list(frames.feed(header + b"x" * 1000))
    assert got == [(2, b"x" * 1000)]  # the cap can count these bytes now
    tail = b"y" * (50_000_000 - 1000)
    assert sum(len(p) for _, p in frames.feed(tail)) == len(tail)
    nxt = bytes([1, 0, 0, 0]) + (3).to_bytes(4, "big") + b"abc"
    assert list(frames.feed(nxt[:5])) == []
    assert list(frames.feed(nxt[5:])) == [(1, b"abc")]
