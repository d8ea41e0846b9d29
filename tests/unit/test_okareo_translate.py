"""The Okareo edge, pure: ids, check specs, rows, metrics; and the OpenAPI codes the SDK needs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.app import create_app
from engine.catalog.ids import check_id_from_uuid, check_uuid
from engine.errors import InvalidRequestError
from engine.okareo import translate
from engine.okareo.store import ScenarioPoint, builtin_uuid
from engine.settings import Settings
from engine.storage import StoredResult

#: (method, path) → the one success code okareo 0.0.162's generated client accepts.
SDK_CODES = {
    ("get", "/v0/projects"): "201",
    ("get", "/v0/projects/{project_id}"): "201",
    ("post", "/v0/check_create_or_update"): "200",
    ("get", "/v0/checks"): "201",
    ("get", "/v0/check/{check_id}"): "201",
    ("delete", "/v0/check/{check_id}"): "204",
    ("post", "/v0/check_generate"): "201",
    ("post", "/v0/register_model"): "201",
    ("get", "/v0/models_under_test/{name}/{version}"): "201",
    ("post", "/v0/scenario_sets"): "201",
    ("post", "/v0/scenario_sets_upload"): "200",
    ("get", "/v0/scenario_data_points/{scenario_id}"): "200",
    ("post", "/v0/test_run"): "201",
    ("get", "/v0/test_runs/{test_run_id}"): "201",
    ("post", "/v0/find_test_data_points"): "201",
}


def test_openapi_documents_each_route_under_its_tag_with_the_sdk_code() -> None:
    doc = create_app(Settings()).openapi()
    seen = {}
    for path, methods in doc["paths"].items():
        if not path.startswith("/v0/"):
            continue
        for method, op in methods.items():
            assert op["tags"] == ["okareo"], (method, path)
            seen[(method, path)] = sorted(c for c in op["responses"] if c.startswith("2"))
    assert seen == {key: [code] for key, code in SDK_CODES.items()}
    assert any(t["name"] == "okareo" for t in doc["tags"])


def test_check_uuid_round_trips_and_rejects_others() -> None:
    check_id = "chk_0123456789abcdef0123"
    value = check_uuid(check_id)
    assert str(uuid.UUID(value)) == value
    assert check_id_from_uuid(value) == check_id
    assert check_id_from_uuid(value.upper()) == check_id
    assert check_id_from_uuid(str(uuid.uuid4())) is None
    assert check_id_from_uuid("mentions city") is None
    with pytest.raises(ValueError, match="not a scorebox check id"):
        check_uuid("run_0123")
    assert builtin_uuid("is_json") == builtin_uuid("is_json") != builtin_uuid("exact_match")
    assert check_id_from_uuid(builtin_uuid("is_json")) is None


@pytest.mark.parametrize(
    ("config", "kind", "check_type"),
    [
        ({"code_contents": "def evaluate(model_output):\n    return 1\n"}, "code", None),
        ({"prompt_template": "Rate {model_output}", "type": "score"}, "model", "score"),
        (
            {"prompt_template": "Ok? {model_output}", "type": "pass_fail", "audio": False},
            "model",
            "pass_fail",
        ),
    ],
)
def test_check_spec_from_okareo_config(
    config: dict[str, object], kind: str, check_type: str | None
) -> None:
    spec = translate.check_spec("my check", "desc", ["t"], config)
    assert (spec.name, spec.kind, spec.description, spec.tags) == ("my check", kind, "desc", ["t"])
    assert (spec.check_type.value if spec.check_type else None) == check_type


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("a/b", {"code_contents": "x"}, "letters, digits, spaces"),
        ("ends ", {"code_contents": "x"}, "letters, digits, spaces"),
        (None, {"code_contents": "x"}, "needs a `name`"),
        ("ok", {}, "code_contents"),
        ("ok", {"prompt_template": "{model_output}", "type": "analysis"}, "PASS_FAIL"),
        ("ok", {"prompt_template": "{model_output}", "audio": True}, "is_audio=False"),
    ],
)
def test_check_spec_refusals_name_the_fix(
    name: str | None, config: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        translate.check_spec(name, None, None, config)


POINTS = [
    ScenarioPoint("p1", 0, {"q": "France?"}, "Paris"),
    ScenarioPoint("p2", 1, "Italy?", "Rome"),
    ScenarioPoint("p3", 2, "Peru?", "Lima"),
]


def test_rows_map_field_for_field_and_failed_points_are_not_scored() -> None:
    data = {
        "p1": {
            "actual": {"city": "Paris"},
            "model_response": {"tokens": 3},
            "model_input": [{"role": "user", "content": "France?"}],
        },
        "p2": {"actual": "Milan", "model_response": "raw text", "model_input": "Italy?"},
        "p3": {"actual": None, "error_message": {"message": "boom"}},
    }
    points, rows = translate.test_points(POINTS, data)
    assert [p.row_index for p in points] == [0, 1, None]
    assert points[2].error_message == "boom"
    assert rows[0].model_output == '{"city": "Paris"}'
    assert rows[0].scenario_input == {"q": "France?"} and rows[0].scenario_result == "Paris"
    assert rows[0].model_input == '[{"role": "user", "content": "France?"}]'
    assert rows[0].metadata == {"tokens": 3}
    assert rows[1].metadata == {"model_response": "raw text"} and rows[1].model_input == "Italy?"
    assert [r.id for r in rows] == ["p1", "p2"]
    missing, _ = translate.test_points(POINTS, {"p1": {"actual": "x"}})
    assert missing[1].error_message == "the model returned no output for this data point"
    with pytest.raises(InvalidRequestError, match="not in the scenario set"):
        translate.test_points(POINTS, {"elsewhere": {"actual": "x"}})


def _result(
    check: int, row: int, status: str, score: bool | int | float | None, error: str | None = None
) -> StoredResult:
    return StoredResult(
        check, row, status, score, "why" if status == "ok" else None, error, None, 1.0
    )


def test_metrics_and_data_points() -> None:
    points, _ = translate.test_points(
        POINTS, {"p1": {"actual": "a"}, "p2": {"actual": "b"}, "p3": {"error_message": "boom"}}
    )
    checks: list[dict[str, Any]] = [
        {"name": "c", "version": 1, "id": "u1"},
        {"name": "is_json", "version": None, "id": "u2"},
    ]
    results = {
        (0, 0): _result(0, 0, "ok", True),
        (0, 1): _result(0, 1, "ok", False),
        (1, 0): _result(1, 0, "ok", 2),
        (1, 1): _result(1, 1, "error", None, "ValueError: x"),
    }
    metrics = translate.model_metrics(checks, points, results)
    assert metrics["mean_scores"] == {"c": 0.5, "is_json": 2.0}
    rows = metrics["scores_by_row"]
    assert [(r["scenario_index"], r.get("c"), r.get("is_json")) for r in rows] == [
        (1, True, 2),
        (2, False, None),
        (3, None, None),
    ]
    assert rows[1]["is_json__explanation"] == "error: ValueError: x"
    assert rows[2] == {"scenario_index": 3, "test_id": points[2].id, "error_message": "boom"}

    now = datetime.now(UTC).isoformat()
    item = translate.full_data_point("run", "NL_GENERATION", checks, points[1], results, now)
    assert item["checks"] == {
        "c": False,
        "c__explanation": "why",
        "is_json": None,
        "is_json__explanation": "error: ValueError: x",
    }
    assert item["check_values"] == [
        {"name": "c", "value": False, "value_type": "bool", "check_id": "u1", "explanation": "why"}
    ]
    assert item["checks_metadata"]["is_json"]["status"] == "error"
    assert item["scenario_data_point_id"] == "p2" and item["model_result"] == "b"


def test_check_files_may_import_everything_okareo_checks_exports() -> None:
    """Okareo's own test checks import CheckOutputType; the validator must know the shim has it."""
    from engine.contract import Policy
    from engine.validation import validate

    source = (
        "from okareo.checks import (BaseCheck, CheckOutputType, CheckResponse, CodeBasedCheck,\n"
        "    ModelBasedCheck)\n\n"
        "class Check(CodeBasedCheck):\n"
        "    check_type = CheckOutputType.PASS_FAIL\n\n"
        "    @staticmethod\n"
        "    def evaluate(model_output: str) -> CheckResponse:\n"
        "        return CheckResponse(score=len(model_output) > 3)\n"
    )
    report = validate(source, Policy.STANDARD)
    assert report.valid, report.issues
    unknown = validate(source.replace("CheckOutputType,", "CheckKind,"), Policy.STANDARD)
    assert not unknown.valid
