"""The host tells the harness when a check's source is an Okareo check, found once per
source; the check's process then loads it without parsing it again, to the same entry
(engine/sandbox/load_hints.py, engine/harness/child.py)."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

import pytest

from engine.contract import EntrypointError, Policy
from engine.harness import child
from engine.harness.ahead import LOAD_KEYS
from engine.models import Limits, Row
from engine.sandbox import load_hints
from engine.sandbox.jobs import job_of
from engine.sandbox.load_hints import okareo_source

FUNCTION = "def evaluate(model_output: str, scenario_input: str = '') -> bool:\n    return True\n"
CHECK_CLASS = textwrap.dedent(
    """
    class Check:
        def evaluate(self, model_output: str) -> float:
            return 0.5
    """
)
STATIC = textwrap.dedent(
    """
    class Check:
        @staticmethod
        def evaluate(model_output: str, scenario_result: str) -> int:
            return 1
    """
)
PROMPTFOO = "def get_assert(output, context):\n    return True\n"
BROKEN = "def evaluate(model_output:\n"


@pytest.mark.parametrize(
    ("source", "entry", "okareo"),
    [
        (FUNCTION, None, True),
        (CHECK_CLASS, None, True),
        (STATIC, None, True),
        (PROMPTFOO, None, False),  # another format: its child finds it, as before
        (BROKEN, None, False),  # cannot be parsed: its child reports why
        ("x = 1\n", None, False),  # no entry: its child says how to name one
    ],
)
def test_the_host_finds_okareo_sources_only(source: str, entry: str | None, okareo: bool) -> None:
    assert okareo_source(source, entry) is okareo


@pytest.mark.parametrize("source", [FUNCTION, CHECK_CLASS, STATIC])
def test_told_or_not_the_child_loads_the_same_entry(source: str) -> None:
    told = child.load_check({"source": source, "okareo": True})
    found = child.load_check({"source": source})
    assert told.parameters == found.parameters
    assert told.detected is None and found.detected is None
    arguments = {name: "x" for name in told.parameters}
    assert told.func(**arguments) == found.func(**arguments)


def test_a_child_told_does_not_parse_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed again")

    monkeypatch.setattr(ast, "parse", no_parse)  # the module child.py parses with
    assert child.load_check({"source": FUNCTION, "okareo": True}).parameters == [
        "model_output",
        "scenario_input",
    ]
    with pytest.raises(AssertionError, match="parsed again"):
        child.load_check({"source": FUNCTION})  # not told: the child parses it itself


def test_a_told_child_still_checks_the_entry() -> None:
    # the hint skips finding the format, not the entry's own checks
    with pytest.raises(EntrypointError, match="define a function `evaluate"):
        child.load_check({"source": "evaluate = 3\n", "okareo": True})


def test_jobs_carry_the_hint_and_a_child_forked_ahead_serves_only_its_own() -> None:
    class Check:
        name, version, source, policy = "c", 1, FUNCTION, Policy.STANDARD
        output_type, entry, config = None, None, None

    job = job_of(Check(), [(0, Row(model_output="x"))], Limits(), result_blocks=True)
    assert job.okareo is True
    assert '"okareo":true' in job.encode().decode()
    assert "okareo" in LOAD_KEYS  # a job told otherwise never gets a child loaded without


def test_the_host_remembers_digests_of_a_bounded_number_of_sources() -> None:
    for k in range(load_hints.REMEMBERED_SOURCES + 10):
        assert okareo_source(f"def evaluate(model_output):\n    return {k}\n", None)
    assert 0 < len(load_hints._found) <= load_hints.REMEMBERED_SOURCES
    assert all(isinstance(digest, bytes) and len(digest) == 16 for digest, _ in load_hints._found)
