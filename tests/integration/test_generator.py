"""The generator end to end: scripted LLM replies over HTTP, checks run in the real sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.contract import Policy, Status
from engine.llm.openai_client import OpenAIClient
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from generator.adapters import RunRows, engine_runner
from generator.models import GenerationResult
from generator.pipeline import GeneratorOptions, generate_check
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.docker

EXAMPLES = [
    {
        "row": {"model_output": "The capital is Paris.", "scenario_result": "Paris"},
        "expected": True,
    },
    {"row": {"model_output": "It is Lyon.", "scenario_result": "Paris"}, "expected": False},
    {"row": {"model_output": "paris, of course", "scenario_result": "Paris"}, "expected": True},
]
GOOD = """\
def evaluate(model_output: str, scenario_result: str) -> bool:
    return str(scenario_result).lower() in model_output.lower()
"""
CASE_SENSITIVE = """\
def evaluate(model_output: str, scenario_result: str) -> bool:
    return str(scenario_result) in model_output
"""
WRONG_SIGNATURE = """\
def evaluate(output: str, expected: str) -> bool:
    return expected.lower() in output.lower()
"""
NETWORK = """\
import urllib.request

def evaluate(model_output: str, scenario_result: str) -> bool:
    urllib.request.urlopen("http://example.com")
    return True
"""
HANGS = """\
def evaluate(model_output: str, scenario_result: str) -> bool:
    while True:
        pass
"""


def fenced(code: str) -> str:
    return f"```python\n{code}```"


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    # docker_settings labels every container as a test container
    with SandboxRunner(docker_settings) as eng:
        yield eng


@pytest.fixture(scope="module")
def run(runner: SandboxRunner) -> RunRows:
    return engine_runner(runner, row_timeout_seconds=1.0)


def generate(fake: FakeLLM, run: RunRows, **kwargs: Any) -> GenerationResult:
    values: dict[str, Any] = {
        "description": "The answer names the expected city, ignoring case.",
        "requires_scenario_result": True,
        "examples": EXAMPLES,
        "llm": OpenAIClient(fake.settings(llm_max_retries=2)),
        "run": run,
        "options": GeneratorOptions(max_attempts=3),
        # shown by pytest when a test fails
        "on_attempt": lambda a: print(a.model_dump_json(exclude={"feedback"})),
    }
    values.update(kwargs)
    return generate_check(**values)


def test_good_code_first_time(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(fenced(GOOD))
    result = generate(fake_llm, run)
    assert result.accepted, result.message
    assert len(result.attempts) == 1
    assert (result.agreement.passed, result.agreement.total) == (3, 3)
    assert result.code == GOOD
    assert result.report is not None and result.report.signature == [
        "model_output",
        "scenario_result",
    ]
    assert [r.status for r in result.attempts[0].example_results] == [Status.OK] * 3


def test_code_in_a_fence_with_prose(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(
        "Sure! Here is a check that does this.\n\n"
        + fenced(GOOD)
        + "\n\nIt lower-cases both strings, so `PARIS` matches too. Usage:\n"
        + "```python\nprint(evaluate('Paris', 'paris'))\n```\n"
    )
    result = generate(fake_llm, run)
    assert result.accepted, result.message
    assert result.code == GOOD


def test_wrong_signature_then_repaired(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(fenced(WRONG_SIGNATURE)).reply(fenced(GOOD))
    result = generate(fake_llm, run)
    assert result.accepted
    first = result.attempts[0]
    assert first.report is not None and not first.report.valid
    assert first.example_results == []  # invalid code is not run
    feedback = fake_llm.last_message(1)
    assert "line 1" in feedback and "`output`" in feedback and "model_output" in feedback


def test_network_code_is_repaired(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(fenced(NETWORK)).reply(fenced(GOOD))
    result = generate(fake_llm, run)
    assert result.accepted
    feedback = fake_llm.last_message(1)
    assert "urllib" in feedback and "line 1" in feedback


def test_network_code_is_rejected_when_never_fixed(fake_llm: FakeLLM, run: RunRows) -> None:
    for _ in range(2):
        fake_llm.reply(fenced(NETWORK))
    result = generate(fake_llm, run, max_attempts=2)
    assert not result.accepted
    assert result.report is not None and not result.report.valid
    assert all(a.example_results == [] for a in result.attempts)  # never ran


def test_disagreement_then_repaired(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(fenced(CASE_SENSITIVE)).reply(fenced(GOOD))
    result = generate(fake_llm, run)
    assert result.accepted
    assert result.attempts[0].agreement.passed == 2
    feedback = fake_llm.last_message(1)
    assert 'example 3: row {"model_output": "paris, of course", "scenario_result": "Paris"}' in (
        feedback
    )
    assert "expected True, got False" in feedback
    assert "example 1" not in feedback and "example 2" not in feedback


def test_code_that_hangs_gets_timeout_feedback(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(fenced(HANGS)).reply(fenced(GOOD))
    result = generate(fake_llm, run, examples=EXAMPLES[:1])
    assert result.accepted
    assert result.attempts[0].example_results[0].status is Status.TIMEOUT
    feedback = fake_llm.last_message(1)
    assert "status timeout" in feedback and "expected True" in feedback


def test_all_attempts_fail_with_the_last_report(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.reply(fenced(WRONG_SIGNATURE)).reply("no code, sorry").reply(fenced(CASE_SENSITIVE))
    result = generate(fake_llm, run)
    assert not result.accepted
    assert len(result.attempts) == 3
    assert result.code == CASE_SENSITIVE  # the best attempt: valid, 2 of 3
    assert (result.agreement.passed, result.agreement.total) == (2, 3)
    assert "not accepted after 3 attempts" in result.message
    assert "expected True, got False" in result.message
    assert result.attempts[1].error is not None


def test_llm_429_and_500_are_retried(fake_llm: FakeLLM, run: RunRows) -> None:
    fake_llm.error(429, retry_after="0").error(500).reply(fenced(GOOD))
    result = generate(fake_llm, run)
    assert result.accepted
    assert len(fake_llm.requests) == 3
    assert len(result.attempts) == 1


def test_generated_check_runs_under_the_restricted_policy(
    fake_llm: FakeLLM, run: RunRows, runner: SandboxRunner
) -> None:
    fake_llm.reply(fenced(GOOD))
    result = generate(fake_llm, run)
    assert result.code is not None
    check = CodeCheck(source=result.code, policy=Policy.RESTRICTED)
    rows = [{"model_output": "PARIS!", "scenario_result": "Paris"}]
    (row,) = runner.run_check(check, rows)
    assert (row.status, row.score) == (Status.OK, True)
