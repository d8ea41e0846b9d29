"""``scorebox run`` with .py checks in the real sandbox: a check that can never score fails
the run (exit 3) and the terminal says why, row by row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import main
from engine.settings import Settings

pytestmark = pytest.mark.docker

ROWS = [{"id": "q1", "model_output": "a"}, {"id": "q2", "model_output": "b"}]


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
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return tmp_path


def test_a_check_returning_a_string_fails_the_run_and_says_why(sandbox_env: Path) -> None:
    (sandbox_env / "verdict.py").write_text(
        'def evaluate(model_output: str):\n    return "PASS"\n', encoding="utf-8"
    )
    (sandbox_env / "lookup.py").write_text(
        "def evaluate(model_output: str) -> bool:\n    return {}['context']\n", encoding="utf-8"
    )
    args = ["run", "--no-progress", "--data", "rows.jsonl"]
    result = CliRunner().invoke(
        main, [*args, "--check", "verdict.py", "--check", "lookup.py"], catch_exceptions=False
    )
    assert result.exit_code == 3, result.output  # was 0: invalid_score was not a gate
    out = result.output
    assert "verdict: 2 of 2 rows did not score (invalid_score=2)" in out
    assert "    invalid_score, rows 0 (id=q1), 1 (id=q2): " in out
    assert "lookup: 2 of 2 rows did not score (error=2)" in out
    assert "    error, rows 0 (id=q1), 1 (id=q2): KeyError: 'context' (line 2, in evaluate)" in out
    assert "FAILED: rows with a --fail-on status: error=2, invalid_score=2" in out
    assert "verdict (value -): 2 failing row(s)\n  row 0 id=q1: invalid_score (" in out
