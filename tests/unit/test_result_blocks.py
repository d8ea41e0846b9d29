"""A check's results packed into one stored block and read back: every score kind, status,
extra and row layout survives the round trip, and broken blocks are refused."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import StorageError
from engine.storage.result_blocks import (
    EMPTY,
    KIND_BOOL,
    KIND_FLOAT,
    KIND_INT,
    KIND_NONE,
    concat,
    decode_block,
    encode_block,
)
from tests.hypothesis_budget import examples

STATUSES = ["ok", "error", "timeout", "crashed", "invalid_score", "skipped"]


def test_round_trip_of_every_score_kind_and_extra() -> None:
    big = 2**62 + 1  # not exact as a float64
    data = encode_block(
        [3, 4, 5, 6, 7],
        ["ok", "ok", "error", "ok", "ok"],
        [True, 7, None, 0.25, big],
        [1.5, 2.0, 0.0, 3.25, 1.0],
        {
            1: {"explanation": "why\x00not", "passed": False, "metadata": {"a": [1, 2]}},
            2: {"error": "Traceback ...", "output": "printed", "model": "m" * 300},
            3: {"explanation": None, "metadata": None},
        },
    )
    got = decode_block(data)
    assert got.row_index.tolist() == [3, 4, 5, 6, 7]
    assert [got.status_at(k) for k in range(5)] == ["ok", "ok", "error", "ok", "ok"]
    assert [got.score_at(k) for k in range(5)] == [True, 7, None, 0.25, big]
    assert type(got.score_at(0)) is bool and type(got.score_at(1)) is int
    assert got.kind.tolist() == [KIND_BOOL, KIND_INT, KIND_NONE, KIND_FLOAT, KIND_INT]
    assert math.isnan(got.score[2]) and got.score[0] == 1.0
    assert got.duration_ms.tolist() == [1.5, 2.0, 0.0, 3.25, 1.0]
    one = got.stored(4, 1)
    assert (one.check_index, one.row_index, one.explanation, one.passed, one.metadata) == (
        4,
        4,
        "why\ufffdnot",  # NUL replaced, as the row writer did
        False,
        {"a": [1, 2]},
    )
    two = got.stored(4, 2)
    assert (two.error, two.output, two.model) == ("Traceback ...", "printed", "m" * 200)
    assert 3 not in got.extras  # nothing but Nones: nothing stored


def test_rows_need_not_be_contiguous_but_must_ascend() -> None:
    got = decode_block(encode_block([1, 5, 9], ["ok"] * 3, [1, 2, 3], [0.0] * 3, {}))
    assert got.row_index.tolist() == [1, 5, 9]
    with pytest.raises(StorageError, match="ascending and distinct"):
        encode_block([2, 2], ["ok"] * 2, [1, 1], [0.0] * 2, {})
    with pytest.raises(StorageError, match="differ in length"):
        encode_block([1], ["ok", "ok"], [1], [0.0], {})


def test_a_contiguous_block_stores_no_row_indexes() -> None:
    dense = encode_block(list(range(100, 200)), ["ok"] * 100, [1.0] * 100, [0.0] * 100, {})
    sparse = encode_block(list(range(100, 300, 2)), ["ok"] * 100, [1.0] * 100, [0.0] * 100, {})
    assert len(sparse) - len(dense) >= 8 * 100 - 8
    assert decode_block(dense).row_index.tolist() == list(range(100, 200))


def test_an_empty_block() -> None:
    got = decode_block(encode_block([], [], [], [], {}))
    assert len(got) == 0 and got.statuses == ()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "truncated"),
        (b"XYZ\x01\x00\x00\x00\x00", "unknown format"),
        (b"SRB\x02\x00\x00\x00\x00", "unknown format"),
    ],
)
def test_broken_blocks_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(StorageError, match=message):
        decode_block(data)


def test_a_block_cut_short_is_refused() -> None:
    data = encode_block([1, 3], ["ok", "ok"], [1, 2], [0.0, 0.0], {})
    with pytest.raises(StorageError, match="length"):
        decode_block(data + b"\x00")


def test_concat_maps_status_codes_to_one_table_and_rekeys_extras() -> None:
    a = decode_block(
        encode_block([0, 1], ["error", "ok"], [None, 1], [0.0, 0.0], {0: {"error": "e"}})
    )
    b = decode_block(
        encode_block([2, 3], ["ok", "timeout"], [2, None], [0.0, 0.0], {1: {"error": "t"}})
    )
    both = concat([EMPTY, a, b])
    assert [both.status_at(k) for k in range(4)] == ["error", "ok", "ok", "timeout"]
    assert both.extras == {0: {"error": "e"}, 3: {"error": "t"}}
    ok = both.code("ok")
    assert ok is not None and (both.status == ok).sum() == 2
    assert both.code("oom") is None
    picked = both.take(np.array([3, 0]))
    assert picked.row_index.tolist() == [3, 0] and picked.extras == {
        0: {"error": "t"},
        1: {"error": "e"},
    }
    assert concat([]) is EMPTY and concat([a]) is a


scores = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)
extras = st.fixed_dictionaries(
    {},
    optional={
        "explanation": st.text(max_size=20),
        "error": st.text(max_size=20),
        "passed": st.booleans(),
        "metadata": st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
        "model": st.text(max_size=20),
    },
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.sampled_from(STATUSES), scores, st.floats(0, 1e6), extras), max_size=40),
    st.integers(min_value=0, max_value=10**9),
    st.booleans(),
)
def test_any_block_round_trips(
    rows: list[tuple[str, Any, float, dict[str, Any]]], start: int, gaps: bool
) -> None:
    index = [start + (3 * k if gaps else k) for k in range(len(rows))]
    got = decode_block(
        encode_block(
            index,
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            {k: r[3] for k, r in enumerate(rows)},
        )
    )
    assert got.row_index.tolist() == index
    for k, (status, score, duration, extra) in enumerate(rows):
        stored = got.stored(0, k)
        assert stored.status == status and stored.duration_ms == duration
        assert stored.score == score and type(stored.score) is type(score)
        for name in ("passed", "metadata"):
            assert getattr(stored, name) == extra.get(name)
        for name in ("explanation", "error"):
            expected = extra.get(name)
            assert getattr(stored, name) == (
                None if expected is None else expected.replace("\x00", "\ufffd")
            )


def _score_columns_row_by_row(scores: list[Any]) -> tuple[bytes, list[float]]:
    """Each score's kind and float as the encoder takes a mixed block, a row at a time."""
    kinds, values = [], []
    for value in scores:
        if value is None:
            kinds.append(KIND_NONE)
            values.append(math.nan)
        elif isinstance(value, bool):
            kinds.append(KIND_BOOL)
            values.append(float(value))
        elif isinstance(value, int):
            kinds.append(KIND_INT)
            values.append(float(value))
        else:
            kinds.append(KIND_FLOAT)
            values.append(float(value))
    return bytes(kinds), values


@pytest.mark.parametrize(
    "scores",
    [
        [True, False, True],
        [0.25, -1.5, 1e300, 0.0],
        [True],
        [0.5],
        [True, 1, 0.5, None, 2**60],
        [1, 2, 3],
        [],
    ],
)
def test_a_blocks_scores_encode_alike_in_one_call_or_a_row_at_a_time(scores: list[Any]) -> None:
    data = encode_block(
        list(range(len(scores))),
        ["ok"] * len(scores),
        scores,
        [1.0] * len(scores),
        {},
    )
    arrays = decode_block(data)
    kinds, values = _score_columns_row_by_row(scores)
    assert bytes(arrays.kind) == kinds
    assert np.array_equal(arrays.score, np.array(values, dtype=np.float64), equal_nan=True)
    assert [arrays.score_at(k) for k in range(len(scores))] == scores
    assert [type(arrays.score_at(k)) for k in range(len(scores))] == [type(s) for s in scores]
