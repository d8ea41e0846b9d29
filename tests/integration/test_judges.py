"""LLM judges over real HTTP against the local fake OpenAI-compatible server (no mocked clients)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from engine.builtins import build_builtins
from engine.contract import Status
from engine.judging.model_check import run_model_check
from engine.judging.pairwise import compare
from engine.llm.cache import SqlResponseCache, TenantResponseCache, cache_scope
from engine.llm.openai_client import OpenAIClient
from engine.llm.usage import MeteredClient, UsageMeter, metering
from engine.models import Row
from engine.settings import Settings
from engine.storage.database import create_db_engine, upgrade
from tests.fake_llm import FakeLLM, Reply


def client(fake: FakeLLM, **overrides: Any) -> OpenAIClient:
    return OpenAIClient(fake.settings(**overrides))


def user_prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


ROW = Row(id="r1", model_output="The cat sat on the mat.", scenario_input="Describe the cat.")


@pytest.mark.parametrize(
    ("reply", "score", "explanation"),
    [
        ("Reads naturally.\nSCORE: 4", 4, "Reads naturally."),
        ("Score: 4/5", 4, None),
        ("4/5", 4, None),
        ("5", 5, None),
        ('{"score": 3, "explanation": "Some awkward phrasing."}', 3, "Some awkward phrasing."),
        ('```json\n{"score": 2, "explanation": "Errors."}\n```', 2, "Errors."),
    ],
)
def test_every_reply_form_is_parsed(
    fake_llm: FakeLLM, reply: str, score: int, explanation: str | None
) -> None:
    fake_llm.reply(reply)
    [result] = build_builtins(client(fake_llm))["fluency"].score([ROW], {})
    assert result.status is Status.OK, result
    assert result.score == score
    assert result.explanation == explanation
    assert result.row_id == "r1"
    prompt = user_prompt(fake_llm.requests[0])
    assert "The cat sat on the mat." in prompt
    assert "SCORE: <integer from 1 to 5>" in prompt


def test_json_mode_asks_for_structured_output(fake_llm: FakeLLM) -> None:
    fake_llm.reply('{"explanation": "Tight.", "score": 5}')
    [result] = build_builtins(client(fake_llm))["conciseness"].score([ROW], {"json_mode": True})
    assert (result.score, result.explanation) == (5, "Tight.")
    assert fake_llm.requests[0]["response_format"] == {"type": "json_object"}
    assert fake_llm.requests[0]["temperature"] == 0.0


@pytest.mark.parametrize("reply", ["It is quite good overall.", "SCORE: 9", '{"score": "great"}'])
def test_unparseable_reply_is_judge_error_never_a_default(fake_llm: FakeLLM, reply: str) -> None:
    fake_llm.reply(reply)
    [result] = build_builtins(client(fake_llm))["coherence"].score([ROW], {})
    assert result.status is Status.JUDGE_ERROR
    assert result.score is None
    assert "unparseable judge reply" in (result.error or "")


def test_429_then_success_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.error(429, retry_after="0").reply("SCORE: 5")
    [result] = build_builtins(client(fake_llm))["relevance"].score([ROW], {})
    assert (result.status, result.score) == (Status.OK, 5)
    assert len(fake_llm.requests) == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_server_down_is_judge_error_with_a_clear_message_and_the_batch_completes() -> None:
    settings = Settings(
        llm_base_url=f"http://127.0.0.1:{_closed_port()}/v1",
        llm_model="fake-model",
        llm_max_retries=1,
        llm_timeout_seconds=2,
    )
    registry = build_builtins(OpenAIClient(settings))
    rows = [ROW, Row(model_output="second", scenario_result="second"), Row(model_output="third")]
    judged = registry["fluency"].score(rows, {})
    assert [r.status for r in judged] == [Status.JUDGE_ERROR] * 3
    assert "cannot connect to the operator's model endpoint" in (judged[0].error or "")
    assert "SCOREBOX_LLM_BASE_URL" in (judged[0].error or "")
    # the deterministic checks of the same run are unaffected
    exact = registry["exact_match"].score(rows, {})
    assert [r.status for r in exact] == [Status.SKIPPED, Status.OK, Status.SKIPPED]


def test_cache_hit_on_rerun_costs_no_requests_and_usage_is_metered(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.responder = lambda body: Reply(text="Fine.\nSCORE: 4")
    engine = create_db_engine(f"sqlite:///{tmp_path / 'scorebox.db'}")
    upgrade(engine)
    rows = [Row(id=i, model_output=f"output {i}") for i in range(3)]

    def run_once() -> tuple[list[Any], UsageMeter]:
        # a fresh client and cache each time, as after a restart: only the database persists
        llm = MeteredClient(
            OpenAIClient(fake_llm.settings(), cache=SqlResponseCache(engine)),
        )
        meter = UsageMeter()
        with metering(meter):
            results = build_builtins(llm)["fluency"].score(rows, {})
        return results, meter

    first, first_usage = run_once()
    assert [r.score for r in first] == [4, 4, 4]
    assert len(fake_llm.requests) == 3
    assert first_usage.snapshot().calls == 3
    assert first_usage.snapshot().prompt_tokens > 0

    second, second_usage = run_once()
    assert len(fake_llm.requests) == 3  # zero requests the second time
    assert [r.model_dump(exclude={"duration_ms"}) for r in second] == [
        r.model_dump(exclude={"duration_ms"}) for r in first
    ]
    snap = second_usage.snapshot()
    assert (snap.calls, snap.cached_calls, snap.total_tokens) == (0, 3, 0)

    # a tenant's scope does not share the entries, and neither does another tenant's
    scoped = OpenAIClient(fake_llm.settings(), cache=TenantResponseCache(SqlResponseCache(engine)))
    with cache_scope("tenant-b"):
        build_builtins(scoped)["fluency"].score(rows[:1], {})
        assert len(fake_llm.requests) == 4
        build_builtins(scoped)["fluency"].score(rows[:1], {})
        assert len(fake_llm.requests) == 4  # tenant-b's own entry
    with cache_scope("tenant-c"):
        build_builtins(scoped)["fluency"].score(rows[:1], {})
        assert len(fake_llm.requests) == 5
    engine.dispose()


def test_pairwise_is_judged_in_both_orders_and_mapped_back(fake_llm: FakeLLM) -> None:
    def prefers_the_good_one(body: dict[str, Any]) -> Reply:
        prompt = user_prompt(body)
        good_is_a = prompt.index("Paris is the capital") < prompt.index("RESPONSE B:")
        return Reply(text=f"One is right.\nVERDICT: {'A' if good_is_a else 'B'}")

    fake_llm.responder = prefers_the_good_one
    result = compare(
        "Capital of France?", "Paris is the capital.", "Lyon, surely.", client(fake_llm)
    )
    assert (result.verdict, result.first_order, result.second_order, result.agreed) == (
        "A",
        "A",
        "A",
        True,
    )
    prompts = sorted(user_prompt(body) for body in fake_llm.requests)
    assert len(prompts) == 2
    a_first = [p for p in prompts if p.index("Paris") < p.index("Lyon")]
    assert len(a_first) == 1  # one request per order


def test_pairwise_position_bias_is_reported_inconsistent(fake_llm: FakeLLM) -> None:
    fake_llm.responder = lambda body: Reply(text="VERDICT: A")  # always the first shown
    result = compare("q", "one", "two", client(fake_llm))
    assert result.verdict == "inconsistent"
    assert (result.first_order, result.second_order, result.agreed) == ("A", "B", False)


def test_pairwise_unparseable_is_judge_error(fake_llm: FakeLLM) -> None:
    fake_llm.responder = lambda body: Reply(text="Hard to say.")
    result = compare("q", "one", "two", client(fake_llm))
    assert result.verdict is None
    assert result.status == "judge_error"
    assert "unparseable" in (result.error or "")


def _by_model(replies: dict[str, str]) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        text = replies[body["model"]]
        return Reply(status=500, text="down") if text == "500" else Reply(text=text)

    return respond


def test_ensemble_reports_mean_and_agreement(fake_llm: FakeLLM) -> None:
    fake_llm.responder = _by_model({"m1": "SCORE: 4", "m2": "SCORE: 5", "m3": "SCORE: 4"})
    [result] = build_builtins(client(fake_llm))["coherence"].score(
        [ROW], {"models": ["m1", "m2", "m3"]}
    )
    assert result.score == pytest.approx(13 / 3, abs=1e-4)
    assert (result.explanation or "").startswith(
        "ensemble of 3 judges: mean 4.3333; agreement 0.67 (2 of 3 gave 4)"
    )
    assert sorted(body["model"] for body in fake_llm.requests) == ["m1", "m2", "m3"]


def test_ensemble_survives_one_failing_judge(fake_llm: FakeLLM) -> None:
    fake_llm.responder = _by_model({"m1": "SCORE: 2", "m2": "500"})
    [result] = build_builtins(client(fake_llm, llm_max_retries=0))["fluency"].score(
        [ROW], {"models": ["m1", "m2"]}
    )
    assert (result.status, result.score) == (Status.OK, 2)
    assert "[m2] failed" in (result.explanation or "")


def test_uniqueness_sees_the_other_rows_and_summary_variants_need_the_source(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.responder = lambda body: Reply(text="SCORE: 3")
    rows = [Row(model_output=f"answer {c}") for c in "xyz"]
    results = build_builtins(client(fake_llm))["uniqueness"].score(rows, {})
    assert [r.score for r in results] == [3, 3, 3]
    for body in fake_llm.requests:
        prompt = user_prompt(body)
        others = prompt.split("OTHER OUTPUTS:")[1]
        graded = prompt.split("TEXT TO GRADE:")[1].split(">>>")[0]
        assert sum(f"answer {c}" in others for c in "xyz") == 2
        assert graded.strip("\n<") not in others
    summary = build_builtins(client(fake_llm))["consistency_summary"].score(
        [Row(model_output="s", scenario_input="source"), Row(model_output="s")], {}
    )
    assert [r.status for r in summary] == [Status.OK, Status.SKIPPED]
    assert "source" in user_prompt(fake_llm.requests[-1])


def test_cohere_completeness_reads_the_prompt(fake_llm: FakeLLM) -> None:
    fake_llm.reply("SCORE: 5")
    [result] = build_builtins(client(fake_llm))["completeness"].score([ROW], {})
    assert result.score == 1.0  # Cohere's grade / 5
    prompt = user_prompt(fake_llm.requests[0])
    assert "PROMPT:\nDescribe the cat.\n\nCOMPLETION:\nThe cat sat on the mat." in prompt
    assert "fully addresses the task" in prompt


def test_model_check_pass_fail_with_legacy_template_and_ensemble(fake_llm: FakeLLM) -> None:
    fake_llm.responder = _by_model(
        {"m1": "Right.\nRESULT: PASS", "m2": '{"pass": true}', "m3": "FAIL"}
    )
    rows = [
        Row(model_output="Paris", scenario_result="Paris", metadata={"lang": "en"}),
        Row(model_output="Paris"),
    ]
    results = run_model_check(
        "Does {generation} match {result}? Meta: {metadata}",
        "pass_fail",
        rows,
        client(fake_llm),
        models=["m1", "m2", "m3"],
    )
    assert results[0].status is Status.OK
    assert results[0].score is True
    assert "2 of 3 judges passed it" in (results[0].explanation or "")
    assert results[1].status is Status.SKIPPED
    prompt = user_prompt(fake_llm.requests[0])
    assert prompt == 'Does Paris match Paris? Meta: {"lang": "en"}'
    assert "RESULT: PASS" in fake_llm.requests[0]["messages"][0]["content"]


def test_model_check_score_on_the_templates_own_scale(fake_llm: FakeLLM) -> None:
    fake_llm.reply("SCORE: 8/10").reply("no idea")
    rows = [Row(model_output="a"), Row(model_output="b")]
    results = run_model_check(
        "Rate {model_output} from 0 to 10.", "score", rows, client(fake_llm), low=0, high=10
    )
    statuses = sorted(r.status.value for r in results)
    assert statuses == ["judge_error", "ok"]
    assert [r.score for r in results if r.status is Status.OK] == [8]


@pytest.mark.docker
def test_a_run_mixing_code_checks_builtins_and_judges(
    fake_llm: FakeLLM, docker_settings: Settings
) -> None:
    from engine.sandbox.runner import SandboxRunner

    fake_llm.responder = lambda body: Reply(text="SCORE: 4")
    rows = [
        Row(id=i, model_output=text, scenario_result="Paris", scenario_input="Capital of France?")
        for i, text in enumerate(["Paris", "Lyon", '{"city": "Paris"}'])
    ]
    registry = build_builtins(client(fake_llm))
    results: dict[str, list[Any]] = {}
    with SandboxRunner(docker_settings) as runner:
        results["code"] = runner.run_check(
            "def evaluate(model_output: str) -> int:\n    return len(model_output)\n", rows
        )
    for name, params in [
        ("exact_match", {}),
        ("is_json", {}),
        ("text_similarity", {"evaluation_metric": "rouge_1"}),
        ("fluency", {}),
        ("correctness", {}),
    ]:
        results[name] = registry[name].score(rows, params)
    for name, per_row in results.items():
        assert len(per_row) == len(rows), name
        assert [r.row_id for r in per_row] == [0, 1, 2], name
        assert all(r.status is Status.OK for r in per_row), (name, per_row)
    assert [r.score for r in results["code"]] == [5, 4, 17]
    assert [r.score for r in results["exact_match"]] == [True, False, False]
    assert [r.score for r in results["is_json"]] == [False, False, True]
    assert json.loads(rows[2].model_output)["city"] == "Paris"


def test_cli_pairwise_and_builtins(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from engine.cli import main

    monkeypatch.setenv("SCOREBOX_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("SCOREBOX_LLM_MODEL", "fake-model")
    fake_llm.responder = lambda body: Reply(text="Same quality.\nVERDICT: SAME")
    out = CliRunner().invoke(main, ["judge", "pairwise", "--input", "q", "--a", "x", "--b", "y"])
    assert out.exit_code == 0, out.output
    assert "verdict:      SAME" in out.output
    assert len(fake_llm.requests) == 2
    listed = CliRunner().invoke(main, ["judge", "builtins", "--json"])
    names = {item["name"] for item in json.loads(listed.output)}
    assert {"text_similarity", "fluency_summary", "correctness"} <= names
