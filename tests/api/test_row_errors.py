"""The API words a bad row as the CLI words a data file's row (one function,
engine.row_errors): numbered from 1, the expected fields named, no pydantic text; an
unknown check's 404 names the closest checks. Built-in checks only (no Docker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import InvalidRequestError
from engine.row_errors import expected, shape_problem
from engine.suites.data import read_rows
from tests.api.conftest import TRIVIAL_CHECK, Api

BAD = {"modle_output": "x"}
ROWS = [{"model_output": "{}"}, BAD, {"model_output": 3}]
FIELDS = (
    "expected fields: model_output (required), id, scenario_input, scenario_result, "
    "model_input, metadata, messages, item, sample, vars, ground_truth, output"
)


def _pydantic_free(text: str) -> None:
    assert "pydantic" not in text and "validation error for" not in text
    assert "Value error," not in text and "body.rows" not in text


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/score"])
def test_a_bad_row_of_a_request_is_worded_as_the_cli_words_it(api: Api, path: str) -> None:
    h = api.tenant()
    reply = api.client.post(path, headers=h, json={"checks": ["is_json"], "rows": ROWS})
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert [e["message"] for e in body["errors"]] == [
        f"row 2 (rows[1]): unknown field(s) modle_output; {FIELDS}",
        f"row 3 (rows[2]): model_output is not a string; {FIELDS}",
    ]
    _pydantic_free(reply.text)


def test_rows_that_are_not_a_list_are_told_so(api: Api) -> None:
    h = api.tenant()
    body = {"checks": ["is_json"], "rows": {"model_output": "x"}}
    reply = api.client.post("/v1/score", headers=h, json=body)
    assert reply.status_code == 422
    assert reply.json()["detail"] == f"rows: expected a JSON list of row objects; {FIELDS}"


def test_an_uploads_bad_row_is_worded_as_the_cli_words_it(api: Api) -> None:
    h = api.tenant()
    lines = "\n".join(json.dumps(r) for r in ROWS).encode()
    reply = api.client.post(
        "/v1/runs/upload",
        headers=h,
        files={"file": ("rows.jsonl", lines)},
        data={"checks": "is_json"},
    )
    assert reply.status_code == 422, reply.text
    assert reply.json()["detail"] == f"rows line 2: unknown field(s) modle_output; {FIELDS}"
    typed = json.dumps({"model_output": "x", "id": [1]}).encode()
    reply = api.client.post(
        "/v1/runs/upload",
        headers=h,
        files={"file": ("rows.jsonl", b'{"model_output": "ok"}\n' + typed)},
        data={"checks": "is_json"},
    )
    assert reply.status_code == 422, reply.text
    assert reply.json()["detail"] == (
        "row 2 (rows[1]): id: Input should be a valid string or a valid integer"
    )
    _pydantic_free(reply.text)


def test_the_cli_and_the_api_share_one_wording(api: Api, tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS[:2]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidRequestError) as cli:
        read_rows(data)
    assert str(cli.value).startswith(f"{data}:2: {shape_problem(BAD, 'column')}. Rename them")
    assert expected("column") in str(cli.value)
    h = api.tenant()
    reply = api.client.post("/v1/runs", headers=h, json={"checks": ["is_json"], "rows": ROWS[:2]})
    assert reply.json()["detail"] == f"row 2 (rows[1]): {shape_problem(BAD)}"


def test_an_unknown_checks_404_names_the_closest_checks(api: Api) -> None:
    h = api.tenant()
    api.push(h, "no_sorry", TRIVIAL_CHECK)
    got = api.client.get("/v1/checks/is_jsn", headers=h)
    assert got.status_code == 404
    assert got.json()["detail"] == (
        "no check named 'is_jsn' (did you mean 'is_json'?): GET /v1/checks lists your "
        "checks, GET /v1/builtins the built-ins"
    )
    run = api.client.post(
        "/v1/runs", headers=h, json={"checks": ["no_sory"], "rows": [{"model_output": "x"}]}
    )
    assert run.status_code == 404
    assert "(did you mean 'no_sorry'?)" in run.json()["detail"]
    score = api.client.post(
        "/v1/score", headers=h, json={"checks": ["zzzzzz"], "rows": [{"model_output": "x"}]}
    )
    assert score.status_code == 404
    assert "did you mean" not in score.json()["detail"]
    version = api.client.get("/v1/checks/no_sorry@7", headers=h)
    assert version.status_code == 404 and "did you mean" not in version.json()["detail"]
    other = api.tenant()  # another tenant's names are never suggested
    hidden = api.client.get("/v1/checks/no_sory", headers=other)
    assert hidden.status_code == 404 and "no_sorry" not in hidden.json()["detail"]
