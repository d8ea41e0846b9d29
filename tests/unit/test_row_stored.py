"""``Row.stored``: a run's stored rows come back as the Rows that were validated, unchecked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.models import Row
from engine.rows import stored_rows


def test_a_whole_dump_is_the_row_it_was_and_holds_the_stored_values() -> None:
    given = Row(id=7, model_output="out", scenario_input={"q": [1, None]}, metadata={"k": "v"})
    dump = given.model_dump(mode="json")
    made = Row.stored(dump)
    assert made == given
    assert made.model_dump(mode="json") == given.model_dump(mode="json")
    assert made.model_fields_set == set(Row.model_fields)
    assert made.__dict__ is dump  # no copy: the chunk's decoded row is the Row's values


def test_a_partial_dump_takes_the_defaults_and_an_unknown_field_is_refused() -> None:
    made = Row.stored({"model_output": "out"})
    assert made == Row(model_output="out")
    assert made.metadata == {} and made.model_fields_set == {"model_output"}
    with pytest.raises(ValidationError, match="unknown row field"):
        Row.stored({"model_output": "out", "extra": 1})


def test_a_runs_rows_are_stored_as_each_ones_dump_whatever_the_calls() -> None:
    rows = [
        Row(id=i if i % 2 else f"r{i}", model_output=f"out {i}", metadata={"n": i}, vars={"v": [i]})
        for i in range(7)
    ]
    expected = [r.model_dump(mode="json") for r in rows]
    for per_call in (1, 3, 7, 1000):
        assert list(stored_rows(rows, per_call)) == expected
    assert [Row.stored(d) for d in stored_rows(rows)] == rows
    assert list(stored_rows([])) == []
