"""A bad ``SCOREBOX_*`` value is one line naming the variable, the value, what is expected
and an example, with exit code 2 (the CLI, ``serve``, ``worker``); list settings take
comma-separated values as well as JSON."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from engine.cli import main
from engine.setting_values import SettingValueError
from engine.settings import Settings


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "SCOREBOX_MAX_BODY_MB",
            "abc",
            "SCOREBOX_MAX_BODY_MB='abc' is not valid: expected a number greater than 0, "
            "e.g. SCOREBOX_MAX_BODY_MB=32.0",
        ),
        (
            "SCOREBOX_MEMORY_MB",
            "lots",
            "SCOREBOX_MEMORY_MB='lots' is not valid: expected a whole number at least 32 and "
            "at most 65536, e.g. SCOREBOX_MEMORY_MB=256",
        ),
        (
            "SCOREBOX_REUSE",
            "sometimes",
            "SCOREBOX_REUSE='sometimes' is not valid: expected one of check, never, "
            "e.g. SCOREBOX_REUSE=check",
        ),
        (
            "SCOREBOX_MIGRATE_ON_START",
            "maybe",
            "SCOREBOX_MIGRATE_ON_START='maybe' is not valid: expected true or false, "
            "e.g. SCOREBOX_MIGRATE_ON_START=true",
        ),
        (
            "SCOREBOX_LLM_MODEL_MAP",
            "gpt",
            "SCOREBOX_LLM_MODEL_MAP='gpt' is not valid (not JSON: Expecting value: line 1 "
            'column 1 (char 0)): expected a JSON object ({"key": "value"}), '
            'e.g. SCOREBOX_LLM_MODEL_MAP=\'{"key": "value"}\'',
        ),
        (
            "SCOREBOX_PACKAGES_DENY",
            '["pyjokes"',
            "SCOREBOX_PACKAGES_DENY='[\"pyjokes\"' is not valid (not JSON: Expecting ',' "
            "delimiter: line 1 column 11 (char 10)): expected a comma-separated list (a,b) or "
            'a JSON array (["a", "b"]), e.g. SCOREBOX_PACKAGES_DENY=a,b',
        ),
    ],
)
def test_a_bad_value_names_variable_value_expectation_and_example(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingValueError) as caught:
        Settings()
    assert str(caught.value) == message
    # the same line from any command, with exit code 2 (was a 62-line traceback)
    for command in (["serve"], ["worker"], ["env", "list"]):
        result = CliRunner().invoke(main, command, catch_exceptions=False)
        assert result.exit_code == 2, (command, result.output)
        assert result.output == f"Error: {message}\n", command


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("pyjokes", ["pyjokes"]),
        ("pyjokes,foo", ["pyjokes", "foo"]),
        (" pyjokes , foo* ,", ["pyjokes", "foo*"]),
        ('["pyjokes", "foo"]', ["pyjokes", "foo"]),
        ("", []),
    ],
)
def test_list_settings_take_comma_separated_values_or_json(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: list[str]
) -> None:
    monkeypatch.setenv("SCOREBOX_PACKAGES_DENY", value)
    assert Settings().packages_deny == expected


def test_a_bad_keyword_argument_stays_the_callers_validation_error() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Settings(pool_size=-1)
