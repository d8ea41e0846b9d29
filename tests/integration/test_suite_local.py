"""The suite file and the pytest helper with a .py check in the real sandbox:
``scorebox init`` then ``scorebox run`` scores the example; ``assert_scores`` fails a
test on a code check's threshold, through the same local path as ``scorebox run``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

# imported up front: pytester's inline runs unload the modules they import, and numpy
# cannot be loaded twice in one process
import engine.builtins
import engine.cli.run  # noqa: F401
from engine.cli import main
from engine.settings import Settings
from engine.suites.testing import assert_suite

pytestmark = pytest.mark.docker


@pytest.fixture
def sandbox_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_settings: Settings) -> Path:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SCOREBOX_IMAGE", docker_settings.image)
    monkeypatch.setenv("SCOREBOX_CONTAINER_LABELS", json.dumps(docker_settings.container_labels))
    if docker_settings.runtime:
        monkeypatch.setenv("SCOREBOX_RUNTIME", docker_settings.runtime)
    for name in ("SCOREBOX_SERVER", "SCOREBOX_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_then_run_scores_the_example_suite(sandbox_env: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["init"], catch_exceptions=False).exit_code == 0
    result = runner.invoke(main, ["run", "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    records = [
        json.loads(line)
        for line in (sandbox_env / "scorebox-results.jsonl").read_text().splitlines()
    ]
    mentions = [
        (r["row_id"], r["status"], r["score"]) for r in records if r["check"] == "mentions_expected"
    ]
    assert mentions == [
        ("q1", "ok", True),
        ("q2", "ok", True),
        ("q3", "ok", True),
        ("q4", "ok", False),
    ]
    assert {r["check"] for r in records} == {
        "mentions_expected",
        "regex_match",
        "compression_ratio",
    }
    assert "q4" in (sandbox_env / "scorebox-report.html").read_text()
    assert_suite("scorebox.yaml")  # the helper agrees with the CLI

    suite = sandbox_env / "scorebox.yaml"
    suite.write_text(suite.read_text().replace("threshold: 0.75", "threshold: 0.9"))
    failed = runner.invoke(main, ["run", "--no-progress"], catch_exceptions=False)
    assert failed.exit_code == 3, failed.output
    assert "mentions_expected: 0.75 < threshold 0.9" in failed.output
    with pytest.raises(AssertionError, match=r"(?s)mentions_expected.*row 3 id=q4: score=False"):
        assert_suite(suite)


def test_assert_scores_fails_a_test_on_a_code_checks_threshold(
    sandbox_env: Path, pytester: pytest.Pytester
) -> None:
    pytester.makefile(
        ".py",
        short=(
            "def evaluate(model_output: str) -> bool:\n"
            "    if model_output == 'boom':\n"
            "        raise ValueError('no bombs')\n"
            "    return len(model_output) < 10\n"
        ),
    )
    rows = [{"model_output": "tiny"}, {"model_output": "far too long an answer"}]
    pytester.makepyfile(
        test_short=f"""
from engine.suites.testing import assert_scores

def test_half_are_short():
    report = assert_scores({rows!r}, [{{"name": "short.py", "threshold": 0.5}}])
    assert report.value("short") == 0.5

def test_all_are_short():
    assert_scores({rows!r}, ["short.py"], thresholds={{"short": 1.0}})

def test_a_raising_check_fails_on_error():
    assert_scores([{{"model_output": "boom"}}], ["short.py"])
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "E*short: 0.5 < threshold 1",
            "E*row 1: score=False; model_output='far too long an answer'",
            "E*rows with a --fail-on status: error=1",
            "E*row 0: error (*no bombs*)*",
        ]
    )
