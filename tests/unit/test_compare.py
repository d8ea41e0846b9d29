"""The run comparison's pure parts: paired bootstrap, row matching, changed rows."""

from __future__ import annotations

import pytest

from engine.runs.compare import compare_check, match_rows, paired_bootstrap
from engine.storage.records import StoredResult


def result(row: int, score: bool | float | None, status: str = "ok") -> StoredResult:
    return StoredResult(0, row, status, score, None, None, None, 1.0)


def test_bootstrap_interval_brackets_the_delta_and_is_reproducible() -> None:
    a = [0.5, 0.6, 0.7, 0.4, 0.5, 0.6] * 10
    b = [x + 0.1 for x in a]
    first = paired_bootstrap(a, b)
    assert first.delta == pytest.approx(0.1)
    assert first.low == pytest.approx(0.1) and first.high == pytest.approx(0.1)
    assert first.significant
    noisy_b = [x + (0.2 if i % 2 else -0.2) for i, x in enumerate(a)]
    noisy = paired_bootstrap(a, noisy_b)
    assert noisy.low < 0 < noisy.high
    assert not noisy.significant
    assert paired_bootstrap(a, noisy_b) == noisy  # fixed seed


def test_bootstrap_refuses_unpaired_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap([1.0], [1.0, 2.0])


def test_rows_match_by_id_when_both_runs_have_ids_else_by_input() -> None:
    a = {0: {"id": "x", "model_output": "1"}, 1: {"id": "y", "model_output": "2"}}
    b = {0: {"id": "y", "model_output": "3"}, 1: {"id": "z", "model_output": "4"}}
    assert match_rows(a, b) == ("id", [("y", 1, 0)])
    a2 = {0: {"scenario_input": "q1"}, 1: {"scenario_input": "q2"}}
    b2 = {0: {"scenario_input": "q2"}, 1: {"scenario_input": "q1"}}
    by, pairs = match_rows(a2, b2)
    assert by == "input"
    assert [(x, y) for _, x, y in pairs] == [(0, 1), (1, 0)]


def test_changed_rows_list_pass_to_fail_first() -> None:
    pairs = [
        ("r0", result(0, False), result(0, True)),
        ("r1", result(1, True), result(1, True)),
        ("r2", result(2, True), result(2, None, "error")),
        ("r3", result(3, True), result(3, False)),
    ]
    c = compare_check("c", pairs, resamples=200)
    assert [(r.key, r.kind) for r in c.changed] == [
        ("r3", "pass_to_fail"),
        ("r2", "status"),
        ("r0", "fail_to_pass"),
    ]
    assert c.scored == 3
    assert c.pass_rate_a == pytest.approx(2 / 3)
    assert c.pass_rate_b == pytest.approx(2 / 3)
    assert c.pass_rate_delta is not None and c.pass_rate_delta.delta == pytest.approx(0.0)
