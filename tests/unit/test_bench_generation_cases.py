"""The generation benchmark's cases are well-formed (the Docker self-test checks the rest)."""

from __future__ import annotations

import pytest

from bench.generation.cases import CASES, Case
from bench.generation.run import CaseOutcome, render_table
from engine.contract import OutputType
from generator.models import Example
from generator.verdicts import check_examples  # the generator's own expected-type rule


def test_at_least_30_distinct_cases() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({c.description for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_rows_and_expected_types(case: Case) -> None:
    rows = [Example.model_validate(e) for e in [*case.examples, *case.held_out]]
    check_examples(rows, OutputType(case.output_data_type))
    assert case.examples and case.held_out
    for example in rows:
        if case.requires_scenario_input:
            assert example.row.scenario_input is not None
        if case.requires_scenario_result:
            assert example.row.scenario_result is not None


def test_render_table_reports_the_rate() -> None:
    outcomes = [
        CaseOutcome("a", "bool", True, 1, "2/2", "3/3", True, 0.1),
        CaseOutcome("b", "int", False, 4, "1/2", "0/3", False, 0.2, "LLMError: down"),
    ]
    table = render_table(outcomes)
    assert "acceptance rate: 1/2 = 50.0%" in table
    assert "mean attempts: 2.50" in table
    assert "LLMError: down" in table
