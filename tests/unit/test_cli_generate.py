"""``scorebox check generate`` against the fake LLM (model checks need no sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import main
from tests.fake_llm import FakeLLM


@pytest.fixture
def env(fake_llm: FakeLLM, tmp_path: Path) -> dict[str, str]:
    return {
        "SCOREBOX_LLM_BASE_URL": fake_llm.base_url,
        "SCOREBOX_LLM_API_KEY": "k",
        "SCOREBOX_LLM_MAX_RETRIES": "0",
        "SCOREBOX_DATA_DIR": str(tmp_path),
    }


def test_generate_model_check_writes_the_template(
    fake_llm: FakeLLM, env: dict[str, str], tmp_path: Path
) -> None:
    fake_llm.reply("```text\nIs {result} in {output}?\n```")
    fake_llm.reply("```text\nIs {scenario_result} in {model_output}? Pass or Fail.\n```")
    fake_llm.reply("Yes, it is.\nRESULT: PASS")  # the judge, on the one example
    out = tmp_path / "judge.txt"
    result = CliRunner().invoke(
        main,
        [
            "check",
            "generate",
            "answer is right",
            "--type",
            "model",
            "--requires-scenario-result",
            "--example",
            '{"model_output": "Paris", "scenario_result": "Paris", "expected": true}',
            "-o",
            str(out),
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert out.read_text() == "Is {scenario_result} in {model_output}? Pass or Fail."
    assert "attempt 1: invalid" in result.output
    assert "attempt 2: accepted: agrees with 1/1 examples" in result.output
    assert '"model_output": "Paris"' in fake_llm.requests[0]["messages"][1]["content"]
    # the exact next commands (a bool check is judged pass/fail)
    assert (
        f"  scorebox check push {out} --check-type pass_fail --origin generated\n" in result.stderr
    )
    assert "  scorebox run --check judge --data rows.jsonl\n" in result.stderr


def test_generate_model_check_to_stdout_says_where_to_save_it(
    fake_llm: FakeLLM, env: dict[str, str]
) -> None:
    fake_llm.reply("```text\nRate {model_output} from 1 to 5.\n```")
    fake_llm.reply("Fine.\nSCORE: 4")
    result = CliRunner().invoke(
        main,
        [
            "check",
            "generate",
            "rate it",
            "--type",
            "model",
            "--output-type",
            "int",
            "--example",
            '{"model_output": "ok", "expected": 4}',
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "Rate {model_output} from 1 to 5.\n"
    assert "save the output above as check.txt (or pass -o check.txt)" in result.stderr
    assert (
        "  scorebox check push check.txt --check-type score --origin generated\n" in result.stderr
    )
    assert "  scorebox run --check check --data rows.jsonl\n" in result.stderr


def test_not_accepted_exits_1_and_writes_nothing(
    fake_llm: FakeLLM, env: dict[str, str], tmp_path: Path
) -> None:
    fake_llm.reply("```text\n{nope}\n```")
    out = tmp_path / "judge.txt"
    result = CliRunner().invoke(
        main,
        ["check", "generate", "x", "--type", "model", "--max-attempts", "1", "-o", str(out)],
        env=env,
    )
    assert result.exit_code == 1
    assert not out.exists()
    assert "not accepted after 1 attempt;" in result.output


def test_unconfigured_llm_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "SCOREBOX_LLM_BASE_URL",
        "SCOREBOX_LLM_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, ["check", "generate", "x", "--type", "model"])
    assert result.exit_code == 1
    assert "SCOREBOX_LLM_BASE_URL" in result.output


def test_bad_example_json(env: dict[str, str]) -> None:
    result = CliRunner().invoke(main, ["check", "generate", "x", "--example", "{"], env=env)
    assert result.exit_code == 2
    assert "--example 1: not JSON" in result.output
