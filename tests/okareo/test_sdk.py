"""Okareo's SDK, unmodified, against ``scorebox serve``: checks, generation, run_test, isolation."""

from __future__ import annotations

import json

import pytest

from tests.fake_llm import Reply
from tests.okareo.conftest import Server

pytestmark = pytest.mark.docker

MENTIONS = """\
from okareo.checks import CodeBasedCheck, CheckResponse


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> CheckResponse:
        found = scenario_result.lower() in model_output.lower()
        return CheckResponse(score=found, explanation="found" if found else "not found")
"""

WORDS = """\
from okareo.checks import CheckOutputType, CodeBasedCheck


class Check(CodeBasedCheck):
    check_type = CheckOutputType.SCORE  # as in Okareo's own test checks

    @staticmethod
    def evaluate(model_output: str, metadata: dict) -> int:
        return len(model_output.split()) + len(metadata)
"""


ASKED = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_input: str) -> tuple:
        return (0.5 if scenario_input.endswith("?") else 0.0, "asked " + scenario_input)
"""

SHORT = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str) -> bool:
        return len(model_output) < 8
"""


def _write(server: Server, module: str, source: str) -> None:
    (server.workdir / f"{module}.py").write_text(source)


def test_check_lifecycle_create_update_list_get_delete(okareo_server: Server) -> None:
    _write(okareo_server, "lifecycle_v1", MENTIONS)
    _write(okareo_server, "lifecycle_v2", MENTIONS.replace(".lower()", ".casefold()"))
    out = okareo_server.sdk(
        """
        from lifecycle_v1 import Check as V1
        from lifecycle_v2 import Check as V2
        name = "lifecycle check"
        v1 = okareo.create_or_update_check(name=name, description="first", check=V1(), tags=["a"])
        same = okareo.create_or_update_check(name=name, description="reworded", check=V1())
        v2 = okareo.create_or_update_check(name=name, description="second", check=V2())
        latest = [c for c in okareo.get_all_checks() if c.name == name]
        every = [c for c in okareo.get_all_checks(all_versions=True) if c.name == name]
        by_id = okareo.get_check(str(v1.id))
        by_name = okareo.get_check(name)
        pinned = okareo.get_check(name, version=1)
        predefined = [c.name for c in okareo.get_all_checks() if c.is_predefined]
        okareo.delete_check(v2.id, name)
        gone = [c.name for c in okareo.get_all_checks(all_versions=True) if c.name == name]
        try:
            okareo.get_check(name)
            missing = "found"
        except ValueError as exc:
            missing = str(exc)
        again = okareo.create_or_update_check(name=name, description="reused", check=V1())
        print(json.dumps({
            "v1": [str(v1.id), v1.version, v1.tags, v1.code_contents],
            "same": [str(same.id), same.version],
            "v2": [str(v2.id), v2.version],
            "latest": [[str(c.id), c.version] for c in latest],
            "every": sorted(c.version for c in every),
            "by_id": [by_id.name, by_id.version],
            "by_name": [str(by_name.id), by_name.version],
            "pinned": [str(pinned.id), pinned.version],
            "predefined": predefined,
            "gone": gone,
            "missing": missing,
            "again": [str(again.id), again.version],
        }))
        """
    )
    v1_id, v2_id = out["v1"][0], out["v2"][0]
    assert out["v1"][1:3] == [1, ["a"]] and out["v1"][3] == MENTIONS
    assert out["same"] == [v1_id, 1]  # a description-only change keeps the version
    assert out["v2"][1] == 2 and v2_id != v1_id
    assert out["latest"] == [[v2_id, 2]]
    assert out["every"] == [1, 2]
    assert out["by_id"] == ["lifecycle check", 1]
    assert out["by_name"] == [v2_id, 2]
    assert out["pinned"] == [v1_id, 1]
    assert {"is_json", "levenshtein_distance", "compression_ratio"} <= set(out["predefined"])
    assert out["gone"] == []
    assert "No check found" in out["missing"]
    assert out["again"][0] not in (v1_id, v2_id)
    # one id from both APIs: the SDK's UUID is the /v1 check
    with okareo_server.v1() as v1:
        reply = v1.get(f"/v1/checks/{out['again'][0]}")
        assert reply.status_code == 200, reply.text
        assert reply.json()["name"] == "lifecycle check"


GENERATED = """\
def evaluate(model_output: str, scenario_result: str) -> bool:
    return str(scenario_result).lower() in model_output.lower()
"""


def test_generate_check_through_scorebox_generator(okareo_server: Server) -> None:
    okareo_server.llm.responder = lambda request: Reply(text=f"```python\n{GENERATED}```")
    try:
        out = okareo_server.sdk(
            """
            from okareo_api_client.models.evaluator_spec_request import EvaluatorSpecRequest
            spec = EvaluatorSpecRequest(
                description="Pass if the answer names the expected city, ignoring case.",
                requires_scenario_input=False,
                requires_scenario_result=True,
                output_data_type="bool",
            )
            check = okareo.generate_check(spec)
            print(json.dumps({
                "code": check.generated_code,
                "type": check.output_data_type,
                "requires_result": check.requires_scenario_result,
                "warning": check.warning,
            }))
            """
        )
    finally:
        okareo_server.llm.responder = None
    assert out == {"code": GENERATED, "type": "bool", "requires_result": True, "warning": None}
    prompt = okareo_server.llm.requests[-1]["messages"]
    assert any("names the expected city" in str(m["content"]) for m in prompt)


def test_generate_check_repairs_a_broken_attempt(okareo_server: Server) -> None:
    """The generator's loop behind the SDK: a reply that does not compile is sent back."""
    broken = "def evaluate(model_output: str, scenario_result: str) -> bool:\n    return (\n"
    replies = iter([broken, GENERATED])
    okareo_server.llm.responder = lambda request: Reply(text=f"```python\n{next(replies)}```")
    before = len(okareo_server.llm.requests)
    try:
        out = okareo_server.sdk(
            """
            from okareo_api_client.models.evaluator_spec_request import EvaluatorSpecRequest
            check = okareo.generate_check(EvaluatorSpecRequest(
                description="Pass if the answer names the expected city.",
                requires_scenario_input=False,
                requires_scenario_result=True,
                output_data_type="bool",
            ))
            print(json.dumps({"code": check.generated_code, "warning": check.warning}))
            """
        )
    finally:
        okareo_server.llm.responder = None
    assert out == {"code": GENERATED, "warning": None}
    requests = okareo_server.llm.requests[before:]
    assert len(requests) == 2
    assert "return (" in str(requests[1]["messages"])  # the repair shows the broken attempt


def test_run_test_scores_every_row_as_expected(okareo_server: Server) -> None:
    _write(okareo_server, "run_mentions", MENTIONS)
    _write(okareo_server, "run_words", WORDS)
    _write(okareo_server, "run_asked", ASKED)
    _write(okareo_server, "run_short", SHORT)
    out = okareo_server.sdk(
        """
        from okareo.model_under_test import CustomModel, ModelInvocation
        from okareo_api_client.models.find_test_data_point_payload import FindTestDataPointPayload
        from okareo_api_client.models.scenario_set_create import ScenarioSetCreate
        from okareo_api_client.models.seed_data import SeedData
        from okareo_api_client.models.test_run_type import TestRunType
        from run_mentions import Check as Mentions
        from run_words import Check as Words
        from run_asked import Check as Asked
        from run_short import Check as Short

        mentions = okareo.create_or_update_check(
            name="run mentions", description="", check=Mentions())
        okareo.create_or_update_check(name="run words", description="", check=Words())
        okareo.create_or_update_check(name="run asked", description="", check=Asked())
        okareo.create_or_update_check(name="run short", description="", check=Short())
        seeds = [("France?", "Paris"), ("Italy?", "Rome"), ("Spain?", "Madrid"), ("Peru?", "Lima")]
        scenario = okareo.create_scenario_set(ScenarioSetCreate(
            name="capitals", seed_data=[SeedData(input_=q, result=a) for q, a in seeds]))
        answers = {"France?": "It is Paris.", "Italy?": "Milan, surely", "Spain?": "madrid"}

        class Capitals(CustomModel):
            def invoke(self, input_value):
                if input_value not in answers:
                    raise RuntimeError("no answer for " + input_value)
                return ModelInvocation(
                    model_prediction=answers[input_value],
                    model_input=input_value,
                    model_output_metadata={"tokens": 3},
                )

        mut = okareo.register_model(name="capitals bot", model=Capitals(name="capitals bot"))
        run = mut.run_test(
            scenario=scenario,
            name="capitals run",
            test_run_type=TestRunType.NL_GENERATION,
            # "run mentions" pinned by its version's id (naming it too is a 422: one name)
            checks=["run words", str(mentions.id), "is_json", "run asked", "run short"],
        )
        fetched = mut.get_test_run(str(run.id))
        points = okareo.find_test_data_points(
            FindTestDataPointPayload(test_run_id=run.id, full_data_point=True))
        print(json.dumps({
            "status": run.status,
            "id": str(run.id),
            "app_link": run.app_link,
            "metrics": run.model_metrics.to_dict(),
            "fetched": fetched.model_metrics.to_dict(),
            "points": [
                {
                    "checks": p.checks,
                    "error": p.error_message,
                    "values": [[v.name, v.value, str(v.check_id)] for v in p.check_values],
                    "meta": p.checks_metadata.to_dict() if p.checks_metadata else None,
                }
                for p in points
            ],
            "mentions_id": str(mentions.id),
            "scenario_points": [
                {"id": str(p.id)} for p in okareo.get_scenario_data_points(scenario.scenario_id)
            ],
        }))
        """
    )
    assert out["status"] == "FINISHED"
    rows = out["metrics"]["scores_by_row"]
    assert [r["scenario_index"] for r in rows] == [1, 2, 3, 4]
    # each row's value, as the checks compute it (metadata {"tokens": 3} counts 1 key)
    assert [r.get("run mentions") for r in rows[:3]] == [True, False, True]
    assert [r.get("run words") for r in rows[:3]] == [3 + 1, 2 + 1, 1 + 1]
    assert [r.get("is_json") for r in rows[:3]] == [False, False, False]
    # a (score, explanation) tuple and a bare bool, as Okareo check files return them
    assert [r.get("run asked") for r in rows[:3]] == [0.5, 0.5, 0.5]
    assert rows[1]["run asked__explanation"] == "asked Italy?"
    assert [r.get("run short") for r in rows[:3]] == [False, False, True]
    assert rows[0]["run mentions__explanation"] == "found"
    assert rows[3]["error_message"] == "no answer for Peru?" and "run mentions" not in rows[3]
    assert out["metrics"]["mean_scores"]["run mentions"] == pytest.approx(2 / 3)
    assert out["metrics"]["mean_scores"]["run words"] == pytest.approx(3.0)
    assert out["fetched"] == out["metrics"]
    points = out["points"]
    assert [p["checks"]["run words"] for p in points[:3]] == [4, 3, 2]
    assert points[3]["error"] == "no answer for Peru?" and points[3]["values"] == []
    pinned = [v for v in points[0]["values"] if v[2] == out["mentions_id"]]
    assert pinned and pinned[0][1] is True
    assert points[1]["meta"]["run words"]["status"] == "ok"

    # the test run is a scorebox run, with per-row statuses
    run_id = out["app_link"].rsplit("/", 1)[1]
    with okareo_server.v1() as v1:
        listed = v1.get("/v1/runs").json()
        runs = listed["runs"] if isinstance(listed, dict) else listed
        (run,) = [r for r in runs if r["id"] == run_id]
        assert run["labels"]["okareo_test_run"] == out["id"] and run["status"] == "succeeded"
        results = v1.get(f"/v1/runs/{run_id}/results", params={"limit": 100}).json()["results"]
        assert len(results) == 3 * 5  # three scored rows, five checks
        assert {r["status"] for r in results} == {"ok"}

    # ... and the CLI lists it by its label and prints each row's status
    listed_cli = okareo_server.cli(
        "run", "list", "--label", f"okareo_test_run={out['id']}", "--json"
    )
    assert [r["id"] for r in json.loads(listed_cli)] == [run_id]
    records = [
        json.loads(line) for line in okareo_server.cli("run", "results", run_id).splitlines()
    ]
    assert len(records) == 3 * 5 and {r["status"] for r in records} == {"ok"}
    assert {r["row_id"] for r in records} == {p["id"] for p in out["scenario_points"][:3]}


def test_another_tenant_sees_none_of_it(okareo_server: Server) -> None:
    _write(okareo_server, "private_check", MENTIONS)
    mine = okareo_server.sdk(
        """
        from okareo_api_client.models.scenario_set_create import ScenarioSetCreate
        from okareo_api_client.models.seed_data import SeedData
        from private_check import Check
        check = okareo.create_or_update_check(name="private", description="", check=Check())
        scenario = okareo.create_scenario_set(ScenarioSetCreate(
            name="private set", seed_data=[SeedData(input_="q", result="a")]))
        print(json.dumps({"check": str(check.id), "scenario": str(scenario.scenario_id)}))
        """
    )
    theirs = okareo_server.sdk(
        f"""
        names = [c.name for c in okareo.get_all_checks(all_versions=True) if not c.is_predefined]
        outcomes = []
        for call in (
            lambda: okareo.get_check("{mine["check"]}"),
            lambda: okareo.get_check("private"),
            lambda: okareo.get_scenario_data_points("{mine["scenario"]}"),
        ):
            try:
                call()
                outcomes.append("visible")
            except Exception as exc:
                outcomes.append(type(exc).__name__ + ": " + str(exc))
        print(json.dumps({{"names": names, "outcomes": outcomes}}))
        """,
        key=okareo_server.other_key,
    )
    assert "private" not in theirs["names"]
    assert all(o != "visible" for o in theirs["outcomes"]), theirs
    assert "no check" in theirs["outcomes"][0] and "No check found" in theirs["outcomes"][1]
    assert "no scenario set" in theirs["outcomes"][2]


def test_wrong_key_is_a_clean_error(okareo_server: Server) -> None:
    """The SDK's constructor is the first call: a wrong key fails there, with the reason."""
    script = okareo_server.workdir / "wrong_key.py"
    script.write_text(
        "import json, os\n"
        "from okareo import Okareo\n"
        "try:\n"
        "    Okareo(api_key='sbx_not_a_key', base_path=os.environ['SCOREBOX_URL'])\n"
        "    print(json.dumps({'error': None}))\n"
        "except Exception as exc:\n"
        "    print(json.dumps({'error': type(exc).__name__, 'message': str(exc)}))\n"
    )
    result = json.loads(okareo_server.run(script).strip().splitlines()[-1])
    assert result["error"] == "TypeError", result
    assert "unknown API key" in result["message"]


def test_model_checks_uploads_and_refusals(okareo_server: Server) -> None:
    (okareo_server.workdir / "rows.jsonl").write_text(
        '{"input": "France?", "result": "Paris"}\n'
        '{"input": {"country": "Italy"}, "result": "Rome"}\n'
    )
    out = okareo_server.sdk(
        """
        from okareo.checks import CheckOutputType, ModelBasedCheck
        polite = ModelBasedCheck(
            prompt_template="Is this polite? {model_output}", check_type=CheckOutputType.PASS_FAIL)
        v1 = okareo.create_or_update_check(name="polite", description="", check=polite)
        reworded = ModelBasedCheck(
            prompt_template="Is this answer polite? {model_output}",
            check_type=CheckOutputType.PASS_FAIL)
        v2 = okareo.create_or_update_check(name="polite", description="", check=reworded)
        shadow = okareo.create_or_update_check(
            name="does_code_compile", description="", check=polite)
        refusals = []
        for name, check in (
            ("free text", ModelBasedCheck(
                prompt_template="Describe {model_output}", check_type=CheckOutputType.ANALYSIS)),
            ("bad/name", polite),
        ):
            try:
                okareo.create_or_update_check(name=name, description="", check=check)
                refusals.append(None)
            except Exception as exc:
                refusals.append(type(exc).__name__ + ": " + str(exc))
        uploaded = okareo.upload_scenario_set(scenario_name="uploaded", file_path="rows.jsonl")
        points = okareo.get_scenario_data_points(str(uploaded.scenario_id))
        model = okareo.register_model(name="plain", tags=["a"])
        updated = okareo.register_model(name="plain", tags=["b"], update=True)
        fetched = okareo.get_model("plain")
        print(json.dumps({
            "v1": [v1.version, v1.output_data_type, v1.check_config.to_dict()],
            "v2": [v2.version, str(v2.id) != str(v1.id)],
            "warnings": [v2.warning, shadow.warning],
            "refusals": refusals,
            "points": [[p.input_, p.result] for p in points],
            "count": uploaded.scenario_count,
            "models": [str(model.mut_id) == str(updated.mut_id), updated.tags],
            "fetched": [str(fetched.mut_id) == str(model.mut_id), fetched.name],
        }))
        """
    )
    assert out["v1"] == [
        1,
        "bool",
        {"prompt_template": "Is this polite? {model_output}", "type": "pass_fail"},
    ]
    assert out["v2"] == [2, True]
    assert out["warnings"][0] is None
    assert "shadows the built-in does_code_compile" in out["warnings"][1]
    analysis, bad_name = out["refusals"]
    assert analysis.startswith("TypeError") and "CheckOutputType.SCORE" in analysis
    assert bad_name.startswith("TypeError") and "letters, digits, spaces" in bad_name
    assert out["points"] == [["France?", "Paris"], [{"country": "Italy"}, "Rome"]]
    assert out["count"] == 2
    assert out["models"] == [True, ["b"]]
    assert out["fetched"] == [True, "plain"]


def test_run_test_with_a_custom_batch_model(okareo_server: Server) -> None:
    out = okareo_server.sdk(
        """
        from okareo.model_under_test import CustomBatchModel, ModelInvocation
        from okareo_api_client.models.scenario_set_create import ScenarioSetCreate
        from okareo_api_client.models.seed_data import SeedData

        scenario = okareo.create_scenario_set(ScenarioSetCreate(
            name="echo", seed_data=[SeedData(input_=w, result=w) for w in ("a", "b", "c")]))

        class Echo(CustomBatchModel):
            def invoke_batch(self, input_batch):
                outputs = {"a": "a", "b": "B", "c": "c"}
                return [
                    {"id": item["id"], "model_invocation": ModelInvocation(
                        model_prediction=outputs[item["input_value"]])}
                    for item in input_batch
                ]

        mut = okareo.register_model(name="echo", model=Echo(name="echo", batch_size=2))
        run = mut.run_test(scenario=scenario, name="echo run", checks=["exact_match"])
        rows = run.model_metrics.to_dict()["scores_by_row"]
        print(json.dumps([run.status, [r["exact_match"] for r in rows]]))
        """
    )
    assert out == ["FINISHED", [True, False, True]]


def test_a_client_level_project_is_the_tenants_one(okareo_server: Server) -> None:
    """``Okareo(..., project="Global")``: the SDK resolves it and sends its id on each call."""
    _write(okareo_server, "project_check", SHORT)
    out = okareo_server.sdk(
        """
        from okareo_api_client.models.scenario_set_create import ScenarioSetCreate
        from okareo_api_client.models.seed_data import SeedData
        from project_check import Check
        scoped = Okareo(api_key=os.environ["OKAREO_API_KEY"],
                        base_path=os.environ["SCOREBOX_URL"], project="global")
        check = scoped.create_or_update_check(name="project check", description="", check=Check())
        scenario = scoped.create_scenario_set(ScenarioSetCreate(
            name="project set", seed_data=[SeedData(input_="q", result="a")]))
        model = scoped.register_model(name="project model")
        try:
            Okareo(api_key=os.environ["OKAREO_API_KEY"],
                   base_path=os.environ["SCOREBOX_URL"], project="elsewhere")
            unknown = None
        except ValueError as exc:
            unknown = str(exc)
        print(json.dumps({
            "project": scoped.project_id,
            "ids": [str(check.project_id), str(scenario.project_id), str(model.project_id)],
            "unknown": unknown,
        }))
        """
    )
    assert out["ids"] == [out["project"]] * 3
    assert "Unknown project 'elsewhere'" in out["unknown"] and "Global" in out["unknown"]
