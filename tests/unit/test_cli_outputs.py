"""Output paths (``-o``, a suite's ``output:``) are made ready before scoring, and an
``OSError`` a command lets through is one ``Error:`` line, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from engine.cli import main


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SCOREBOX_SERVER", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "a", "model_output": "{}"}) + "\n")
    (tmp_path / "afile").write_text("not a directory\n")
    return tmp_path


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_missing_output_directories_are_created(env: Path) -> None:
    # was: scored everything, printed the table, then a 40-line FileNotFoundError traceback
    result = cli("run", "--check", "is_json", "--data", "rows.jsonl", "-o", "out/deep/r.jsonl")
    assert result.exit_code == 0, result.output
    assert json.loads((env / "out/deep/r.jsonl").read_text())["score"] is True


def test_an_unwritable_output_stops_the_run_before_scoring_in_one_line(env: Path) -> None:
    result = cli("run", "--check", "is_json", "--data", "rows.jsonl", "-o", "afile/r.jsonl")
    assert result.exit_code == 1
    assert result.output == (
        "Error: cannot write the output file afile/r.jsonl: afile: a file where a directory "
        "is needed (fix the path or its permissions; nothing was scored)\n"
    )


def test_a_suite_output_path_is_checked_the_same_way(env: Path) -> None:
    (env / "scorebox.yaml").write_text(
        "data: rows.jsonl\nchecks: [is_json]\noutput: [afile/r.jsonl]\n"
    )
    result = cli("run")
    assert result.exit_code == 1
    assert result.output.startswith("Error: cannot write the output file ")
    assert "afile: a file where a directory is needed" in result.output
    assert "scored locally" not in result.output
    (env / "scorebox.yaml").write_text(
        "data: rows.jsonl\nchecks: [is_json]\noutput: [results/r.jsonl]\n"
    )
    assert cli("run").exit_code == 0
    assert (env / "results" / "r.jsonl").is_file()


def test_an_os_error_in_any_command_is_one_error_line(env: Path) -> None:
    result = cli("init", "afile/sub")
    assert result.exit_code == 1
    assert result.output == "Error: afile/sub: Not a directory\n"
