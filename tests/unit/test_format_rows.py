"""Rows carry other formats' fields (messages, item, sample, vars, ground_truth) everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidRequestError
from engine.models import Row
from engine.okareo import translate
from engine.okareo.store import ScenarioPoint
from engine.rows import as_row
from engine.sandbox.protocol import Job
from engine.suites.data import read_rows

FIELDS = {
    "messages": [{"role": "user", "content": "hi"}],
    "item": {"reference": "x"},
    "sample": {"output_text": "x"},
    "vars": {"city": "Paris"},
    "ground_truth": "Paris",
}


def test_row_accepts_format_fields_and_the_job_carries_them() -> None:
    row = Row(model_output="x", **FIELDS)
    job = Job(nonce="n", source="", row_timeout_seconds=1, max_output_bytes=1024, rows=[row])
    (seen,) = job.job_rows()
    for name, value in FIELDS.items():
        assert getattr(seen, name) == value
    assert b'"ground_truth":["Paris"]' in job.encode()  # a column of one row


def test_unknown_row_field_names_the_accepted_ones() -> None:
    with pytest.raises(InvalidRequestError) as err:
        as_row(3, {"model_output": "x", "expected": "y"})
    message = str(err.value)
    assert message.startswith("row 4 (rows[3]): unknown field(s) expected; expected fields:")
    for name in ("model_output", "messages", "item", "sample", "vars", "ground_truth"):
        assert name in message


def test_format_fields_are_bounded_by_the_json_limits() -> None:
    deep: object = "x"
    for _ in range(200):
        deep = {"a": deep}
    with pytest.raises(ValueError):
        Row(model_output="x", vars={"d": deep})


def test_csv_with_map_reads_format_fields_as_json(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(
        "answer,conversation,truth,v\n"
        'Paris,"[{""role"": ""user"", ""content"": ""Capital?""}]",Paris,"{""city"": ""Paris""}"\n'
    )
    mapping = {"model_output": "answer", "messages": "conversation", "ground_truth": "truth"}
    rows = read_rows(path, {**mapping, "vars": "v"})
    assert rows == [
        {
            "model_output": "Paris",
            "messages": [{"role": "user", "content": "Capital?"}],
            "ground_truth": "Paris",
            "vars": {"city": "Paris"},
        }
    ]
    with pytest.raises(InvalidRequestError, match="ground_truth"):
        read_rows(path, mapping)  # the column v is unknown: the message lists the fields


def test_okareo_chat_model_input_is_also_the_rows_messages() -> None:
    points = [ScenarioPoint("p1", 0, "France?", "Paris"), ScenarioPoint("p2", 1, "Italy?", "Rome")]
    chat = [{"role": "user", "content": "France?"}]
    _, rows = translate.test_points(
        points,
        {
            "p1": {"actual": "Paris", "model_input": chat},
            "p2": {"actual": "Rome", "model_input": "x"},
        },
    )
    assert rows[0].messages == chat and rows[1].messages is None
