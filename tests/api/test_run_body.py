"""``POST /v1/runs`` checks its rows in one pass, and answers as when a model checked each.

The route validates a body's checks, limits and labels with ``RunRequest`` and its rows
with one pass of plain checks (engine/api/run_body.py, engine/row_dumps.py). What a user
sees stays: the 422 names every bad row beside the body's other mistakes, in the same
words; rows the model converts are stored as it converts them; the rows stored are the
model's dumps once read (they are stored as sent). Built-in checks only (no Docker).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from engine.rows import as_rows, stored_rows
from tests.api.conftest import Api

FIELDS = (
    "expected fields: model_output (required), id, scenario_input, scenario_result, "
    "model_input, metadata, messages, item, sample, vars, ground_truth, output"
)
BAD_ROW = f"row 2 (rows[1]): unknown field(s) answer; {FIELDS}"
ROWS: list[dict[str, Any]] = [{"model_output": "{}"}, {"model_output": "x", "answer": "y"}]


def _messages(reply: Any) -> list[str]:
    assert reply.status_code == 422, reply.text
    return [e["message"] for e in reply.json()["errors"]]


def test_a_bad_row_is_named_beside_the_bodys_other_mistakes(api: Api) -> None:
    h = api.tenant()
    body = {"checks": ["is_json"], "rows": ROWS, "limits": "low", "extra": 1}
    assert _messages(api.client.post("/v1/runs", headers=h, json=body)) == [
        BAD_ROW,
        "body.limits: Input should be a valid dictionary",
        "body.extra: Extra inputs are not permitted",
    ]


def test_a_bad_row_is_named_beside_a_bad_query_parameter(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post(
        "/v1/runs?ignore_required_agreement=perhaps",
        headers=h,
        json={"checks": ["is_json"], "rows": ROWS},
    )
    assert _messages(reply) == [
        "query.ignore_required_agreement: Input should be a valid boolean, unable to "
        "interpret input",
        BAD_ROW,
    ]


def test_rows_that_are_empty_or_not_a_list_are_told_so(api: Api) -> None:
    h = api.tenant()
    empty = api.client.post("/v1/runs", headers=h, json={"checks": ["is_json"], "rows": []})
    assert _messages(empty) == [
        "body.rows: List should have at least 1 item after validation, not 0"
    ]
    one = {"checks": ["is_json"], "rows": {"model_output": "x"}}
    assert _messages(api.client.post("/v1/runs", headers=h, json=one)) == [
        f"rows: expected a JSON list of row objects; {FIELDS}"
    ]


def test_a_body_that_is_not_json_is_told_so(api: Api) -> None:
    h = {**api.tenant(), "Content-Type": "application/json"}
    reply = api.client.post("/v1/runs", headers=h, content=b'{"checks": ["is_json"], "rows": [')
    assert _messages(reply) == ["body.33: JSON decode error"]


def test_values_the_model_converts_are_stored_as_it_converts_them(api: Api) -> None:
    h = {**api.tenant(), "Content-Type": "application/json"}
    # JSON as Python reads it: NaN is a float the model dumps as null; a bool id is an int
    content = b'{"checks": ["is_json"], "rows": [{"model_output": "{}", "id": true, '
    content += b'"scenario_result": NaN}]}'
    reply = api.client.post("/v1/runs", headers=h, content=content)
    assert reply.status_code == 202, reply.text
    [stored] = api.store.load_rows(reply.json()["id"], [0]).values()
    assert stored["id"] == 1 and stored["scenario_result"] is None


def test_the_rows_stored_are_the_models_dumps(api: Api) -> None:
    h = api.tenant()
    rows: list[dict[str, Any]] = [
        {"model_output": "{}"},
        {"id": 7, "model_output": "[1]", "scenario_result": {"expected": [1, 2.5, None]}},
        {
            "id": "q-3",
            "model_output": "no",
            "scenario_input": "capital?",
            "model_input": "Q: capital?",
            "metadata": {"lang": "fr", "tags": ["a"]},
            "messages": [{"role": "user", "content": "hi"}],
            "vars": {"x": 1},
            "ground_truth": 3,
            "output": {"a": True},
        },
    ]
    reply = api.client.post("/v1/runs", headers=h, json={"checks": ["is_json"], "rows": rows})
    assert reply.status_code == 202, reply.text
    assert reply.json()["row_count"] == 3
    stored = api.store.load_rows(reply.json()["id"], [0, 1, 2])
    expected = list(stored_rows(as_rows(rows)))
    assert [stored[i] for i in range(3)] == expected
    assert json.dumps(stored[2]) == json.dumps(expected[2])  # the same keys, the same order
    with api.store.engine.connect() as conn:
        [block] = conn.scalars(
            text("SELECT rows FROM run_row_blocks WHERE run_id = :r"), {"r": reply.json()["id"]}
        )
    assert json.loads(block) == rows  # stored as sent: the defaults are filled in on reading


def test_a_body_orjson_refuses_is_read_by_json_as_before(api: Api) -> None:
    h = {**api.tenant(), "Content-Type": "application/json"}
    # an integer past 64 bits: orjson refuses it, json reads it exactly
    content = b'{"checks": ["is_json"], "rows": [{"model_output": "{}", '
    content += b'"metadata": {"big": 1180591620717411303424}}]}'
    reply = api.client.post("/v1/runs", headers=h, content=content)
    assert reply.status_code == 202, reply.text
    [stored] = api.store.load_rows(reply.json()["id"], [0]).values()
    assert stored["metadata"] == {"big": 2**70}
