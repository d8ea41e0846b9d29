"""The same checks give identical results in the sandbox under both policies (real Docker)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.contract import Policy, Status
from engine.sandbox.runner import CodeCheck, SandboxRunner
from tests.integration.conftest import FAST
from tests.unit.test_restricted import HOSTILE, ROWS, RUNNABLE

pytestmark = pytest.mark.docker


def outcome(runner: SandboxRunner, source: str, policy: Policy) -> list[tuple[Any, ...]]:
    results = runner.run_check(CodeCheck(source=source, policy=policy), ROWS, FAST)
    return [(r.status, r.score, type(r.score), r.explanation, r.output, r.error) for r in results]


@pytest.mark.parametrize("source", RUNNABLE)
def test_identical_results_under_both_policies(runner: SandboxRunner, source: str) -> None:
    standard = outcome(runner, source, Policy.STANDARD)
    restricted = outcome(runner, source, Policy.RESTRICTED)
    assert any(row[0] is Status.OK for row in standard), standard
    assert restricted == standard


def test_okareo_union_annotation_without_import_loads_under_both_policies(
    runner: SandboxRunner,
) -> None:
    source = (
        "from okareo.checks import CodeBasedCheck\n\n"
        "class Check(CodeBasedCheck):\n"
        "    @staticmethod\n"
        "    def evaluate(model_output: str) -> Union[bool, int, float]:\n"
        "        return len(model_output) > 3\n"
    )
    for policy in Policy:
        assert outcome(runner, source, policy)[0][:2] == (Status.OK, True), policy


@pytest.mark.parametrize(("source", "exc", "fragment", "code"), HOSTILE)
def test_hostile_checks_fail_inside_the_sandbox_under_restricted(
    runner: SandboxRunner,
    source: str,
    exc: type[BaseException] | None,
    fragment: str,
    code: str | None,
) -> None:
    results = runner.run_check(CodeCheck(source=source, policy=Policy.RESTRICTED), ROWS, FAST)
    got = [(r.status, r.score) for r in results]
    if exc is None:  # the guard answers "no" instead of raising (e.g. hasattr on a dunder)
        assert got == [(Status.OK, False)] * len(ROWS)
        return
    assert got == [(Status.ERROR, None)] * len(ROWS)
    assert all(fragment in (r.error or "") for r in results), results[0].error
