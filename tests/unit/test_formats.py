"""The scorer-format table (engine.contract.formats): detection, binding, return shapes."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

import pytest

from engine.contract import InvalidScore, OutputType
from engine.contract.formats import (
    FORMATS,
    MAX_METADATA_CHARS,
    Format,
    FormatError,
    bind,
    bounded_metadata,
    coerce,
    detect,
    shapes_of,
    skips,
)


def _detect(source: str, entry: str | None = None) -> Any:
    return detect(*shapes_of(ast.parse(textwrap.dedent(source))), entry=entry)


ROW: dict[str, Any] = {
    "i": 0,
    "model_output": '{"answer": 4}',
    "scenario_input": "2+2?",
    "scenario_result": "4",
    "model_input": None,
    "metadata": {"topic": "math"},
}


# -- detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "fmt", "entry"),
    [
        ("def evaluate(model_output): return 1", Format.OKAREO, "evaluate"),
        (
            "class Check:\n    @staticmethod\n    def evaluate(model_output): return 1",
            Format.OKAREO,
            "Check",
        ),
        (
            "@reward_function\ndef evaluate(messages, criteria=None, **kwargs): return 1",
            Format.REWARD_KIT,
            "evaluate",
        ),
        (
            "import reward_kit\n@reward_kit.reward_function(mode='pointwise')\n"
            "def score_it(messages, **kwargs): return 1",
            Format.REWARD_KIT,
            "score_it",
        ),
        ("def grade(sample, item): return 1.0", Format.GRADER, "grade"),
        ("def get_assert(output, context): return True", Format.PROMPTFOO, "get_assert"),
        ("def handler(input, output, expected): return 1", Format.BRAINTRUST, "handler"),
        ("def exact(output, expected): return 1", Format.BRAINTRUST, "exact"),
        ("def evaluate(output, reference): return 1", Format.BRAINTRUST, "evaluate"),
        ("def correct(outputs, reference_outputs): return 1", Format.LANGSMITH, "correct"),
        (
            "def _norm(output): return 1\ndef judge(inputs, outputs): return 1",
            Format.LANGSMITH,
            "judge",
        ),
    ],
)
def test_detect_finds_format_and_entry(source: str, fmt: Format, entry: str) -> None:
    detected = _detect(source)
    assert (detected.format, detected.entry) == (fmt, entry)


def test_several_fitting_functions_are_refused_naming_them_and_how_to_pick() -> None:
    with pytest.raises(FormatError) as err:
        _detect("def a(output, expected): return 1\ndef b(outputs): return 1")
    message = str(err.value)
    assert "`a`" in message and "`b`" in message and "--entry" in message and "`_`" in message


def test_named_entry_picks_one_of_several() -> None:
    source = "def a(output, expected): return 1\ndef b(outputs): return 1"
    assert _detect(source, entry="b").format is Format.LANGSMITH
    with pytest.raises(FormatError, match="no top-level function `c`"):
        _detect(source, entry="c")


def test_named_entry_takes_promptfoo_positional_shape() -> None:
    detected = _detect("def check_it(text, ctx): return True", entry="check_it")
    assert detected.format is Format.PROMPTFOO  # file://x.py:check_it


def test_reward_function_without_kwargs_is_refused_as_reward_kit_does() -> None:
    with pytest.raises(FormatError, match=r"\*\*kwargs"):
        _detect("@reward_function\ndef f(messages): return 1")


def test_grader_needs_exactly_two_parameters() -> None:
    with pytest.raises(FormatError, match="exactly 2"):
        _detect("def grade(sample): return 1")


def test_nothing_fitting_names_every_format() -> None:
    with pytest.raises(FormatError) as err:
        _detect("def helper(text): return 1")
    for word in ("grade(sample, item)", "get_assert", "@reward_function", "LangSmith"):
        assert word in str(err.value)


def test_bindings_say_what_each_parameter_receives() -> None:
    detected = _detect("@reward_function\ndef f(messages, ground_truth=None, k=3, **kwargs): ...")
    assert set(detected.bindings) == {"messages", "ground_truth", "k", "**kwargs"}
    assert detected.bindings["k"] == "its default (or the check's configuration)"
    assert "scenario_input" in detected.bindings["messages"]


# -- binding -----------------------------------------------------------------------------


def _bind(
    source: str, row: dict[str, Any], message: Any = None
) -> tuple[list[Any], dict[str, Any]]:
    detected = _detect(source)
    return bind(detected.format, detected.shape, row, message)


def test_reward_kit_messages_built_from_the_row_and_kwargs_get_nothing() -> None:
    _, kwargs = _bind(
        "@reward_function\ndef f(messages, ground_truth=None, criteria=None, **kw): ...", ROW
    )
    assert kwargs == {
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": '{"answer": 4}'},
        ],
        "ground_truth": "4",
    }  # criteria keeps its default; **kw receives no scorebox names


def test_reward_kit_messages_leave_out_what_the_row_lacks_and_prefer_row_fields() -> None:
    row = {**ROW, "scenario_input": None, "scenario_result": None}
    _, kwargs = _bind("@reward_function\ndef f(messages, ground_truth=None, **kw): ...", row)
    assert kwargs["messages"] == [{"role": "assistant", "content": '{"answer": 4}'}]
    assert kwargs["ground_truth"] is None
    given = [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]
    row = {**ROW, "messages": given, "ground_truth": "G"}
    _, kwargs = _bind("@reward_function\ndef f(messages, ground_truth=None, **kw): ...", row)
    assert kwargs["messages"] == given and kwargs["ground_truth"] == "G"


def test_reward_kit_message_objects_when_annotated() -> None:
    made: list[dict[str, Any]] = []

    def message(fields: dict[str, Any]) -> tuple[str, Any]:
        made.append(fields)
        return ("Message", fields["role"])

    src = "@reward_function\ndef f(messages: List[Message], **kw): ..."
    _, kwargs = _bind(src, ROW, message)
    assert kwargs["messages"] == [("Message", "user"), ("Message", "assistant")]
    _, plain = _bind("@reward_function\ndef f(messages: list[dict], **kw): ...", ROW, message)
    assert plain["messages"][0] == {"role": "user", "content": "2+2?"}


def test_grader_sample_and_item_fallbacks_and_row_fields() -> None:
    args, kwargs = _bind("def grade(sample, item): ...", ROW)
    sample, item = args
    assert kwargs == {}
    assert sample["output_text"] == '{"answer": 4}' and sample["output_json"] == {"answer": 4}
    assert sample["choices"][0]["message"]["content"] == '{"answer": 4}'
    assert item["scenario_result"] == "4" and "i" not in item and "model_input" not in item
    row = {**ROW, "model_output": "plain", "sample": {"output_text": "S"}, "item": {"ref": "R"}}
    args, _ = _bind("def grade(sample, item): ...", row)
    assert args == [{"output_text": "S"}, {"ref": "R"}]
    args, _ = _bind("def grade(sample, item): ...", {**ROW, "model_output": "plain"})
    assert args[0]["output_json"] is None


def test_promptfoo_output_parsed_and_context() -> None:
    args, _ = _bind("def get_assert(output, context): ...", ROW)
    assert args[0] == {"answer": 4}
    context = args[1]
    assert context["prompt"] == "2+2?" and context["vars"] == {"topic": "math"}
    assert context["test"]["vars"] == {"topic": "math"} and context["config"] == {}
    args, _ = _bind(
        "def get_assert(output, context): ...", {**ROW, "vars": {"x": 1}, "model_output": "4"}
    )
    assert args[0] == 4 and args[1]["vars"] == {"x": 1}  # a JSON number is parsed too


def test_braintrust_phoenix_names() -> None:
    src = "def handler(input, output, expected, reference, metadata, example): ..."
    _, kwargs = _bind(src, ROW)
    assert kwargs["input"] == "2+2?" and kwargs["output"] == {"answer": 4}
    assert kwargs["expected"] == kwargs["reference"] == "4"
    assert kwargs["example"] == {"input": "2+2?", "output": "4", "metadata": {"topic": "math"}}
    _, kwargs = _bind(
        "def handler(output, expected): ...", {**ROW, "scenario_result": None, "ground_truth": "G"}
    )
    assert kwargs == {"output": {"answer": 4}, "expected": "G"}


def test_langsmith_dicts() -> None:
    src = "def ev(inputs, outputs, reference_outputs, run, example): ..."
    _, kwargs = _bind(src, ROW)
    assert kwargs["inputs"] == {"input": "2+2?"}
    assert kwargs["outputs"] == {"answer": 4}
    assert kwargs["reference_outputs"] == {"output": "4"}
    assert kwargs["run"] == {"inputs": {"input": "2+2?"}, "outputs": {"answer": 4}}
    _, kwargs = _bind("def ev(outputs): ...", {**ROW, "model_output": "hi"})
    assert kwargs == {"outputs": {"output": "hi"}}


# -- return shapes -----------------------------------------------------------------------


class EvaluateResult:  # the shape the stand-in and reward-kit give (attribute access)
    def __init__(self, score: Any, reason: Any = None, metrics: Any = None) -> None:
        self.score, self.reason, self.metrics = score, reason, metrics or {}
        self.is_score_valid, self.error = True, None


class MetricResult:
    def __init__(self, score: float, reason: str) -> None:
        self.score, self.reason, self.is_score_valid = score, reason, True


def test_reward_kit_returns() -> None:
    got = coerce(
        Format.REWARD_KIT, {"score": 7.0, "reasoning": "fine", "raw_response": "x", "usage": None}
    )
    assert (got.score, got.explanation, got.metadata) == (
        7.0,
        "fine",
        {"raw_response": "x", "usage": None},
    )
    result = EvaluateResult(
        0.5, "half", {"exact": MetricResult(0.0, "no"), "len": MetricResult(1.0, "ok")}
    )
    got = coerce(Format.REWARD_KIT, result)
    assert got.score == 0.5 and got.explanation == "half"
    assert got.metadata == {
        "sub_scores": {
            "exact": {"score": 0.0, "reason": "no", "is_score_valid": True},
            "len": {"score": 1.0, "reason": "ok", "is_score_valid": True},
        }
    }
    assert coerce(Format.REWARD_KIT, 0.25).score == 0.25  # a bare float: accepted here
    with pytest.raises(InvalidScore, match="EvaluateResult or a dict"):
        coerce(Format.REWARD_KIT, "0.5")
    with pytest.raises(InvalidScore, match='needs "score"'):
        coerce(Format.REWARD_KIT, {"reason": "x"})


def test_grader_returns() -> None:
    got = coerce(Format.GRADER, 1)
    assert (got.score, got.output_type, got.passed) == (1.0, OutputType.FLOAT, None)
    for bad in (True, "1.0", {"score": 1}, float("nan")):
        with pytest.raises(InvalidScore):
            coerce(Format.GRADER, bad)


def test_promptfoo_returns() -> None:
    assert coerce(Format.PROMPTFOO, False).passed is False
    got = coerce(Format.PROMPTFOO, 0.0)
    assert (got.score, got.passed) == (0.0, False)
    assert coerce(Format.PROMPTFOO, 0.3).passed is True
    got = coerce(
        Format.PROMPTFOO,
        {
            "pass": False,
            "score": 0.4,
            "reason": "too short",
            "named_scores": {"length": 0.4},
            "componentResults": [{"pass": False, "score": 0.4, "reason": "len"}],
        },
    )
    assert (got.score, got.passed, got.explanation) == (0.4, False, "too short")
    assert got.metadata == {
        "sub_scores": {"length": {"score": 0.4}},
        "component_results": [{"pass": False, "score": 0.4, "reason": "len"}],
    }
    with pytest.raises(InvalidScore, match="lacks reason"):
        coerce(Format.PROMPTFOO, {"pass": True, "score": 1})
    with pytest.raises(InvalidScore, match="`pass` must be"):
        coerce(Format.PROMPTFOO, {"pass": "yes", "score": 1, "reason": "r"})
    with pytest.raises(InvalidScore, match="GradingResult"):
        coerce(Format.PROMPTFOO, "pass")


class EvaluationResult:  # Phoenix's dataclass shape
    def __init__(self, score: Any = None, label: Any = None, explanation: Any = None) -> None:
        self.score, self.label, self.explanation = score, label, explanation


def test_braintrust_phoenix_returns() -> None:
    assert coerce(Format.BRAINTRUST, True).passed is True
    got = coerce(Format.BRAINTRUST, {"name": "exact", "score": 1, "metadata": {"why": "same"}})
    assert (got.score, got.metadata) == (1, {"name": "exact", "why": "same"})
    got = coerce(Format.BRAINTRUST, [{"name": "a", "score": 1.0}, {"name": "b", "score": 0.0}])
    assert got.score == 0.5
    assert got.metadata == {
        "sub_scores": {"a": {"score": 1.0, "name": "a"}, "b": {"score": 0.0, "name": "b"}}
    }
    got = coerce(Format.BRAINTRUST, (0.8, "good", "close enough"))
    assert (got.score, got.explanation, got.metadata) == (0.8, "close enough", {"label": "good"})
    got = coerce(Format.BRAINTRUST, EvaluationResult(0.0, "bad", "wrong"))
    assert (got.score, got.explanation, got.metadata) == (0.0, "wrong", {"label": "bad"})
    with pytest.raises(InvalidScore, match="only the label"):
        coerce(Format.BRAINTRUST, "good")
    with pytest.raises(InvalidScore, match="no score"):
        coerce(Format.BRAINTRUST, {"label": "good"})
    with pytest.raises(InvalidScore, match="returned None"):
        coerce(Format.BRAINTRUST, None)  # the harness asks skips() first
    assert skips(Format.BRAINTRUST, None) and not skips(Format.BRAINTRUST, 0)
    assert not skips(Format.PROMPTFOO, None) and not skips(Format.GRADER, None)
    with pytest.raises(InvalidScore):
        coerce(Format.BRAINTRUST, object())


def test_langsmith_returns() -> None:
    got = coerce(Format.LANGSMITH, {"key": "correct", "score": True, "comment": "same"})
    assert (got.score, got.passed, got.explanation, got.metadata) == (
        True,
        True,
        "same",
        {"key": "correct"},
    )
    assert coerce(Format.LANGSMITH, 0.5).score == 0.5
    with pytest.raises(InvalidScore, match='needs "score"'):
        coerce(Format.LANGSMITH, {"key": "k", "value": 1})


def test_expected_output_type_still_applies() -> None:
    with pytest.raises(InvalidScore, match="expected a bool"):
        coerce(Format.GRADER, 1.0, OutputType.BOOL)


def test_metadata_is_bounded_and_json_safe() -> None:
    assert bounded_metadata({"x": float("inf"), "o": object}) == {"x": "inf", "o": repr(object)}
    big = bounded_metadata({"x": "y" * (MAX_METADATA_CHARS + 1)})
    assert big is not None and list(big) == ["metadata_dropped"]


def test_table_covers_every_format_with_an_example_that_detects_as_itself() -> None:
    assert set(FORMATS) == set(Format)
    for fmt, spec in FORMATS.items():
        assert spec.example, fmt
        assert _detect(spec.example).format is fmt


def test_host_reads_pass_flag_and_metadata_only_on_ok_rows() -> None:
    import json

    from engine.sandbox.protocol import ProtocolError, RowRecord, parse_record

    ok = {"t": "row", "i": 0, "status": "ok", "score": 0.5, "passed": True, "ms": 1.0}
    ok["metadata"] = {"sub_scores": {"a": {"score": 0.5}}}
    record = parse_record(b"n " + json.dumps(ok).encode(), "n", 65536)
    assert isinstance(record, RowRecord) and record.passed and record.metadata == ok["metadata"]
    for extra in ({"passed": False}, {"metadata": {"x": 1}}):
        bad = {"t": "row", "i": 0, "status": "error", "error": "E", "ms": 1.0, **extra}
        with pytest.raises(ProtocolError):
            parse_record(b"n " + json.dumps(bad).encode(), "n", 65536)
    big = {**ok, "metadata": {"x": "y" * 70000}}
    with pytest.raises(ProtocolError, match="exceeds"):
        parse_record(b"n " + json.dumps(big).encode(), "n", 65536)
