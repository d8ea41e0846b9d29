"""Each built-in the seeds define, against the published definition, on the seeds' examples.

The reference functions below are transcribed from the seed documents (the
published code, unchanged but for typing), and every built-in must give what
the published code gives:

* Okareo's checks page (seed ``001_bd325b9f62d9b3af.txt``): ``compression_ratio``,
  ``levenshtein_distance``, ``levenshtein_distance_input``, ``does_code_compile``,
  ``contains_all_imports`` (described in prose only).
* Cohere's summarisation cookbook (seed ``000_fd305a66be73573f.txt``):
  ``score_format`` (built-in ``format``) and ``score_length`` (``length``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

from engine.builtins import build_builtins
from engine.contract import Status
from engine.models import Row

BUILTINS = build_builtins()


def _score(name: str, params: dict[str, Any] | None = None, **row: Any) -> Any:
    [result] = BUILTINS[name].score([Row(**row)], params or {})
    assert result.status is Status.OK, result
    return result.score


# --- seed 001 (Okareo), published evaluate methods -------------------------------------------


def okareo_compression_ratio(model_output: str, scenario_input: str) -> float:
    return len(model_output) / len(scenario_input)


def okareo_levenshtein_distance(s1: str, s2: str, weights: Sequence[int]) -> int:
    if len(s1) < len(s2):
        return okareo_levenshtein_distance(s2, s1, weights)
    if len(s2) == 0:
        return len(s1)
    previous_row = list(range(len(s2) + 1))
    for i, c1 in enumerate(s1):
        current_row = [i + 1]
        for j, c2 in enumerate(s2):
            insertions = previous_row[j + 1] + weights[0]
            deletions = current_row[j] + weights[1]
            substitutions = previous_row[j] + (c1 != c2) * weights[2]
            current_row.append(min(insertions, deletions, substitutions))
        previous_row = current_row
    return previous_row[-1]


def okareo_does_code_compile(model_output: str) -> bool:
    try:
        compile(model_output, "<string>", "exec")
        return True
    except SyntaxError:
        return False


PAIRS = [
    # the case: the published formula gives 0.5 (scorebox gave 2.0)
    ("abcde", "abcdefghij"),
    ("Paris is the capital of France.", "What is the capital of France? Answer briefly."),
    ("kitten", "sitting"),
    ("", "a non-empty input"),
    ("café ☕", "cafe"),
    ("a much longer answer than the question", "why?"),
]


@pytest.mark.parametrize(("output", "source"), PAIRS)
def test_compression_ratio_is_okareos_formula(output: str, source: str) -> None:
    """Seed 001: ``return len(model_output) / len(scenario_input)``."""
    got = _score("compression_ratio", model_output=output, scenario_input=source)
    assert got == pytest.approx(okareo_compression_ratio(output, source))


@pytest.mark.parametrize(("output", "other"), PAIRS)
def test_levenshtein_distance_is_okareos(output: str, other: str) -> None:
    """Seed 001: ``levenshtein_distance(model_output, scenario_response, [1, 1, 1])``."""
    got = _score("levenshtein_distance", model_output=output, scenario_result=other)
    assert got == okareo_levenshtein_distance(output, other, [1, 1, 1])


@pytest.mark.parametrize(("output", "other"), PAIRS)
def test_levenshtein_distance_input_is_okareos(output: str, other: str) -> None:
    """Seed 001: ``levenshtein_distance(model_output, scenario_input, [1, 1, 1])``."""
    got = _score("levenshtein_distance_input", model_output=output, scenario_input=other)
    assert got == okareo_levenshtein_distance(output, other, [1, 1, 1])


CODE = [
    "print('hi')",
    "def f(:\n    pass",
    "import os\nos.getcwd()",
    "This is natural language, not code.",
    "<html><body>hi</body></html>",
    "",
    "x = 1\n  y = 2",
]


@pytest.mark.parametrize("source", CODE)
def test_does_code_compile_is_okareos(source: str) -> None:
    """Seed 001: ``compile(model_output, '<string>', 'exec')`` without SyntaxError."""
    got = _score("does_code_compile", {"strip_code_fence": False}, model_output=source)
    assert got is okareo_does_code_compile(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\nprint(os.getcwd())", True),
        ("print(os.getcwd())", False),  # a call whose import is missing
        ("from math import sqrt\nsqrt(2)", True),
        ("np.array([1])", False),
        ("def f():\n    return len([])\nf()", True),  # builtins and local definitions
    ],
)
def test_contains_all_imports_as_described(source: str, expected: bool) -> None:
    """Seed 001 (prose): every object/function call has its ``import`` statement."""
    assert _score("contains_all_imports", model_output=source) is expected


# --- seed 000 (Cohere), published score_format / score_length ---------------------------------


def _extract_markdown_bullets(text: str, include_bullet: bool = False) -> list[str]:
    if include_bullet:
        return re.findall(r"^[ \t]*(?:[-*+•]|[\d]+\.).*\w+.*$", text, flags=re.MULTILINE)
    return re.findall(r"^[ \t]*(?:[-*+•]|[\d]+\.)(.*\w+.*)$", text, flags=re.MULTILINE)


def _is_only_bullets(text: str) -> bool:
    for bullet in _extract_markdown_bullets(text, include_bullet=True):
        text = text.replace(bullet, "")
    return text.strip() == ""


def _is_only_paragraphs(text: str) -> bool:
    return len(_extract_markdown_bullets(text, include_bullet=True)) == 0


def cohere_score_format(completion: str, format_type: str) -> int:
    if format_type == "paragraphs":
        return int(_is_only_paragraphs(completion))
    if format_type == "bullets":
        return int(_is_only_bullets(completion))
    return 0


def cohere_score_length(
    completion: str, format_type: str, min_val: int, max_val: int, number: int | None = None
) -> int:
    if format_type == "bullets":
        items = _extract_markdown_bullets(completion, include_bullet=False)
    else:
        items = completion.split("\n")
    items = [item for item in items if item.strip() != ""]
    if number is not None and len(items) != number:
        return 0
    for item in items:
        num_words = item.strip().split()
        if not min_val <= len(num_words) <= max_val:
            return 0
    return 1


TEXTS = [
    "- The launch moved to May.\n- Budget was approved.",
    "• Revenue grew by ten percent\n• Costs stayed flat this quarter",
    "1. First point here\n2. Second point here\n3. Third",
    "The board met on Monday. It approved the budget.\n\nHiring resumes in June.",
    "Intro line.\n- one bullet\nClosing line.",
    "* short",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("format_type", ["bullets", "paragraphs"])
def test_format_is_cohere_score_format(text: str, format_type: str) -> None:
    """Seed 000: ``score_format(completion, format_type)``."""
    got = _score("format", {"format_type": format_type}, model_output=text)
    assert int(got) == cohere_score_format(text, format_type)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("format_type", ["bullets", "paragraphs"])
@pytest.mark.parametrize(("low", "high", "number"), [(1, 5, None), (2, 10, 2), (3, 8, 3)])
def test_length_is_cohere_score_length(
    text: str, format_type: str, low: int, high: int, number: int | None
) -> None:
    """Seed 000: ``score_length(completion, format_type, min_val, max_val, number)``."""
    params: dict[str, Any] = {"format_type": format_type, "min_words": low, "max_words": high}
    if number is not None:
        params["number"] = number
    got = _score("length", params, model_output=text)
    assert int(got) == cohere_score_length(text, format_type, low, high, number)
