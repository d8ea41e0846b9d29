"""Result blocks, host side: what a block may say, and everything it may not.

The harness's child writes its rows' results into columns it shares with the harness's
parent, so a check can write anything there; the host is what refuses a forged block
(engine/sandbox/blocks.py). Blocks here are made by the harness's own ``Block``
(:mod:`engine.harness.blocks`, the code that runs in the container), then tampered with.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from engine.contract import CHECK_STATUSES, Status
from engine.harness.blocks import Block
from engine.sandbox.blocks import BlockRecord, duration_fault
from engine.sandbox.protocol import RowRecord, parse_records


def ok(i: int, score: Any, kind: str) -> dict[str, Any]:
    return {"t": "row", "i": i, "status": "ok", "score": score, "output_type": kind, "ms": 0.5}


def failed(i: int, status: str, error: str) -> dict[str, Any]:
    return {"t": "row", "i": i, "status": status, "error": error, "ms": 1.0}


def frame(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The block record the harness's parent would send for ``records`` (as run_row made them)."""
    block = Block(len(records))
    extras: list[list[Any]] = []

    def emit(extra: dict[str, Any]) -> None:
        k = extra.pop("i")
        extra.pop("t")
        extras.append([k, extra])

    for k, record in enumerate(records):
        block.put(k, record, emit)
    out: dict[str, Any] = block.frame(0, 0, len(records), extras)
    block.close()
    return out


def decode(data: dict[str, Any]) -> BlockRecord:
    return BlockRecord.model_validate(data)


def column(data: dict[str, Any], name: str, dtype: Any) -> np.ndarray[Any, Any]:
    return np.frombuffer(base64.b64decode(data[name]), dtype=dtype).copy()


def put(data: dict[str, Any], name: str, values: np.ndarray[Any, Any]) -> dict[str, Any]:
    return {**data, name: base64.b64encode(values.tobytes()).decode()}


MIX = [
    ok(0, True, "bool"),
    ok(1, 7, "int"),
    ok(2, 0.25, "float"),
    failed(3, "error", "ValueError: boom"),
    {**ok(4, False, "bool"), "explanation": "because", "output": "hi\n"},
    failed(5, "skipped", "the row has no scenario_input"),
    ok(6, 2**60 + 1, "int"),
    {**ok(7, 1.0, "float"), "passed": True, "metadata": {"sub": 1}},
]


def test_a_block_carries_every_row_as_it_was() -> None:
    block = decode(frame(MIX)).block
    assert [block.status(k) for k in range(len(MIX))] == [
        Status.OK,
        Status.OK,
        Status.OK,
        Status.ERROR,
        Status.OK,
        Status.SKIPPED,
        Status.OK,
        Status.OK,
    ]
    scores = [block.score(k) for k in range(len(MIX))]
    assert scores == [True, 7, 0.25, None, False, None, 2**60 + 1, 1.0]
    none = type(None)
    assert [type(s) for s in scores] == [bool, int, float, none, bool, none, int, float]
    result = block.row_result(4, "r4", "c", 2)
    assert (result.row_id, result.explanation, result.output) == ("r4", "because", "hi\n")
    assert block.row_result(3, None, None, None).error == "ValueError: boom"
    assert block.row_result(7, None, None, None).metadata == {"sub": 1}
    assert block.row_result(7, None, None, None).passed is True
    assert math.isnan(block.scores[3])


def test_a_block_is_the_rows_records_the_per_row_protocol_would_send() -> None:
    """Block and per-row records agree, field by field, for the same run_row records."""
    block = decode(frame(MIX)).block
    for k, record in enumerate(MIX):
        row = RowRecord.model_validate(record)
        got = block.row_result(k, None, None, None)
        assert got.status is row.status and got.score == row.score
        assert type(got.score) is type(row.score)
        assert (got.error, got.explanation, got.output) == (
            row.error,
            row.explanation,
            row.output,
        )
        assert got.duration_ms == row.ms


@pytest.mark.parametrize("code", [len(CHECK_STATUSES), 7, 200, 255])
def test_a_status_a_check_may_not_report_has_no_code(code: int) -> None:
    data = frame([ok(0, True, "bool"), failed(1, "error", "x")])
    codes = column(data, "codes", np.uint8)
    codes[1] = code
    with pytest.raises(ValidationError, match="not one a check may report"):
        decode(put(data, "codes", codes))


def test_host_statuses_have_no_code_at_all() -> None:
    for status in (Status.TIMEOUT, Status.CRASHED, Status.JUDGE_ERROR, Status.SANDBOX_ERROR):
        assert status not in CHECK_STATUSES


@pytest.mark.parametrize(
    ("name", "dtype", "k", "value", "message"),
    [
        ("kinds", np.uint8, 0, 0, "ok row without a score"),
        ("kinds", np.uint8, 1, 3, "another row with one"),
        ("kinds", np.uint8, 0, 9, "score kind 9 is unknown"),
        ("scores", np.float64, 2, math.nan, "must be finite"),
        ("scores", np.float64, 2, math.inf, "must be finite"),
        ("scores", np.float64, 0, 0.5, "neither 0 nor 1"),
        ("scores", np.float64, 3, 1.5, "not whole"),
        ("ms", np.float64, 0, -1.0, "duration"),
        ("ms", np.float64, 0, math.nan, "duration"),
        ("scores", np.float64, 3, 1e300, "past 64 bits"),  # a 301-digit int once got through
        ("scores", np.float64, 3, -1e300, "past 64 bits"),
        ("scores", np.float64, 3, 2.0**64, "past 64 bits"),
        ("scores", np.float64, 3, 2.0**60, "without its exact value"),
    ],
)
def test_a_forged_column_is_refused(
    name: str, dtype: Any, k: int, value: float, message: str
) -> None:
    data = frame(
        [ok(0, True, "bool"), failed(1, "error", "x"), ok(2, 0.5, "float"), ok(3, 3, "int")],
    )
    values = column(data, name, dtype)
    values[k] = value
    with pytest.raises(ValidationError, match=message):
        decode(put(data, name, values))


def test_forged_extras_are_refused() -> None:
    data = frame([ok(0, True, "bool"), failed(1, "error", "x"), ok(2, 3, "int")])
    for extras, message in [
        ([], "without an error"),  # the error row lost its error
        ([[1, {"error": "x"}], [1, {"error": "y"}]], "extras for row 1"),
        ([[1, {"error": "x"}], [5, {"error": "y"}]], "extras for row 5"),
        ([[0, {"error": "x"}], [1, {"error": "x"}]], "an ok row with an error"),
        ([[1, {"error": "x", "passed": True}]], "with a score, or no error"),
        ([[0, {"score": 2**70}], [1, {"error": "x"}]], "exact score"),
        ([[1, {"error": "x"}], [2, {"score": 2**60}]], "exact score"),  # the column says 3
        ([[1, {"error": "x", "status": "sandbox_error"}]], "Extra inputs"),
    ]:
        with pytest.raises(ValidationError, match=message):
            decode({**data, "extras": extras})


def test_a_column_of_the_wrong_length_or_encoding_is_refused() -> None:
    data = frame([ok(0, True, "bool"), ok(1, False, "bool")])
    with pytest.raises(ValidationError, match="holds 1 bytes for 2 rows"):
        decode({**data, "codes": base64.b64encode(b"\0").decode()})
    with pytest.raises(ValidationError, match="not base64"):
        decode({**data, "kinds": "***"})
    with pytest.raises(ValidationError):
        decode({**data, "n": 0})


def test_blocks_and_rows_share_the_stream() -> None:
    nonce = "n0nce"
    block = frame([ok(0, True, "bool"), ok(1, 2, "int")])
    block["i"] = 3
    lines = [
        f"{nonce} {json.dumps(failed(2, 'timeout', 'evaluate ran longer than 1 s'))}".encode(),
        f"{nonce} {json.dumps(block)}".encode(),
        b"noise without the nonce",
    ]
    records, error = parse_records(lines, nonce, 64 * 1024)
    assert error is None
    assert isinstance(records[0], RowRecord) and records[0].status is Status.TIMEOUT
    assert isinstance(records[1], BlockRecord) and (records[1].i, records[1].n) == (3, 2)
    assert records[1].block.score(1) == 2


def test_ints_at_the_edges_of_64_bits_pass_exactly() -> None:
    edges = [2**63 - 1, -(2**63), 2**53 + 1, -(2**53) - 1, 2**53]
    block = decode(frame([ok(k, v, "int") for k, v in enumerate(edges)])).block
    assert [block.score(k) for k in range(len(edges))] == edges


def test_a_duration_longer_than_the_job_is_a_fault() -> None:
    data = frame([ok(0, True, "bool"), ok(1, 2, "int")])
    ms = column(data, "ms", np.float64)
    ms[1] = 1.7e308  # finite and not negative: only the job's wall time tells it is forged
    block = decode(put(data, "ms", ms)).block
    fault = duration_fault(block.ms, wall_seconds=20.0)
    assert fault is not None
    assert "longer than the job's wall time (20 s)" in fault
    assert duration_fault(np.array([0.5, 20_000.0]), wall_seconds=20.0) is None
    assert duration_fault(20_000.5, wall_seconds=20.0) is not None


@pytest.mark.parametrize(
    "kinds",
    [[1, 1, 1], [3, 3], [0, 0], [2, 2], [1, 3, 0, 2], []],
)
def test_a_blocks_python_scores_are_each_rows_in_one_call_or_a_row_at_a_time(
    kinds: list[int],
) -> None:
    from engine.sandbox.blocks import _python_scores, python_score

    values = [1.0, 0.0, 0.5, 3.0][: len(kinds)] if kinds else []
    if kinds == [0, 0]:
        values = [math.nan, math.nan]
    k = np.array(kinds, dtype=np.uint8)
    v = np.array(values, dtype=np.float64)
    got = _python_scores(k, v)
    want = [python_score(a, b) for a, b in zip(kinds, values, strict=True)]
    assert [(type(x), x) for x in got] == [(type(x), x) for x in want]
