"""Deterministic built-ins: hand-computed values, edge cases, parameter validation."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine.builtins import build_builtins, describe
from engine.builtins.base import BuiltinCheck, NoParams, Outcome, per_row
from engine.contract import OutputType, Status
from engine.errors import InvalidRequestError
from engine.models import Row, RowResult

BUILTINS = build_builtins()


def run(name: str, params: dict[str, Any] | None = None, **row: Any) -> RowResult:
    results: list[RowResult] = BUILTINS[name].score([Row(**row)], params or {})
    [result] = results
    assert result.check == name
    return result


def score(name: str, params: dict[str, Any] | None = None, **row: Any) -> Any:
    result = run(name, params, **row)
    assert result.status is Status.OK, result
    return result.score


# --- the registry ----------------------------------------------------------------------------

DETERMINISTIC = {
    "compression_ratio",
    "levenshtein_distance",
    "levenshtein_distance_input",
    "is_json",
    "does_code_compile",
    "contains_all_imports",
    "format",
    "length",
    "string_check",
    "text_similarity",
    "exact_match",
    "regex_match",
    "json_schema_match",
}
JUDGED = {
    *(
        f"{n}{s}"
        for n in ("conciseness", "uniqueness", "fluency", "coherence")
        for s in ("", "_summary")
    ),
    *(f"{n}{s}" for n in ("consistency", "relevance") for s in ("", "_summary")),
    "completeness",
    "correctness",
    "cohere_conciseness",
    "llm_judge",
}


def test_registry_has_every_builtin_with_kind_schema_and_type() -> None:
    assert set(BUILTINS) == DETERMINISTIC | JUDGED
    for name, check in BUILTINS.items():
        assert check.kind == ("model" if name in JUDGED else "builtin")
        assert check.description
        assert isinstance(check.params_schema, dict)
        assert check.params_schema.get("type") == "object"
        assert isinstance(check.output_data_type, OutputType)
    listing = {item["name"]: item for item in describe(BUILTINS)}
    assert listing["length"]["output_data_type"] == "bool"
    assert "min_words" in listing["length"]["params_schema"]["properties"]


def test_judges_without_a_client_are_judge_error_per_row() -> None:
    rows = [Row(model_output="a"), Row(model_output="b", id=7)]
    results = build_builtins(None)["fluency"].score(rows, {})
    assert [r.status for r in results] == [Status.JUDGE_ERROR] * 2
    assert results[1].row_id == 7
    assert "SCOREBOX_LLM_BASE_URL" in (results[0].error or "")


# --- parameter validation ----------------------------------------------------------------------


def test_unknown_param_names_it_and_the_fix() -> None:
    with pytest.raises(InvalidRequestError, match=r"unknown param `colour`: remove it"):
        BUILTINS["is_json"].score([Row(model_output="{}")], {"colour": "red"})


def test_missing_required_param() -> None:
    with pytest.raises(InvalidRequestError, match=r"param `pattern` is required"):
        BUILTINS["regex_match"].score([Row(model_output="x")], {})


@pytest.mark.parametrize(
    ("name", "params", "needle"),
    [
        ("regex_match", {"pattern": "("}, "pattern"),
        ("text_similarity", {"evaluation_metric": "cosine"}, "evaluation_metric"),
        ("string_check", {"operation": "contains"}, "operation"),
        ("length", {"min_words": 5, "max_words": 2}, "min_words is greater than max_words"),
        ("length", {"number": 0}, "number"),
        ("json_schema_match", {"schema": {"type": 5}}, "not a valid JSON Schema"),
        ("text_similarity", {"pass_threshold": 1.5}, "pass_threshold"),
    ],
)
def test_bad_params_are_invalid_request(name: str, params: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidRequestError, match=needle) as info:
        BUILTINS[name].score([Row(model_output="x")], params)
    assert str(info.value).startswith(f"built-in `{name}`")


def test_an_exception_in_a_builtin_is_an_error_row_not_a_crash() -> None:
    def boom(row: Row, _: NoParams) -> Outcome:
        if row.model_output == "bad":
            raise RuntimeError("kaput")
        return Outcome(True)

    check = BuiltinCheck("boom", "test", OutputType.BOOL, NoParams, per_row(boom))
    results = check.score([Row(model_output="ok"), Row(model_output="bad"), Row(model_output="ok")])
    assert [r.status for r in results] == [Status.OK, Status.ERROR, Status.OK]
    assert "RuntimeError: kaput" in (results[1].error or "")


# --- compression_ratio, levenshtein ----------------------------------------------------------


def test_compression_ratio() -> None:
    # Okareo: len(model_output) / len(scenario_input)
    assert score("compression_ratio", model_output="abcde", scenario_input="abcdefghij") == 0.5
    assert score("compression_ratio", model_output="ééé", scenario_input="ééé ééé") == 3 / 7
    words = {"unit": "words"}
    assert score("compression_ratio", words, model_output="a b", scenario_input="a b c d") == 0.5
    assert score("compression_ratio", model_output="", scenario_input="x") == 0.0
    assert run("compression_ratio", model_output="x", scenario_input="").status is Status.SKIPPED
    assert run("compression_ratio", model_output="x").status is Status.SKIPPED


@pytest.mark.parametrize(
    ("output", "expected", "distance"),
    [
        ("kitten", "sitting", 3),
        ("café", "cafe", 1),
        ("", "abc", 3),
        ("same", "same", 0),
        ("日本語", "日本", 1),
    ],
)
def test_levenshtein_distance(output: str, expected: str, distance: int) -> None:
    assert score("levenshtein_distance", model_output=output, scenario_result=expected) == distance
    assert (
        score("levenshtein_distance_input", model_output=output, scenario_input=expected)
        == distance
    )


def test_levenshtein_skips_without_reference_and_encodes_json() -> None:
    assert run("levenshtein_distance", model_output="x").status is Status.SKIPPED
    assert run("levenshtein_distance_input", model_output="x").status is Status.SKIPPED
    # a JSON scenario_result is compared as its JSON text: [1] vs "[1]" → 0
    assert score("levenshtein_distance", model_output="[1]", scenario_result=[1]) == 0


# --- is_json, json_schema_match ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "params", "ok"),
    [
        ('{"a": 1}', {}, True),
        ("[1, 2]", {}, True),
        ('"str"', {}, True),
        ("nope", {}, False),
        ("", {}, False),
        ("{'a': 1}", {}, False),
        ('```json\n{"a": 1}\n```', {}, False),
        ('```json\n{"a": 1}\n```', {"strip_code_fence": True}, True),
    ],
)
def test_is_json(output: str, params: dict[str, Any], ok: bool) -> None:
    result = run("is_json", params, model_output=output)
    assert result.score is ok
    assert (result.explanation is None) is ok


SCHEMA = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}


def test_json_schema_match() -> None:
    params = {"schema": SCHEMA}
    assert score("json_schema_match", params, model_output='{"a": 1}') is True
    bad = run("json_schema_match", params, model_output='{"a": "x"}')
    assert bad.score is False
    assert bad.explanation == "at a: 'x' is not of type 'integer'"
    missing = run("json_schema_match", params, model_output="{}")
    assert missing.explanation == "at (root): 'a' is a required property"
    assert run("json_schema_match", params, model_output="nope").score is False
    # the schema from the row's scenario_result, as an object or as JSON text
    assert score("json_schema_match", model_output='{"a": 2}', scenario_result=SCHEMA) is True
    assert score("json_schema_match", model_output="[]", scenario_result='{"type": "array"}')
    assert run("json_schema_match", model_output="{}").status is Status.SKIPPED
    assert run("json_schema_match", model_output="{}", scenario_result="x").status is Status.SKIPPED


# --- code -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        ("x = 1\nprint(x)", True),
        ("def f(:\n  pass", False),
        ("```python\nprint(1)\n```", True),
        ("return 5", False),
        ("", True),
        ("print('héllo ✓')", True),
    ],
)
def test_does_code_compile(output: str, ok: bool) -> None:
    assert score("does_code_compile", model_output=output) is ok


def test_does_code_compile_without_fence_stripping() -> None:
    fenced = "```python\nprint(1)\n```"
    assert score("does_code_compile", {"strip_code_fence": False}, model_output=fenced) is False


@pytest.mark.parametrize(
    ("code", "ok"),
    [
        ("import os\nprint(os.getcwd())", True),
        ("import os.path\nos.path.join('a', 'b')", True),
        ("from collections import Counter as C\nC('ab')", True),
        ("def f(a, *rest, k=1, **kw):\n    return a + len(rest) + k + len(kw)", True),
        ("[i * 2 for i in range(3)]", True),
        ("class A:\n    pass\n\nA()", True),
        ("try:\n    pass\nexcept ValueError as e:\n    print(e)", True),
        ("x = np.array([1])", False),
        ("import numpy as np\npd.DataFrame(np.zeros(2))", False),
    ],
)
def test_contains_all_imports(code: str, ok: bool) -> None:
    assert score("contains_all_imports", model_output=code) is ok


def test_contains_all_imports_explains_and_handles_star_and_syntax_errors() -> None:
    missing = run(
        "contains_all_imports", model_output="import os\nx = np.zeros(1)\ny = json.dumps(x)"
    )
    assert missing.explanation == "used but never imported or defined: np (line 2), json (line 3)"
    assert score("contains_all_imports", model_output="from math import *\nsqrt(2)") is True
    broken = run("contains_all_imports", model_output="def (")
    assert broken.score is False
    assert "does not parse" in (broken.explanation or "")


# --- string_check, exact_match, regex_match ---------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "output", "reference", "ok"),
    [
        ("eq", "Paris", "Paris", True),
        ("eq", "Paris ", "Paris", False),
        ("ne", "Paris", "Rome", True),
        ("ne", "Paris", "Paris", False),
        ("like", "The capital is Paris.", "Paris", True),
        ("like", "The capital is paris.", "Paris", False),
        ("ilike", "The capital is PARIS.", "paris", True),
        ("ilike", "STRASSE", "straße", True),
        ("like", "anything", "", True),
        ("eq", "", "", True),
    ],
)
def test_string_check(operation: str, output: str, reference: str, ok: bool) -> None:
    got = score(
        "string_check", {"operation": operation}, model_output=output, scenario_result=reference
    )
    assert got is ok


def test_string_check_reference_param_and_skip() -> None:
    assert score("string_check", {"reference": "ok"}, model_output="ok") is True
    assert run("string_check", model_output="ok").status is Status.SKIPPED


def test_exact_match() -> None:
    assert score("exact_match", model_output=" Paris\n", scenario_result="Paris") is True
    assert (
        score("exact_match", {"strip": False}, model_output=" Paris", scenario_result="Paris")
        is False
    )
    assert score("exact_match", model_output="PARIS", scenario_result="paris") is False
    assert score(
        "exact_match", {"ignore_case": True}, model_output="PARIS", scenario_result="paris"
    )
    assert score("exact_match", model_output='{"a": [1, 2]}', scenario_result={"a": [1, 2]}) is True
    assert score("exact_match", model_output="{", scenario_result={"a": 1}) is False
    assert score("exact_match", model_output="", scenario_result="") is True
    assert run("exact_match", model_output="x").status is Status.SKIPPED


def test_regex_match() -> None:
    assert score("regex_match", {"pattern": r"\d{3}"}, model_output="abc 123") is True
    found = run("regex_match", {"pattern": r"\d{3}"}, model_output="abc 123")
    assert found.explanation == "matched '123' at 4"
    assert (
        score("regex_match", {"pattern": r"\d{3}", "full_match": True}, model_output="abc 123")
        is False
    )
    assert score("regex_match", {"pattern": "^b", "multiline": True}, model_output="a\nb") is True
    assert score("regex_match", {"pattern": "^b"}, model_output="a\nb") is False
    assert (
        score("regex_match", {"pattern": "straße", "ignore_case": True}, model_output="STRAßE")
        is True
    )
    assert score("regex_match", {"pattern": "a.b", "dotall": True}, model_output="a\nb") is True
    assert score("regex_match", {"pattern": "x"}, model_output="") is False


# --- text_similarity -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "output", "reference", "expected"),
    [
        # WRatio: equal length, one substitution = indel distance 2 over 8 chars → 75
        ("fuzzy_match", "abcd", "abce", 0.75),
        ("fuzzy_match", "HELLO WORLD", "hello world", 1.0),
        # unigrams: 3 of 3 candidate, 3 of 6 reference → P 1, R .5 → F 2/3
        ("rouge_1", "the cat sat", "the cat sat on the mat", 2 / 3),
        # bigrams: 2 of 2, 2 of 5 → P 1, R .4 → F .8/1.4
        ("rouge_2", "the cat sat", "the cat sat on the mat", 0.8 / 1.4),
        ("rouge_3", "a b c d", "a b c e", 0.5),
        ("rouge_4", "a b c d e", "a b c d f", 0.5),
        ("rouge_5", "a b c d e f", "a b c d e g", 0.5),
        ("rouge_5", "a b c", "a b c", 0.0),  # no 5-grams at all
        # LCS("cat the sat", "the cat sat") = 2 → P = R = 2/3
        ("rouge_l", "cat the sat", "the cat sat", 2 / 3),
        ("rouge_1", "cat the sat", "the cat sat", 1.0),
        ("bleu", "the cat sat on the mat", "the cat sat on the mat", 1.0),
        # NLTK sentence_bleu, method1: precisions 1, 1, 1 and 0 4-grams → 0.1;
        # brevity penalty exp(1 - 6/3)
        ("bleu", "the cat sat", "the cat sat on the mat", math.exp(-1) * 0.1**0.25),
        # unigrams 2/2, no matching bigram (nor 3-, 4-grams) → 0.1 each
        ("bleu", "cat the", "the cat", 0.1**0.75),
        # the example: 2/3, 1/2, then 0.1 and 0.1 (was 0.0 unsmoothed)
        ("bleu", "Paris is nice.", "Paris is lovely.", (2 / 3 * 1 / 2 * 0.1 * 0.1) ** 0.25),
        ("rouge_1", "Größe Straße", "größe straße", 1.0),  # lower-cased, Unicode tokens
        ("bleu", "", "", 1.0),
        ("rouge_l", "", "x", 0.0),
        ("fuzzy_match", "x", "", 0.0),
    ],
)
def test_text_similarity(metric: str, output: str, reference: str, expected: float) -> None:
    got = score(
        "text_similarity",
        {"evaluation_metric": metric},
        model_output=output,
        scenario_result=reference,
    )
    assert got == pytest.approx(expected)


def test_text_similarity_threshold_and_reference() -> None:
    params = {"evaluation_metric": "rouge_1", "pass_threshold": 0.5, "reference": "a b"}
    result = run("text_similarity", params, model_output="a c")
    assert result.score == pytest.approx(0.5)
    assert (result.explanation or "").startswith("pass")
    assert run("text_similarity", model_output="x").status is Status.SKIPPED


# --- format and length (Cohere) ---------------------------------------------------------------

BULLETS = "- The launch moved to May.\n- Budget was approved."
DOTS = "• Revenue grew by ten percent\n• Costs stayed flat this quarter"
NUMBERED = "1. Send the notes to the team\n2. Book the room for Friday"


@pytest.mark.parametrize(
    ("text", "is_bullets", "is_paragraphs"),
    [
        (BULLETS, True, False),
        (DOTS, True, False),
        (NUMBERED, True, False),
        ("  * indented star\n  + plus sign", True, False),
        ("Intro line.\n- a point", False, False),
        ("First paragraph here.\n\nSecond paragraph here.", False, True),
        # Cohere's published regex needs no space after the marker (seed 000)
        ("-5 degrees is cold.", True, False),
        # and an empty text is both "only bullets" and "only paragraphs" there
        ("", True, True),
        ("   \n", True, True),
        ("- \n- ", False, True),  # markers with no text are not bullets
    ],
)
def test_format(text: str, is_bullets: bool, is_paragraphs: bool) -> None:
    assert score("format", {"format_type": "bullets"}, model_output=text) is is_bullets
    assert score("format", {"format_type": "paragraphs"}, model_output=text) is is_paragraphs


def test_format_reads_metadata_and_skips_without_it() -> None:
    assert score("format", model_output=DOTS, metadata={"format": "bullets"}) is True
    assert run("format", model_output=DOTS).status is Status.SKIPPED
    assert run("format", model_output=DOTS, metadata={"format": "table"}).status is Status.SKIPPED


def test_length_bullets() -> None:
    # DOTS: 5 and 5 words in 2 bullets
    p = {"format_type": "bullets", "min_words": 5, "max_words": 5, "number": 2}
    assert score("length", p, model_output=DOTS) is True
    three = run("length", {**p, "number": 3}, model_output=DOTS)
    assert three.score is False
    assert three.explanation == "2 bullets, expected 3"
    short = run("length", {**p, "min_words": 6, "max_words": 10}, model_output=DOTS)
    assert short.explanation == "item 1 has 5 words, expected 6..10"
    # numbered lists count as bullets; the marker is not a word
    assert score(
        "length", {"format_type": "bullets", "max_words": 6, "number": 2}, model_output=NUMBERED
    )


def test_length_paragraphs_unicode_and_empty() -> None:
    text = "東京 は 大きい\n\nBonjour à tous les amis"
    p = {"format_type": "paragraphs", "min_words": 3, "max_words": 5}
    assert score("length", p, model_output=text) is True
    assert score("length", {**p, "number": 2}, model_output=text) is True
    empty = run("length", p, model_output="")
    assert empty.score is True  # Cohere's score_length: no item is out of bounds
    assert run("length", {**p, "number": 1}, model_output="").score is False


def test_length_reads_cohere_eval_metadata() -> None:
    meta = {"format": "bullets", "number": 2, "min_length": 3, "max_length": 5}
    assert score("length", model_output=BULLETS, metadata=meta) is True
    assert score("length", {"number": 3}, model_output=BULLETS, metadata=meta) is False
    assert (
        run("length", model_output=BULLETS, metadata={"format": "bullets"}).status is Status.SKIPPED
    )
    bad = run("length", model_output=BULLETS, metadata={**meta, "number": "two"})
    assert bad.status is Status.SKIPPED


def test_results_keep_order_and_row_ids() -> None:
    rows = [
        Row(id=i, model_output=text, scenario_result="x") for i, text in enumerate(["x", "y", "x"])
    ]
    results = BUILTINS["exact_match"].score(rows, {})
    assert [r.row_id for r in results] == [0, 1, 2]
    assert [r.score for r in results] == [True, False, True]
