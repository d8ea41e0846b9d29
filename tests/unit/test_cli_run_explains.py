"""``scorebox run`` says why rows failed: the first distinct messages under the summary table,
the failing rows of a broken gate, a check that never scores fails the run. Built-ins and
fabricated records only (tests/integration/test_cli_run_sandbox.py does it with .py checks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from engine.cli import main
from engine.names import DEFAULT_FAIL_ON
from engine.runs.export import Gates
from engine.suites.gates import broken_gates, failing_rows, row_reasons
from engine.suites.testing import failure_message

ROWS = [{"id": "a", "model_output": "x"}, {"id": "b", "model_output": "y"}]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    for name in ("SCOREBOX_SERVER", "SCOREBOX_LLM_BASE_URL", "SCOREBOX_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_terminal_says_why_rows_did_not_score_and_lists_the_failing_rows(data: Path) -> None:
    # a judge without an endpoint: judge_error on every row (was "judge_error=2" and nothing more)
    result = cli("run", "--check", "fluency", "--check", "is_json", "--data", str(data))
    assert result.exit_code == 3, result.output
    out = result.output
    assert "rows that did not score:\n  fluency: 2 of 2 rows did not score (judge_error=2)\n" in out
    assert (
        "    judge_error, rows 0 (id=a), 1 (id=b): no LLM endpoint configured: set "
        "SCOREBOX_LLM_BASE_URL" in out
    )
    assert "FAILED: rows with a --fail-on status: judge_error=2" in out
    # the failing rows, as assert_scores lists them
    assert "fluency (value -): 2 failing row(s)\n  row 0 id=a: judge_error (no LLM endpoint" in out
    assert "is_json:" not in out.split("rows that did not score:")[1]


def test_a_check_with_no_ok_row_fails_the_run_whatever_fail_on_lists(data: Path) -> None:
    result = cli("run", "--check", "fluency", "--data", str(data), "--fail-on", "error")
    assert result.exit_code == 3, result.output
    assert (
        "FAILED: fluency: no row scored ok (judge_error=2); a check that never scores cannot "
        "pass" in result.output
    )
    assert "fluency (value -): 2 failing row(s)" in result.output
    off = cli("run", "--check", "fluency", "--data", str(data), "--fail-on", "none")
    assert off.exit_code == 0, off.output
    assert "rows that did not score:" in off.output  # still explained, not failed


def test_invalid_score_is_in_the_default_fail_on() -> None:
    assert "invalid_score" in DEFAULT_FAIL_ON
    assert "invalid_score" in Gates().fail_on


RECORDS = [
    {"row_index": i, "row_id": f"r{i}", "check": "safe_link", "status": status, "score": None,
     "error": error, "model_output": "out"}
    for i, (status, error) in enumerate(
        [
            ("error", "KeyError: 'context'\nTraceback (check frames):\n  line 5, in evaluate"),
            ("error", "KeyError: 'context'\nTraceback (check frames):\n  line 5, in evaluate"),
            ("invalid_score", "score must be bool, int or float, got str 'PASS'"),
            ("error", "ValueError: a"),
            ("error", "ValueError: b"),
        ]
    )
]  # fmt: skip


def test_row_reasons_group_distinct_messages_with_their_rows() -> None:
    assert row_reasons(RECORDS) == [
        "safe_link: 5 of 5 rows did not score (error=4, invalid_score=1)",
        "  error, rows 0 (id=r0), 1 (id=r1): KeyError: 'context' (line 5, in evaluate)",
        "  invalid_score, row 2 (id=r2): score must be bool, int or float, got str 'PASS'",
        "  error, row 3 (id=r3): ValueError: a",
        "  ... 1 more distinct message(s)",
    ]
    assert row_reasons([{**RECORDS[0], "status": "ok", "score": True}]) == []


def test_never_scoring_check_fails_and_the_message_is_assert_scores_one() -> None:
    invalid = [{**r, "status": "invalid_score"} for r in RECORDS]
    gates = Gates(fail_on=("error",))
    assert broken_gates(invalid, gates) == [
        "safe_link: no row scored ok (invalid_score=5); a check that never scores cannot pass"
    ]
    assert failing_rows(invalid, gates)[0] == "safe_link (value -): 5 failing row(s)"
    message = failure_message(invalid, gates)
    assert message is not None
    assert message.splitlines()[:2] == [
        "scorebox: 1 gate(s) failed",
        "  safe_link: no row scored ok (invalid_score=5); a check that never scores cannot pass",
    ]
    assert broken_gates(invalid, Gates(fail_on=())) == []  # --fail-on none turns it off
