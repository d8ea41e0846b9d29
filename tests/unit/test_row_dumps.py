"""A request's rows checked in one pass (engine/row_dumps.py) give what the Row model gives.

``POST /v1/runs`` stores the rows :func:`stored_rows_of` vouches for as they were sent,
without a Row per row, and they are read back whole (``whole_row``); the model's path
(``as_rows`` then ``stored_rows``) stays the judge. For any rows, the one pass either
answers None (and the model decides) or rows that read back as exactly the model's dumps;
and it never vouches for rows the model refuses.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidRequestError
from engine.json_limits import MAX_JSON_DEPTH
from engine.row_dumps import StoredRows, stored_rows_of
from engine.rows import as_rows, stored_rows
from engine.storage.run_blocks import _loads, row_blocks, whole_row
from tests.hypothesis_budget import examples

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
GOOD = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
#: Values a JSON field may hold but a model converts or refuses: NaN and infinities (dumped
#: as null), lone surrogates, tuples (what a Python caller may pass), and these nested.
ODD = st.recursive(
    st.sampled_from([float("nan"), float("inf"), "\ud800", (1,), ()]),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=2)
        | st.dictionaries(TEXT, inner, min_size=1, max_size=2)
    ),
    max_leaves=3,
)


def _mostly(good: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> Any:
    """``good`` values, and an ``odd`` one about one time in six."""
    return st.one_of(good, good, good, good, good, odd)


JSON = _mostly(GOOD, ODD)
OBJECT = st.dictionaries(TEXT, JSON, max_size=3)
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": _mostly(st.none() | TEXT | st.integers(), st.booleans() | st.floats() | GOOD),
    "model_input": _mostly(st.none() | TEXT, st.integers() | GOOD),
    "scenario_input": JSON,
    "scenario_result": JSON,
    "ground_truth": JSON,
    "output": JSON,
    "metadata": _mostly(OBJECT, GOOD | st.dictionaries(st.just("\udc00"), GOOD, min_size=1)),
    "messages": _mostly(st.none() | st.lists(OBJECT, max_size=2), GOOD),
    "item": _mostly(st.none() | OBJECT, GOOD),
    "sample": _mostly(st.none() | OBJECT, GOOD),
    "vars": _mostly(st.none() | OBJECT, GOOD),
    "answer": TEXT,  # not a Row field
}


@st.composite
def a_row(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(JSON)  # not an object at all, now and then
    names = draw(st.sets(st.sampled_from(sorted(FIELD_VALUES)), max_size=4))
    row = {
        name: draw(FIELD_VALUES[name]) for name in names if name != "answer" or draw(st.booleans())
    }
    if draw(st.integers(0, 9)):
        row["model_output"] = draw(TEXT)
    elif draw(st.booleans()):
        row["model_output"] = draw(GOOD)
    return row


def _same(left: Any, right: Any) -> bool:
    """Equal, NaN included (the model keeps no NaN, so none should be left to compare)."""
    if isinstance(left, float) and isinstance(right, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    return bool(left == right) and type(left) is type(right)


def _model_dumps(rows: list[Any]) -> list[dict[str, Any]] | None:
    try:
        return list(stored_rows(as_rows(rows)))
    except (InvalidRequestError, UnicodeError):  # a lone surrogate the model trips on
        return None


@settings(max_examples=examples(600), deadline=None)
@given(rows=st.lists(a_row(), min_size=1, max_size=3))
def test_one_pass_answers_none_or_the_models_dumps(rows: list[Any]) -> None:
    model = _model_dumps(rows)
    fast = stored_rows_of(rows)
    if fast is None:
        return
    assert model is not None, "the one pass vouched for rows the model refuses"
    read = [whole_row(row) for row in fast.rows]
    assert read == model
    for mine, theirs in zip(read, model, strict=True):
        assert list(mine) == list(theirs)  # the dump's key order too
        assert all(_same(mine[k], theirs[k]) for k in mine)


def test_plain_rows_are_vouched_for() -> None:
    rows: list[Any] = [
        {"model_output": "a"},
        {"id": 7, "model_output": "b", "scenario_result": {"x": [1, 2.5, None, True]}},
        {"id": "q", "model_output": "", "metadata": {"k": "v"}, "messages": [{"role": "u"}]},
    ]
    fast = stored_rows_of(rows)
    assert isinstance(fast, StoredRows) and len(fast) == 3
    assert fast.rows is rows  # stored as they were sent
    read = [whole_row(row) for row in fast.rows]
    assert read == _model_dumps(rows)
    assert read[0]["metadata"] is not read[1]["metadata"]
    assert read[0]["metadata"] == {}


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "row",
    [
        {"model_output": 1},
        {"model_output": "x", "answer": "y"},
        {"model_output": "x", "id": True},
        {"model_output": "x", "id": 1.0},
        {"model_output": "x", "scenario_result": float("nan")},
        {"model_output": "x", "scenario_input": "\ud800"},
        {"model_output": "x", "metadata": {"k": (1, 2)}},
        {"model_output": "x", "scenario_input": _nested(MAX_JSON_DEPTH + 1)},
        ["model_output"],
    ],
)
def test_a_row_it_cannot_vouch_for_is_left_to_the_model(row: Any) -> None:
    assert stored_rows_of([{"model_output": "ok"}, row]) is None


def test_depth_is_judged_as_the_model_judges_it() -> None:
    deepest = {"model_output": "x", "scenario_input": _nested(MAX_JSON_DEPTH)}
    assert _model_dumps([deepest]) is not None
    fast = stored_rows_of([deepest])
    assert fast is not None and [whole_row(r) for r in fast.rows] == _model_dumps([deepest])
    too_deep = {"model_output": "x", "scenario_input": _nested(MAX_JSON_DEPTH + 1)}
    assert _model_dumps([too_deep]) is None


@pytest.mark.parametrize("rows", [[], {"model_output": "x"}, None, "rows"])
def test_what_is_not_a_list_of_rows_is_left_to_the_model(rows: Any) -> None:
    assert stored_rows_of(rows) is None


@pytest.mark.parametrize("big", [1, 2**70])  # orjson writes the one block, json the other
def test_rows_stored_as_sent_are_read_back_whole_and_others_as_given(big: int) -> None:
    sent: list[Any] = [{"model_output": "a", "metadata": {"n": big}}, {"model_output": "b"}]
    checked = stored_rows_of(sent)
    assert checked is not None
    [(start, stop, text)] = list(row_blocks(checked))
    assert (start, stop) == (0, 2) and json.loads(text) == sent  # as sent, any JSON reader
    assert _loads(text) == _model_dumps(sent)
    [(_, _, plain)] = list(row_blocks(iter(sent)))  # a store's caller's rows: as given
    assert _loads(plain) == sent
