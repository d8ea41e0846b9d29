"""The validator and `scorebox check validate` read the scorer-format table."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import main
from engine.contract.formats import Format
from engine.validation import validate

SEED_SHAPE = (
    "from reward_kit import reward_function\n\n"
    "@reward_function\n"
    "def evaluate(messages: list[dict], criteria: str = None, **kwargs) -> dict:\n"
    "    return {'score': 1.0, 'reasoning': 'ok'}\n"
)


@pytest.mark.parametrize(
    ("source", "fmt", "entry"),
    [
        (SEED_SHAPE, Format.REWARD_KIT, "evaluate"),
        ("def grade(sample, item):\n    return 1.0\n", Format.GRADER, "grade"),
        ("def get_assert(output, context):\n    return True\n", Format.PROMPTFOO, "get_assert"),
        ("def handler(input, output, expected):\n    return 1\n", Format.BRAINTRUST, "handler"),
        ("def evaluate(output, reference):\n    return 1\n", Format.BRAINTRUST, "evaluate"),
        ("def judge(outputs, reference_outputs):\n    return 1\n", Format.LANGSMITH, "judge"),
    ],
)
def test_other_formats_validate_with_their_entry_and_bindings(
    source: str, fmt: Format, entry: str
) -> None:
    report = validate(source)
    assert report.valid, report.issues
    assert (report.format, report.entry) == (fmt, entry)
    assert report.bindings and report.issues == []  # reward_kit is importable in the sandbox


def test_okareo_files_keep_their_own_rules_and_messages() -> None:
    report = validate("def evaluate(model_output, foo):\n    return 1\n")
    assert not report.valid and [i.code for i in report.issues] == ["unknown-parameter"]
    assert validate("def evaluate(model_output):\n    return 1\n").format is Format.OKAREO


def test_several_fitting_functions_are_refused_and_entry_picks_one() -> None:
    source = "def a(output, expected):\n    return 1\n\ndef b(outputs):\n    return 1\n"
    report = validate(source)
    assert not report.valid
    assert report.issues[0].code == "no-entrypoint" and "`a`, `b`" in report.issues[0].message
    picked = validate(source, entry="b")
    assert picked.valid and picked.format is Format.LANGSMITH and picked.entry == "b"


def test_reward_function_without_kwargs_is_refused() -> None:
    report = validate("@reward_function\ndef f(messages):\n    return 1\n")
    assert not report.valid and "**kwargs" in report.issues[0].message


def test_cli_validate_says_format_entry_and_bindings(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(SEED_SHAPE)
    result = CliRunner().invoke(main, ["check", "validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "format:      reward-kit" in result.output
    assert "entrypoint:  function evaluate" in result.output
    assert "messages <- the row's messages" in result.output
    assert "criteria <- its default" in result.output
    assert "**kwargs <- nothing" in result.output


def test_cli_validate_entry_option(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text(
        "def first(output, context):\n    return True\n\ndef second(a, b):\n    return 1\n"
    )
    result = CliRunner().invoke(main, ["check", "validate", str(path), "--entry", "second"])
    assert result.exit_code == 0, result.output
    assert "promptfoo" in result.output
    assert "a <- the row's output, else model_output" in result.output
