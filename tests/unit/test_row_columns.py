"""score_table's rows as columns: the job's JSON, the skip rule's inputs and its results.

Columns go into a job without a Row per row (engine/sandbox/columns.py), and a job's rows
travel as columns whatever the caller gave, so what the harness reads
(engine/harness/binding.py) must be what the same rows as Row values give, for any values
a row may hold; and the results come back as columns whose statuses are one byte a row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.contract import PARAMETER_NAMES, Status, formats
from engine.contract.formats.table import ROW_FIELDS
from engine.errors import InvalidRequestError
from engine.harness.binding import ColumnRow, check_columns
from engine.models import Limits, Row, RowResult
from engine.sandbox.backend import BackendHealth, JobEnd, JobEvent, Termination
from engine.sandbox.columns import (
    IndexedColumns,
    RowColumns,
    column_chunks,
    dump_row_columns,
    is_columns,
)
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.sandbox.table import TableColumns, TablePart, assemble
from engine.settings import Settings
from tests.hypothesis_budget import examples

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)  # no lone surrogate
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
#: Values each field may hold, among them the JSON-sensitive characters (quotes, commas,
#: backslashes, control characters) a cut at the separators would get wrong.
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "model_output": TEXT | st.sampled_from(['","', '\\",\\"', '"', "\\", "\n\t\x00", ""]),
    "scenario_input": JSON,
    "scenario_result": JSON,
    "model_input": st.none() | TEXT,
    "metadata": st.dictionaries(TEXT, JSON, max_size=3),
    "ground_truth": JSON,
    "id": st.none() | TEXT | st.integers(),
}


@st.composite
def tables(draw: st.DrawFn) -> dict[str, list[Any]]:
    """Columns of 1 to 8 rows: model_output and any other fields."""
    names = draw(st.sets(st.sampled_from(sorted(set(FIELD_VALUES) - {"model_output"}))))
    size = draw(st.integers(1, 8))
    return {
        name: draw(st.lists(FIELD_VALUES[name], min_size=size, max_size=size))
        for name in ["model_output", *sorted(names)]
    }


def as_rows(columns: dict[str, list[Any]]) -> list[Row]:
    size = len(columns["model_output"])
    return [Row.model_validate({k: v[i] for k, v in columns.items()}) for i in range(size)]


def job(rows: RowColumns | list[Row]) -> Job:
    return Job(nonce="n", source="", row_timeout_seconds=1, max_output_bytes=1024, rows=rows)


def sent(rows: RowColumns | list[Row]) -> dict[str, Any]:
    """The job document the harness parses, with each row as the harness reads it from the
    columns (every field, its default where no column gave it)."""
    head, body = job(rows).encode().split(b"\n", 1)
    assert int(head) == len(body)
    document: dict[str, Any] = json.loads(body)
    n = check_columns(document)
    columns = document.pop("columns")
    document["rows"] = [dict(ColumnRow(columns, k)) for k in range(n)]
    return document


@settings(max_examples=examples(200), deadline=None)
@given(columns=tables(), cut=st.integers(0, 8))
def test_a_job_of_columns_is_the_job_of_its_rows(columns: dict[str, list[Any]], cut: int) -> None:
    """The same job to the harness, whole and for a slice (a job's retry), and the same
    Row for each index."""
    (chunk,) = column_chunks(columns, 100)
    rows = as_rows(columns)
    assert isinstance(job(chunk).rows, RowColumns)  # kept as columns, not made Rows
    assert sent(chunk) == sent(rows)
    assert sent(chunk[cut:]) == sent(rows[cut:])
    assert list(chunk) == rows
    assert chunk.lacking({"scenario_input", "scenario_result"}).tolist() == [
        row.scenario_input is None or row.scenario_result is None for row in rows
    ]


def test_columns_are_cut_into_chunks_and_views() -> None:
    columns: dict[str, Any] = {
        "model_output": np.array([f"row {n}" for n in range(7)]),
        "scenario_input": [None, 1] * 3 + [2],
    }
    chunks = list(column_chunks(columns, 3))
    assert [len(chunk) for chunk in chunks] == [3, 3, 1]
    assert chunks[1][0].model_output == "row 3"  # numpy strings come back as str
    assert chunks[1].lacking({"scenario_input"}).tolist() == [False, True, False]
    indexed = IndexedColumns(chunks[1], 3)
    assert indexed[0][0] == 3 and indexed[0][1].scenario_input == 1
    assert indexed[-1][0] == 5 and indexed[-1][1].model_output == "row 5"
    rest = indexed[1:]
    assert isinstance(rest, IndexedColumns) and rest.first == 4 and len(rest) == 2
    assert sent(rest.rows)["rows"][0]["model_output"] == "row 4"
    assert len(indexed[5:]) == 0 and sent(indexed[5:].rows)["rows"] == []


def test_a_job_carries_the_columns_given_and_leaves_out_the_rest() -> None:
    (chunk,) = column_chunks({"model_output": ["a", 'b"'], "model_input": [None, "q"]}, 10)
    assert chunk.dump_columns() == b'{"model_output":["a","b\\""],"model_input":[null,"q"]}'
    # Row values: a field only some rows hold is a column, one no row holds is left out.
    rows = [Row(model_output="a", metadata={"k": 1}), Row(model_output="b")]
    assert json.loads(dump_row_columns(rows)) == {
        "model_output": ["a", "b"],
        "metadata": [{"k": 1}, {}],
    }
    assert json.loads(dump_row_columns([Row(model_output="c")])) == {"model_output": ["c"]}


def test_the_harness_reads_the_row_fields_the_host_has_from_the_contract() -> None:
    """One list of row fields, the contract's: Okareo's parameters and the other formats'
    fields. A field the host's Row gains (or loses) that the contract does not fails here,
    as does a contract field that is not a Row's."""
    assert (*PARAMETER_NAMES, *formats.FORMAT_ROW_FIELDS) == ROW_FIELDS
    assert len(set(ROW_FIELDS)) == len(ROW_FIELDS)  # no parameter is another format's field
    assert sorted(ROW_FIELDS) == sorted(name for name in Row.__pydantic_fields__ if name != "id")
    # The harness reads (and accepts as columns) exactly these.
    assert list(ColumnRow({"model_output": ["a"]}, 0)) == list(ROW_FIELDS)
    assert check_columns({"n": 1, "columns": {name: [None] for name in ROW_FIELDS}}) == 1
    with pytest.raises(ValueError, match="column 'answer'"):
        check_columns({"n": 1, "columns": {"model_output": ["a"], "answer": ["b"]}})


def test_one_rows_mapping_is_not_columns() -> None:
    assert is_columns({"model_output": ["a"]})
    assert not is_columns({"model_output": "a"})
    assert not is_columns([{"model_output": "a"}])


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"model_output": ["a", "b", 3]}, r"row 3 \(rows\[2\]\): model_output"),
        ({"model_output": ["a"], "scenario_input": []}, "differ in length"),
        ({"scenario_input": ["a"]}, "need a model_output column"),
        ({"model_output": ["a"], "colour": ["red"]}, "unknown row field"),
    ],
)
def test_bad_columns_are_named(columns: dict[str, list[Any]], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        list(column_chunks(columns, 2))


def test_a_table_is_filled_in_place_with_shared_status_names() -> None:
    into = TableColumns(4)
    first, second = TablePart(0, 2, into), TablePart(2, 2, into)
    first.deliver(0, RowResult(status=Status.OK, score=True))
    first.deliver(1, RowResult(status=Status.ERROR, error="boom"))
    second.deliver(2, RowResult(status=Status.OK, score=2**60 + 1))
    assert first.missing() == [] and second.missing() == [3]
    second.deliver(3, RowResult(status=Status.OK, score=0.25))
    table = assemble([first, second], into)
    assert table.counts() == {"error": 1, "ok": 3}
    assert table.row_result(1).error == "boom"
    # counts and single rows read the codes: no object column has been made for them
    made = {"status", "output_type", "error", "explanation", "output", "model"} & set(vars(table))
    assert not made
    assert table.status is table.status  # made once when read, then kept
    assert table.status.tolist() == ["ok", "error", "ok", "ok"]
    assert table.status[0] is table.status[2]  # one string for every ok row, not one each
    assert table.output_type.tolist() == ["bool", "", "int", "float"]
    assert table.counts() == {"error": 1, "ok": 3}
    assert table.STATUSES[table.status_codes[1]] == "error"
    assert table.error.tolist() == [None, "boom", None, None]
    assert table.row_result(2).score == 2**60 + 1 and table.row_result(0).score is True
    assert table.row_result(1).status is Status.ERROR
    assert table.score.base is None or table.score.base is into.scores.base


def test_parts_of_unknown_size_are_joined() -> None:
    parts = [TablePart(0, 1), TablePart(1, 1)]
    parts[0].deliver(0, RowResult(status=Status.SKIPPED, error="no input"))
    parts[1].deliver(1, RowResult(status=Status.OK, score=3))
    table = assemble(parts)
    assert table.status.tolist() == ["skipped", "ok"] and table.score.tolist()[1] == 3.0
    assert len(assemble([])) == 0 and assemble([]).counts() == {}


class DyingBackend:
    """Scores each row with len(model_output) as single records; a row whose output is in
    ``die_on`` crashes its harness, with every record of that job lost."""

    def __init__(self, die_on: set[str]) -> None:
        self.die_on = die_on
        self.jobs: list[list[str]] = []

    def execute(self, job: Job, limits: Limits, labels: Mapping[str, str]) -> Iterator[JobEvent]:
        assert isinstance(job.rows, RowColumns)  # columns all the way into the job
        outputs = [row.model_output for row in job.rows]
        self.jobs.append(outputs)
        yield LoadedRecord(t="loaded", ok=True, parameters=["model_output"])
        if self.die_on & set(outputs):
            yield JobEnd(Termination.CRASHED, "died")
            return
        for i, text in enumerate(outputs):
            yield RowRecord(t="row", i=i, status=Status.OK, score=len(text), ms=1)
        yield JobEnd(Termination.DONE)

    def health(self) -> BackendHealth:
        return BackendHealth(True, True, "ok")

    def close(self) -> None:
        pass


def test_columns_recover_from_a_dead_harness_row_by_row() -> None:
    """A job of columns that kills its harness runs again as rows do: the rows before the
    culprit alone, then the culprit alone (crashed), then the rest (slices of the columns)."""
    backend = DyingBackend({"ccc"})
    settings = Settings(table_job_max_rows=4, max_parallel_jobs=1)
    outputs = ["a", "bb", "ccc", "dddd", "eeeee"]
    with SandboxRunner(settings, backend=backend) as runner:
        table = runner.score_table(CodeCheck("src"), {"model_output": outputs})
    assert table.status.tolist() == ["ok", "ok", "crashed", "ok", "ok"]
    assert table.score.tolist()[:2] == [1.0, 2.0] and table.score.tolist()[3:] == [4.0, 5.0]
    assert table.error[2] == "died"
    jobs = backend.jobs
    assert ["a", "bb", "ccc", "dddd"] in jobs and ["eeeee"] in jobs  # two jobs of columns
    assert ["a"] in jobs and ["ccc"] in jobs and ["dddd"] in jobs  # then slices of them
