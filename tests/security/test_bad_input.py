"""Bad input from outside callers: each is a 4xx naming the field, never a 500, and never
accepted first and failed later."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.http.guard import _repeatable
from engine.json_limits import MAX_JSON_DEPTH
from tests.api.conftest import TRIVIAL_CHECK, Api

HUGE = "99999999999999999999"  # beyond 64 bits
ROW = {"model_output": "x", "scenario_result": "x"}


def _refused(reply: Any, *names: str) -> str:
    assert reply.status_code == 422, (reply.status_code, reply.text)
    detail = str(reply.json()["detail"])
    for name in names:
        assert name in detail, detail
    return detail


def _raw(api: Api, path: str, headers: dict[str, str], text: str) -> Any:
    return api.client.post(
        path, headers={**headers, "Content-Type": "application/json"}, content=text
    )


def _nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root


def test_results_offset_beyond_64_bits(api: Api) -> None:
    headers = api.tenant()
    reply = api.client.post(
        "/v1/runs", headers=headers, json={"checks": ["exact_match"], "rows": [ROW]}
    )
    assert reply.status_code == 202, reply.text
    run_id = reply.json()["id"]
    for accept in ("application/json", "application/x-ndjson"):
        got = api.client.get(
            f"/v1/runs/{run_id}/results?offset={HUGE}", headers={**headers, "Accept": accept}
        )
        _refused(got, "offset")


def test_check_versions_beyond_64_bits_in_five_places(api: Api) -> None:
    headers = api.tenant()
    api.push(headers, "c1", TRIVIAL_CHECK)
    _refused(api.client.get(f"/v1/checks/c1?version={HUGE}", headers=headers), "version")
    _refused(api.client.delete(f"/v1/checks/c1?version={HUGE}", headers=headers), "version")
    _refused(api.client.get(f"/v1/checks/c1@{HUGE}", headers=headers), f"c1@{HUGE}")
    for path in ("/v1/score", "/v1/runs"):
        named = {"checks": [f"c1@{HUGE}"], "rows": [ROW]}
        _refused(api.client.post(path, headers=headers, json=named), f"c1@{HUGE}")
        as_object = {"checks": [{"name": "c1", "version": int(HUGE)}], "rows": [ROW]}
        _refused(api.client.post(path, headers=headers, json=as_object), "version")
    # a non-ASCII digit is not a version either
    _refused(api.client.get("/v1/checks/c1@\u00b2", headers=headers), "c1@")
    assert api.client.get("/v1/runs", headers=headers).json()["runs"] == []


def test_dashboard_check_versions_beyond_64_bits_are_not_found(api: Api) -> None:
    # The dashboard's check pages took the version unbounded: a 500 OverflowError.
    headers = api.tenant()
    api.push(headers, "c1", TRIVIAL_CHECK)
    key = headers["Authorization"].removeprefix("Bearer ")
    signed_in = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert signed_in.status_code == 303, signed_in.text
    for path in (
        f"/ui/checks/c1?version={HUGE}",
        f"/ui/checks/c1/diff?a={HUGE}&b=1",
        f"/ui/checks/c1/diff?a=1&b={HUGE}",
        "/ui/checks/c1?version=0",
    ):
        assert api.client.get(path).status_code == 404, path
    assert api.client.get("/ui/checks/c1?version=1").status_code == 200


def test_lone_surrogates_are_refused_where_they_arrive(api: Api) -> None:
    headers = api.tenant()
    source = json.dumps({"name": "c2", "source": TRIVIAL_CHECK})[:-2] + '\\ud800"}'
    for path in ("/v1/checks", "/v1/checks/validate"):
        _refused(_raw(api, path, headers, source), "body.source", "surrogate")
    body = (
        '{"checks": ["exact_match"], "rows": [{"model_output": "\\ud800", "scenario_result": "x"}]}'
    )
    _refused(_raw(api, "/v1/score", headers, body), "rows[0].model_output", "surrogate")
    _refused(_raw(api, "/v1/runs", headers, body), "rows[0].model_output", "surrogate")
    in_key = (
        '{"checks": ["exact_match"], "rows": [{"model_output": "x", "metadata": {"\\udc00": 1}}]}'
    )
    _refused(_raw(api, "/v1/runs", headers, in_key), "metadata", "surrogate")
    rows = b'{"model_output": "\\ud800"}\n'
    upload = api.client.post(
        "/v1/runs/upload",
        headers=headers,
        files={"file": ("rows.ndjson", rows)},
        data={"checks": "exact_match"},
    )
    _refused(upload, "rows line 1", "surrogate")
    assert api.client.get("/v1/runs", headers=headers).json()["runs"] == []
    # a proper pair (an emoji written as two escapes) is valid text and accepted
    pair = body.replace("\\ud800", "\\ud83d\\ude00")
    assert _raw(api, "/v1/score", headers, pair).status_code == 200


@pytest.mark.parametrize("field", ["metadata", "scenario_input", "scenario_result"])
def test_deeply_nested_row_values_are_refused(api: Api, field: str) -> None:
    headers = api.tenant()
    row: dict[str, Any] = {"model_output": "x", field: _nested(900)}
    for path in ("/v1/score", "/v1/runs"):
        reply = api.client.post(
            path, headers=headers, json={"checks": ["exact_match"], "rows": [row]}
        )
        _refused(reply, field, f"more than {MAX_JSON_DEPTH} levels")
    row[field] = _nested(MAX_JSON_DEPTH - 1)
    reply = api.client.post(
        "/v1/runs", headers=headers, json={"checks": ["exact_match"], "rows": [row]}
    )
    assert reply.status_code == 202, reply.text


def test_deep_labels_and_params_are_refused(api: Api) -> None:
    headers = api.tenant()
    labels = {"checks": ["exact_match"], "rows": [ROW], "labels": {"x": _nested(900)}}
    _refused(api.client.post("/v1/runs", headers=headers, json=labels), "labels")
    params = {"checks": [{"name": "exact_match", "params": {"x": _nested(900)}}], "rows": [ROW]}
    _refused(api.client.post("/v1/runs", headers=headers, json=params), "params")


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"checks": "[1, {}]"}, "checks[0]"),
        ({"checks": '[{"name": "c1", "version": ' + HUGE + "}]"}, "checks[0].version"),
        ({"checks": "exact_match", "limits": "[1]"}, "limits"),
        ({"checks": "exact_match", "labels": "3"}, "labels"),
        ({"checks": "exact_match", "labels": "[1, 2]"}, "labels"),
        ({"checks": "exact_match", "limits": '{"memory_mb": "lots"}'}, "memory_mb"),
        ({"checks": "exact_match", "labels": "{not json"}, "labels"),
    ],
)
def test_upload_with_wrongly_typed_fields(api: Api, form: dict[str, str], field: str) -> None:
    headers = api.tenant()
    reply = api.client.post(
        "/v1/runs/upload",
        headers=headers,
        files={"file": ("rows.ndjson", b'{"model_output": "x"}\n')},
        data=form,
    )
    _refused(reply, field)
    assert api.client.get("/v1/runs", headers=headers).json()["runs"] == []


def test_an_unknown_query_parameter_is_named(api: Api) -> None:
    headers = api.tenant()
    detail = _refused(api.client.get("/v1/runs?limt=5", headers=headers), "'limt'")
    assert "takes" in detail and "limit" in detail
    assert api.client.get("/v1/runs?limit=5", headers=headers).status_code == 200


def test_only_list_typed_query_parameters_take_several_values() -> None:
    assert _repeatable(list[str]) and _repeatable(list[str] | None)
    assert not _repeatable(str) and not _repeatable(int | None)


def test_a_query_parameter_that_takes_one_value_given_twice_is_refused(api: Api) -> None:
    headers = api.tenant()
    detail = _refused(api.client.get("/v1/runs?limit=5&limit=7", headers=headers), "'limit'")
    assert "given 2 times" in detail
    twice = api.client.delete("/v1/labels?name=a&annotator=x&annotator=y", headers=headers)
    assert twice.status_code == 422 and "'annotator'" in twice.json()["detail"]


def test_the_openapi_document_describes_errors_as_problems(api: Api) -> None:
    document = api.client.get("/openapi.json").json()
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400 and operation.get("x-own-error-bodies"):
                    # OTLP receivers: a google.rpc.Status in the request's encoding, as
                    # OTLP/HTTP says, and a Problem from the layers before them (401, 413)
                    assert "application/problem+json" in response["content"], (method, path)
                elif int(status) >= 400:
                    assert list(response["content"]) == ["application/problem+json"], (
                        method,
                        path,
                        status,
                    )
