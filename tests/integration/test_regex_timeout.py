"""The regex_match builtin under a catastrophic pattern: the row times out (its real
deadline runs out, hence not a unit test) and the rest of the batch is still scored."""

from __future__ import annotations

from engine.builtins import build_builtins
from engine.contract import Status
from engine.models import Row


def test_regex_match_catastrophic_backtracking_times_out_and_the_batch_goes_on() -> None:
    check = build_builtins()["regex_match"]
    rows = [Row(model_output="a" * 40 + "!"), Row(model_output="aaa")]
    results = check.score(rows, {"pattern": r"(a|aa)+$"})
    assert [r.status for r in results] == [Status.TIMEOUT, Status.OK]
    assert "simplify" in (results[0].error or "")
    assert results[1].score is True
