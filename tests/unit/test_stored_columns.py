"""A run's chunk hands its stored rows to the sandbox as columns, with no Row made a row:
the job it encodes, and every row read back from those columns, equal what the Rows gave."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.models import Row
from engine.runs.work import _stored_rows
from engine.sandbox.columns import IndexedColumns, dump_row_columns, stored_columns
from tests.hypothesis_budget import examples

TEXT = st.text(max_size=6)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(TEXT, inner, max_size=2),
    max_leaves=4,
)
ROWS = st.builds(
    Row,
    id=st.none() | TEXT | st.integers(min_value=-(2**40), max_value=2**40),
    model_output=TEXT,
    scenario_input=JSON,
    scenario_result=JSON,
    model_input=st.none() | TEXT,
    metadata=st.dictionaries(TEXT, JSON, max_size=2),
)


def _dumps(rows: list[Row]) -> list[dict[str, Any]]:
    return [row.model_dump(mode="json") for row in rows]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=8))
def test_columns_of_stored_rows_encode_and_read_as_the_rows_do(rows: list[Row]) -> None:
    columns = stored_columns(_dumps(rows))
    assert columns is not None
    stored = [Row.stored(d) for d in _dumps(rows)]
    assert columns.dump_columns() == dump_row_columns(stored)
    assert list(columns) == stored


def test_a_row_that_is_not_a_whole_dump_leaves_the_rows_to_be_made_one_by_one() -> None:
    whole = Row(model_output="a").model_dump(mode="json")
    assert stored_columns([whole, {"model_output": "b"}]) is None
    assert stored_columns([whole, {**whole, "extra": 1}]) is None
    swapped = {k: v for k, v in whole.items() if k != "item"} | {"extra": 1}
    assert len(swapped) == len(whole) and stored_columns([whole, swapped]) is None
    assert stored_columns([]) is None


def test_a_chunk_goes_to_the_sandbox_as_columns_only_when_its_rows_are_consecutive() -> None:
    data = {i: Row(id=i, model_output=f"o{i}").model_dump(mode="json") for i in range(10, 14)}
    together = _stored_rows(
        [10, 11, 12, 13], {i: dict(d) for i, d in data.items()}, as_columns=True
    )
    assert isinstance(together, IndexedColumns)
    assert [(i, r.id) for i, r in together] == [(10, 10), (11, 11), (12, 12), (13, 13)]
    gaps = _stored_rows([10, 12, 13], {i: dict(d) for i, d in data.items()}, as_columns=True)
    assert isinstance(gaps, list) and [(i, r.id) for i, r in gaps] == [(10, 10), (12, 12), (13, 13)]
    built_in = _stored_rows([10, 11], {i: dict(d) for i, d in data.items()})
    assert isinstance(built_in, list) and [i for i, _ in built_in] == [10, 11]
