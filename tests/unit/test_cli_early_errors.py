"""Mistakes found before scoring and described truly: a misspelt ``--threshold`` or status
is a usage error (exit 2) with a did-you-mean, a missing check file is "file not found",
and ``check validate`` says what a file is and which packages it declares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from engine.cli import main

PLAIN = "def evaluate(model_output: str) -> bool:\n    return 'sorry' not in model_output\n"
DECLARED = (
    '# /// script\n# dependencies = ["textstat==0.7.3"]\n# ///\nimport textstat\n\n'
    "def evaluate(model_output: str) -> float:\n"
    "    return float(textstat.flesch_reading_ease(model_output))\n"
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    for name in ("SCOREBOX_SERVER", "SCOREBOX_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "a", "model_output": "x"}) + "\n")
    return tmp_path


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_misspelt_threshold_is_a_usage_error_before_scoring(env: Path) -> None:
    # was: the whole run, then exit 3 "--threshold safe_link: the run has no check"
    result = cli(
        "run", "--check", "fluency", "--check", "regex_match", "--param", "regex_match.pattern=x",
        "--data", "rows.jsonl", "--threshold", "regex_mach=0.5",
    )  # fmt: skip
    assert result.exit_code == 2
    assert (
        "Error: Invalid value for --threshold: regex_mach: the run has no check 'regex_mach'; "
        "did you mean regex_match? its checks are fluency, regex_match (a .py check is named "
        "by its file's stem)\n"
    ) in result.output
    assert "did not score" not in result.output and "scored locally" not in result.output


def test_a_misspelt_status_has_a_did_you_mean_on_the_flag_and_in_the_suite(env: Path) -> None:
    flag = cli("run", "--check", "is_json", "--data", "rows.jsonl", "--fail-on", "invalid_scor")
    assert flag.exit_code == 2
    assert "unknown status invalid_scor; did you mean invalid_score? use statuses" in flag.output
    (env / "scorebox.yaml").write_text("data: rows.jsonl\nchecks: [is_json]\nfail_on: [eror]\n")
    suite = cli("run")
    assert suite.exit_code == 2
    assert "scorebox.yaml:3: fail_on[0]: Input should be" in suite.output
    assert "did you mean 'error'? (got \"eror\")" in suite.output


def test_a_missing_check_file_is_file_not_found_before_anything_is_scored(env: Path) -> None:
    # was: "'checks/safe_link.py' is neither a .py file nor a built-in", after is_json scored
    result = cli(
        "run", "--check", "is_json", "--check", "checks/safe_link.py", "--data", "rows.jsonl"
    )
    assert result.exit_code == 1
    assert result.output == (
        "Error: file not found: checks/safe_link.py (a check file's path is relative to the "
        "current directory, or to the suite file)\n"
    )
    typo = cli("run", "--check", "is_jsn", "--data", "rows.jsonl")
    assert typo.exit_code == 1
    assert "'is_jsn' is neither a .py file nor a built-in (did you mean is_json?)" in typo.output


def test_validate_labels_a_plain_function_and_names_no_format_when_none_fits(env: Path) -> None:
    (env / "plain.py").write_text(PLAIN)
    result = cli("check", "validate", "plain.py")
    assert result.exit_code == 0, result.output
    # was: "format:      Okareo CodeBasedCheck (okareo)"
    assert "  format:      plain function (it also runs as an Okareo check)\n" in result.output
    assert "packages:" not in result.output
    (env / "nothing.py").write_text("x = 1\n")
    report = json.loads(cli("check", "validate", "--json", "nothing.py").output)
    assert report["valid"] is False and report["format"] is None and report["packages"] is None
    assert json.loads(cli("check", "validate", "--json", "plain.py").output)["format"] == "okareo"


def test_validate_shows_declared_packages_and_the_environment(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOREBOX_DOCKER_HOST", "tcp://127.0.0.1:1")  # no engine to ask
    (env / "readability.py").write_text(DECLARED)
    result = cli("check", "validate", "readability.py")
    assert result.exit_code == 0, result.output
    assert "  packages:    textstat==0.7.3 (PEP 723 block, line 1)\n" in result.output
    assert "  environment: unknown (cannot ask the Docker engine: " in result.output
    report = json.loads(cli("check", "validate", "--json", "readability.py").output)
    assert report["packages"]["requirements"] == ["textstat==0.7.3"]
    assert report["packages"]["built"] is None


def test_threshold_names_are_what_results_carry() -> None:
    from engine.cli.params import check_threshold_names, result_names

    refs: list[str | dict[str, Any]] = [
        "checks/no_sorry.py",
        "builtin:is_json",
        "brevity@2",
        {"name": "tone", "version": 3},
    ]
    assert result_names(refs) == ["no_sorry", "is_json", "brevity@2", "brevity", "tone", "tone@3"]
    check_threshold_names({"no_sorry": 1, "brevity": 1, "brevity@2": 1, "tone@3": 1}, refs)
