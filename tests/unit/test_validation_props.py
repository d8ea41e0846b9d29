"""Properties of validate(): whatever text it is given, it returns a report and never raises."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.contract import Policy
from engine.validation import ISSUE_CODES, ValidationReport, validate
from tests.hypothesis_budget import examples
from tests.unit.test_validation import (
    LEVENSHTEIN_WITH_HELPER,
    OKAREO_DOCS_EXACT_MATCH,
    OKAREO_SDK_WITH_EXPLANATION,
)

SEEDS = [OKAREO_DOCS_EXACT_MATCH, LEVENSHTEIN_WITH_HELPER, OKAREO_SDK_WITH_EXPLANATION]
FRAGMENTS = [
    "def ", "class ", "evaluate", "Check", "(", ")", ":", "\n", "    ", "*args", "**kw", "/",
    "@staticmethod\n", "-> ", "bool", "int | None", "tuple[", "]", "'", '"""', "\\", "\0",
    "import os\n", "from . import x\n", "__class__", "eval(", "async ", "lambda: ", "é", "\r",
    "\ud800", "yield", "return", "self, ", "model_output", "scenario_input", "=None", "...",
]  # fmt: skip


def _check(report: ValidationReport) -> None:
    assert isinstance(report, ValidationReport)
    assert report.valid is (not report.errors)
    for issue in report.issues:
        assert issue.code in ISSUE_CODES
        assert issue.severity == ISSUE_CODES[issue.code].severity
        assert issue.line is None or issue.line >= 1
        assert issue.col is None or issue.col >= 1


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.sampled_from(list(Policy)))
def test_arbitrary_text_never_raises(source: str, policy: Policy) -> None:
    _check(validate(source, policy))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40), st.sampled_from(list(Policy)))
def test_arbitrary_fragments_never_raise(parts: list[str], policy: Policy) -> None:
    _check(validate("".join(parts), policy))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A published check with a few random deletions, insertions and line shuffles."""
    source = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "swap", "duplicate"]))
        lines = source.split("\n")
        if kind == "delete" and source:
            start = draw(st.integers(0, len(source) - 1))
            end = draw(st.integers(start, min(len(source), start + 20)))
            source = source[:start] + source[end:]
        elif kind == "insert":
            at = draw(st.integers(0, len(source)))
            text = draw(st.sampled_from(FRAGMENTS) | st.text(max_size=8))
            source = source[:at] + text + source[at:]
        elif kind == "swap" and len(lines) > 1:
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            source = "\n".join(lines)
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            source = "\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    return source


@settings(max_examples=examples(200), deadline=None)
@given(mutated(), st.sampled_from(list(Policy)))
def test_mutated_checks_never_raise(source: str, policy: Policy) -> None:
    _check(validate(source, policy))


def test_deeply_nested_source_is_an_issue() -> None:
    for source in ["x = " + "(" * 300 + ")" * 300, "x = " + "[" * 5000 + "]" * 5000,
                   "x = 1" + " + 1" * 100_000, "def evaluate(model_output):\n" + "    " * 3 +
                   "return " + "-" * 50_000 + "1\n"]:  # fmt: skip
        for policy in Policy:
            _check(validate(source, policy))
