"""The bounded, balanced choice of rows a generator message carries (generator.repair)."""

from __future__ import annotations

from engine.contract import Status
from generator.models import Example, ExampleResult
from generator.prompts import GenerationSpec, feedback_message, task_prompt
from generator.repair import RowBudget, within_budget


def _pick(items: list[tuple[str, str]], rows: int, chars: int) -> list[tuple[str, str]]:
    return within_budget(items, lambda x: x[0], lambda x: len(x[1]), RowBudget(rows, chars))


def test_round_robin_over_groups_in_original_order() -> None:
    items = [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("a", "a4"), ("b", "b2")]
    # 4 rows: two of each group, not the first four of the list
    assert _pick(items, 4, 1000) == [("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]
    assert _pick(items, 100, 1000) == items


def test_the_size_bound_passes_over_rows_too_large_and_keeps_the_first() -> None:
    items = [("a", "x" * 50), ("a", "y" * 30), ("a", "z" * 5)]
    assert _pick(items, 10, 40) == [("a", "x" * 50)]  # the first is always taken
    assert _pick(items, 10, 60) == [("a", "x" * 50), ("a", "z" * 5)]  # y does not fit, z does
    assert _pick([], 10, 10) == []


def _failures(n: int) -> list[tuple[ExampleResult, Example]]:
    out = []
    for i in range(n):
        expected = i % 2 == 0
        example = Example(row={"model_output": f"row {i}"}, expected=expected)
        result = ExampleResult(
            index=i, expected=expected, status=Status.OK, score=not expected, agreed=False
        )
        out.append((result, example))
    return out


def test_a_repair_message_carries_a_bounded_sample_and_says_how_many_in_all() -> None:
    text = feedback_message(
        attempt=1, failures=_failures(30), passed=70, total=100, budget=RowBudget(6, 10_000)
    )
    assert "It disagrees with 30 of 100 labelled examples (70 agreed); 6 of them below" in text
    assert text.count("- example ") == 6
    # both kinds of mistake: three expected True, three expected False
    assert text.count("expected True, got False") == 3
    assert text.count("expected False, got True") == 3
    whole = feedback_message(attempt=1, failures=_failures(3), passed=0, total=3)
    assert "It disagrees with 3 of 3 labelled examples (0 agreed):\n" in whole


def test_the_first_message_shows_a_bounded_sample_of_many_examples() -> None:
    examples = tuple(e for _, e in _failures(50))
    text = task_prompt(GenerationSpec("says yes", examples=examples), RowBudget(10, 100_000))
    assert text.count(". row: ") == 10
    assert "40 more labelled examples are not shown here" in text
    assert "more labelled examples" not in task_prompt(
        GenerationSpec("says yes", examples=examples[:3])
    )
