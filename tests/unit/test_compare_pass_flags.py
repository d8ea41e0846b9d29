"""Compare uses a check's own pass flag (promptfoo, graders), lists regressions first,
and the CLI shows rounded scores."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from engine.cli import run_manage
from engine.runs.compare import compare_check, passed
from engine.storage.records import StoredResult


def flagged(row: int, score: float, flag: bool | None, status: str = "ok") -> StoredResult:
    return StoredResult(0, row, status, score, None, None, None, 1.0, flag)


def test_a_checks_own_pass_flag_makes_the_pass_rate_and_the_regressions() -> None:
    pairs = [
        ("r0", flagged(0, 0.2, False), flagged(0, 0.9, True)),  # fail -> pass
        ("r1", flagged(1, 0.9, True), flagged(1, 0.95, True)),  # score only
        ("r2", flagged(2, 0.7926000000000001, True), flagged(2, 0.1, False)),  # pass -> fail
    ]
    c = compare_check("tone", pairs, resamples=200)
    assert [(r.key, r.kind) for r in c.changed] == [
        ("r2", "pass_to_fail"),
        ("r1", "score"),
        ("r0", "fail_to_pass"),
    ]
    assert (c.changed[0].passed_a, c.changed[0].passed_b) == (True, False)
    assert c.pass_rate_a == pytest.approx(2 / 3)
    assert c.pass_rate_b == pytest.approx(2 / 3)
    assert c.pass_rate_delta is not None


def test_passed_is_the_flag_else_a_bool_score_and_none_for_a_row_that_did_not_score() -> None:
    assert passed(flagged(0, 0.9, False)) is False
    assert passed(StoredResult(0, 0, "ok", True, None, None, None, 1.0)) is True
    assert passed(StoredResult(0, 0, "ok", 0.5, None, None, None, 1.0)) is None
    assert passed(flagged(0, 0.9, True, "error")) is None


class _Remote:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.doc


def test_the_cli_lists_regressions_first_with_rounded_scores_and_pass_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    change = {"row_a": 2, "row_b": 2, "status_a": "ok", "status_b": "ok"}
    doc = {
        "matched": 3,
        "matched_by": "id",
        "only_a": 0,
        "only_b": 0,
        "checks": [
            {
                "check": "tone",
                "mean_delta": {"delta": -0.2, "low": -0.3, "high": -0.1, "significant": True},
                "pass_rate_delta": None,
                "changed_total": 2,
                "changed": [
                    {
                        **change,
                        "key": "r2",
                        "kind": "pass_to_fail",
                        "score_a": 0.7926000000000001,
                        "score_b": 0.1,
                        "passed_a": True,
                        "passed_b": False,
                    },
                    {
                        **change,
                        "key": "r0",
                        "kind": "fail_to_pass",
                        "score_a": False,
                        "score_b": True,
                        "passed_a": False,
                        "passed_b": True,
                    },
                ],
            }
        ],
    }
    monkeypatch.setattr(run_manage, "Remote", lambda server, key: _Remote(doc))
    shown = CliRunner().invoke(run_manage.run_compare, ["a", "b", "--api-key", "k"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[-2] == "    r2: pass -> fail (ok 0.793 pass -> ok 0.1 fail)"
    assert lines[-1] == "    r0: fail -> pass (ok False -> ok True)"
    assert "0.7926000000000001" not in shown.output
