"""The property tests' budget: smaller only in the fast loop, and never under CI."""

from __future__ import annotations

import pytest

from tests.hypothesis_budget import FLOOR, examples


@pytest.mark.parametrize(
    ("fast", "ci", "expected"),
    [
        (None, None, 200),  # a plain pytest run, and scripts/dev.sh test outside CI
        ("1", None, 20),  # scripts/dev.sh test-fast
        ("1", "true", 200),  # CI runs the full budget, whatever else is set
        (None, "true", 200),
        ("0", None, 200),
    ],
)
def test_the_full_budget_runs_unless_the_fast_loop_asks_outside_ci(
    monkeypatch: pytest.MonkeyPatch, fast: str | None, ci: str | None, expected: int
) -> None:
    for name, value in (("SCOREBOX_TEST_FAST", fast), ("CI", ci)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert examples(200) == expected


def test_a_small_budget_keeps_its_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("SCOREBOX_TEST_FAST", "1")
    assert examples(30) == FLOOR
