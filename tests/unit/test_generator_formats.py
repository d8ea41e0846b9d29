"""The generator writes a requested scorer format, its prompts read the format table."""

from __future__ import annotations

import pytest

from engine.contract.formats import FORMATS, GENERATOR_FORMATS, Format
from engine.llm.openai_client import OpenAIClient
from generator.pipeline import GeneratorOptions, generate_check
from generator.prompts import GenerationSpec, format_system_prompt, initial_messages
from generator.validators import restricted_validator
from tests.fake_llm import FakeLLM

OKAREO = (
    "```python\ndef evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n```"
)
GRADER = "```python\ndef grade(sample, item) -> float:\n    return 1.0\n```"
REWARD = (
    "```python\nfrom reward_kit import reward_function\n\n@reward_function\n"
    "def judge(messages, **kwargs):\n    return {'score': 1.0, 'reason': 'ok'}\n```"
)


@pytest.mark.parametrize("fmt", [f for f in GENERATOR_FORMATS if f is not Format.OKAREO])
def test_format_prompt_comes_from_the_table(fmt: Format) -> None:
    prompt = format_system_prompt(fmt)
    spec = FORMATS[fmt]
    assert spec.title in prompt and spec.example.rstrip() in prompt
    for name in spec.parameters:
        assert f"`{name}`" in prompt
    messages = initial_messages(GenerationSpec("d", format=fmt))
    assert messages[0]["content"] == prompt
    assert spec.title in messages[1]["content"]


def test_reward_kit_files_are_vetted_under_the_standard_policy() -> None:
    report = restricted_validator(
        REWARD.strip("`").removeprefix("python\n"), GenerationSpec("d", format=Format.REWARD_KIT)
    )
    assert report.valid, report.issues
    assert report.policy.value == "standard"


def test_wrong_format_is_fed_back_then_repaired(fake_llm: FakeLLM) -> None:
    fake_llm.reply(OKAREO).reply(GRADER)
    result = generate_check(
        "always full marks",
        llm=OpenAIClient(fake_llm.settings(llm_max_retries=0)),
        run=None,
        format="grader",
        options=GeneratorOptions(max_attempts=2),
    )
    assert result.accepted and len(result.attempts) == 2
    assert result.attempts[0].report is not None
    assert [i.code for i in result.attempts[0].report.issues] == ["wrong-format"]
    assert "OpenAI / Azure python grader" in fake_llm.requests[0]["messages"][0]["content"]
    assert result.code is not None and "def grade" in result.code
