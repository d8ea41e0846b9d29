"""``engine.suites.testing.assert_scores`` and ``pytest --scorebox`` in a real inner pytest
session each (pytester) over built-ins: a test suite fails on a check's threshold, and says
which rows failed. The helper's own errors and the plugin's registration are unit tests
(tests/unit/test_testing_helper.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# imported up front: pytester's inline runs unload the modules they import, and numpy
# cannot be loaded twice in one process
import engine.builtins
import engine.cli.run  # noqa: F401
from tests.unit.test_testing_helper import ROWS


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    for name in ("SCOREBOX_SERVER", "SCOREBOX_LLM_BASE_URL", "SCOREBOX_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


TESTS = f"""
from engine.suites.testing import assert_scores

ROWS = {ROWS!r}

def test_passes():
    report = assert_scores(
        ROWS, [{{"name": "regex_match", "params": {{"pattern": "Paris"}}, "threshold": 0.5}}]
    )
    assert report.value("regex_match") == 0.5

def test_below_threshold_fails():
    assert_scores(
        ROWS,
        [{{"name": "regex_match", "params": {{"pattern": "Paris"}}}}, "is_json"],
        thresholds={{"regex_match": 0.9}},
    )
"""


def test_a_test_that_must_fail_fails_and_a_passing_one_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scores=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_below_threshold_fails*",
            "E*AssertionError: scorebox: 1 gate(s) failed",
            "E*regex_match: 0.5 < threshold 0.9",
            "E*regex_match (value 0.5): 1 failing row(s)",
            "E*row 1 id=b: score=False*model_output='Lyon, I think'",
        ]
    )
    # the failure points at the test's own call, not into scorebox's frames
    assert "engine/testing.py" not in result.stdout.str()
    # is_json is false on every row but has no threshold: not listed
    assert "is_json (value" not in result.stdout.str()


def test_fail_on_statuses_fail_the_test_with_the_error_of_each_row(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_judge=f"""
from engine.suites.testing import assert_scores

def test_fluent():
    assert_scores({ROWS!r}, ["fluency"])

def test_errors_allowed():
    assert_scores({ROWS!r}, ["fluency"], fail_on=())
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*rows with a --fail-on status: judge_error=2",
            "E*fluency (value -): 2 failing row(s)",
            "E*row 0 id=a: judge_error (*)*",
        ]
    )


def test_max_failures_and_numeric_thresholds(pytester: pytest.Pytester) -> None:
    rows = [{"model_output": "abc", "scenario_result": "abd"}, {"model_output": "x" * 9}]
    pytester.makepyfile(
        test_numbers=f"""
from engine.suites.testing import assert_scores

ROWS = {rows!r}

def test_distance_mean():
    # levenshtein_distance: 1 on row 0; row 1 has no scenario_result (skipped)
    assert_scores(ROWS, [{{"name": "levenshtein_distance", "threshold": 2}}])

def test_max_failures():
    assert_scores(ROWS, ["is_json"], max_failures=2)

def test_max_failures_broken():
    assert_scores(ROWS, ["is_json"], max_failures=1)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "E*levenshtein_distance: 1 < threshold 2",
            "E*row 0: score=1;*",
            "E*2 failing rows (false, or a --fail-on status) > --max-failures 1",
        ]
    )


# --- pytest --scorebox ----------------------------------------------------------------------


def _suite(pytester: pytest.Pytester, threshold: float) -> None:
    pytester.path.joinpath("rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    pytester.path.joinpath("scorebox.yaml").write_text(
        "data: rows.jsonl\n"
        "checks:\n"
        f"  - {{name: regex_match, params: {{pattern: Paris}}, threshold: {threshold}}}\n"
    )


def test_pytest_scorebox_passes_a_suite_that_holds(pytester: pytest.Pytester) -> None:
    _suite(pytester, 0.5)
    result = pytester.runpytest("--scorebox", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*scorebox.yaml::scorebox PASSED*"])


def test_pytest_scorebox_fails_a_suite_below_its_threshold(pytester: pytest.Pytester) -> None:
    _suite(pytester, 0.9)
    result = pytester.runpytest("--scorebox", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*scorebox.yaml: scorebox: 1 gate(s) failed",
            "*regex_match: 0.5 < threshold 0.9",
            "*row 1 id=b: score=False*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # without --scorebox the suite is not a test
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes()


def test_pytest_scorebox_finds_the_suite_beside_other_tests(pytester: pytest.Pytester) -> None:
    _suite(pytester, 0.9)
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests").joinpath("test_ok.py").write_text("def test_ok():\n    pass\n")
    result = pytester.runpytest("--scorebox", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    # a broken suite file is reported with its problems, not a traceback
    pytester.path.joinpath("scorebox.yaml").write_text("checks: [3]\n")
    broken = pytester.runpytest("--scorebox", "-p", "no:cacheprovider", "scorebox.yaml")
    broken.assert_outcomes(failed=1)
    broken.stdout.fnmatch_lines(["*scorebox.yaml:1: checks[[]0[]]: a check is a name*"])
