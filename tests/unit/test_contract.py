"""The check contract: score coercion, entrypoint resolution, binding, small helpers."""

from __future__ import annotations

import math
import typing
from typing import Any

import pytest

from engine import contract
from engine.checks import CheckResponse, CodeBasedCheck
from engine.contract import (
    EntrypointError,
    InvalidScore,
    OutputType,
    bind_arguments,
    coerce_score,
    missing_inputs,
    resolve_entrypoint,
    signature_of,
)
from engine.validation import rules as check_rules

# --- numpy-like scalars without numpy: coerce_score only looks at type(x).__module__ ---------


class _Scalar:
    ndim = 0

    def __init__(self, value: Any) -> None:
        self.value = value

    def item(self) -> Any:
        return self.value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class float64(_Scalar):  # noqa: N801 - named like numpy's
    pass


class int64(_Scalar):  # noqa: N801
    pass


class bool_(_Scalar):  # noqa: N801
    pass


class ndarray(_Scalar):  # noqa: N801
    ndim = 1


for _cls in (float64, int64, bool_, ndarray):
    _cls.__module__ = "numpy"


class NotNumpy(_Scalar):
    """Has item() and ndim, but is not from numpy: left alone (and rejected)."""


# (value, expected type or None, score, output type, explanation)
COERCED = [
    pytest.param(True, None, True, OutputType.BOOL, None, id="bool"),
    pytest.param(False, OutputType.BOOL, False, OutputType.BOOL, None, id="bool-expected"),
    pytest.param(3, None, 3, OutputType.INT, None, id="int"),
    pytest.param(0.25, None, 0.25, OutputType.FLOAT, None, id="float"),
    pytest.param(3, OutputType.FLOAT, 3.0, OutputType.FLOAT, None, id="int-widened-to-float"),
    pytest.param(2**63 - 1, None, 2**63 - 1, OutputType.INT, None, id="int-max"),
    pytest.param(-(2**63), None, -(2**63), OutputType.INT, None, id="int-min"),
    pytest.param((True, "long enough"), None, True, OutputType.BOOL, "long enough", id="tuple"),
    pytest.param((0.5, 7), None, 0.5, OutputType.FLOAT, "7", id="tuple-explanation-str"),
    pytest.param(
        CheckResponse(score=0.5, explanation="why"),
        None,
        0.5,
        OutputType.FLOAT,
        "why",
        id="check-response",
    ),
    pytest.param(
        {"score": 2, "explanation": "dict form"},
        OutputType.INT,
        2,
        OutputType.INT,
        "dict form",
        id="dict-form",
    ),
    pytest.param(float64(0.75), None, 0.75, OutputType.FLOAT, None, id="numpy-float64"),
    pytest.param(int64(4), None, 4, OutputType.INT, None, id="numpy-int64"),
    pytest.param(bool_(True), None, True, OutputType.BOOL, None, id="numpy-bool"),
    pytest.param(int64(4), OutputType.FLOAT, 4.0, OutputType.FLOAT, None, id="numpy-int-widened"),
    pytest.param((float64(0.5), "np"), None, 0.5, OutputType.FLOAT, "np", id="numpy-in-tuple"),
]


@pytest.mark.parametrize(("value", "expected", "score", "output_type", "explanation"), COERCED)
def test_coerce_score_accepts(
    value: Any,
    expected: OutputType | None,
    score: Any,
    output_type: OutputType,
    explanation: str | None,
) -> None:
    result = coerce_score(value, expected)
    assert result.score == score
    assert type(result.score) is type(score)
    assert result.output_type is output_type
    assert result.explanation == explanation


REJECTED = [
    pytest.param("1", None, "bool, int or float", id="str"),
    pytest.param(None, None, "bool, int or float", id="none"),
    pytest.param([1], None, "bool, int or float", id="list"),
    pytest.param(2**63, None, "64-bit", id="int-too-large"),
    pytest.param(-(2**63) - 1, None, "64-bit", id="int-too-small"),
    pytest.param(math.nan, None, "finite", id="nan"),
    pytest.param(math.inf, None, "finite", id="inf"),
    pytest.param(-math.inf, OutputType.FLOAT, "finite", id="minus-inf"),
    pytest.param(True, OutputType.INT, "expected a int", id="bool-is-not-int"),
    pytest.param(1, OutputType.BOOL, "expected a bool", id="int-is-not-bool"),
    pytest.param(1.0, OutputType.INT, "expected a int", id="float-is-not-int"),
    pytest.param(0.5, OutputType.BOOL, "expected a bool", id="float-is-not-bool"),
    pytest.param((1,), None, "got 1 items", id="tuple-of-one"),
    pytest.param((1, "a", "b"), None, "got 3 items", id="tuple-of-three"),
    pytest.param((CheckResponse(score=1), "x"), None, "bool, int or float", id="nested-response"),
    pytest.param(
        CheckResponse(score=1, metadata=[1]),  # type: ignore[arg-type]  # the invalid value under test
        None,
        "metadata",
        id="metadata-not-dict",
    ),
    pytest.param({"score": 1, "other": 2}, None, "bool, int or float", id="dict-extra-keys"),
    pytest.param(float64(math.nan), None, "finite", id="numpy-nan"),
    pytest.param(ndarray(1.0), None, "bool, int or float", id="numpy-array"),
    pytest.param(NotNumpy(1.0), None, "bool, int or float", id="not-numpy"),
]


@pytest.mark.parametrize(("value", "expected", "match"), REJECTED)
def test_coerce_score_rejects(value: Any, expected: OutputType | None, match: str) -> None:
    with pytest.raises(InvalidScore, match=match):
        coerce_score(value, expected)


def test_coerce_score_keeps_metadata_and_truncates_explanations() -> None:
    long = "x" * (contract.MAX_EXPLANATION_CHARS + 10)
    result = coerce_score(CheckResponse(score=True, explanation=long, metadata={"k": 1}))
    assert result.metadata == {"k": 1}
    assert result.explanation is not None
    assert len(result.explanation) == contract.MAX_EXPLANATION_CHARS
    assert result.explanation.endswith("...")


# --- entrypoints and signatures ---------------------------------------------------------------


def _namespace(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "scorebox_check", **contract.check_prelude()}
    exec(compile(source, "<check>", "exec", dont_inherit=True), namespace)
    return namespace


ENTRYPOINTS = [
    pytest.param(
        "def evaluate(model_output: str) -> float:\n    return len(model_output) / 100\n",
        ("model_output",),
        False,
        id="module-function",
    ),
    pytest.param(
        "from engine.checks import CodeBasedCheck\n"
        "class Check(CodeBasedCheck):\n"
        "    @staticmethod\n"
        "    def evaluate(scenario_result, model_output):\n"
        "        return model_output == scenario_result\n",
        ("scenario_result", "model_output"),
        False,
        id="staticmethod-any-order",
    ),
    pytest.param(
        "class Check:\n"
        "    @classmethod\n"
        "    def evaluate(cls, model_output, metadata):\n"
        "        return len(metadata)\n",
        ("model_output", "metadata"),
        False,
        id="classmethod",
    ),
    pytest.param(
        "class Check:\n    def evaluate(self, model_input):\n        return model_input is None\n",
        ("model_input",),
        False,
        id="plain-method",
    ),
    pytest.param(
        "def evaluate(model_output, **kwargs):\n    return len(kwargs)\n",
        ("model_output",),
        True,
        id="var-keyword",
    ),
    pytest.param(
        "def evaluate(model_output, threshold=10):\n    return len(model_output) > threshold\n",
        ("model_output",),
        False,
        id="helper-parameter-with-default",
    ),
    pytest.param(
        "def evaluate(*, scenario_input, model_output):\n    return 1\n",
        ("scenario_input", "model_output"),
        False,
        id="keyword-only",
    ),
]


@pytest.mark.parametrize(("source", "parameters", "var_keyword"), ENTRYPOINTS)
def test_resolve_entrypoint_forms(
    source: str, parameters: tuple[str, ...], var_keyword: bool
) -> None:
    func, signature = resolve_entrypoint(_namespace(source))
    assert callable(func)
    assert signature.parameters == parameters
    assert signature.var_keyword is var_keyword


def test_var_keyword_receives_every_parameter() -> None:
    _, signature = resolve_entrypoint(_namespace("def evaluate(metadata, **kw):\n    return 1\n"))
    assert signature.bound[0] == "metadata"
    assert set(signature.bound) == set(contract.PARAMETER_NAMES)
    assert missing_inputs(signature.parameters, {"model_output": "x"}) == []


def test_class_wins_over_module_function() -> None:
    source = (
        "def evaluate(model_output):\n    return 'function'\n"
        "class Check:\n    @staticmethod\n    def evaluate(model_output):\n        return 'class'\n"
    )
    func, _ = resolve_entrypoint(_namespace(source))
    assert func("x") == "class"


def test_check_without_evaluate_falls_back_to_function() -> None:
    source = "class Check:\n    pass\ndef evaluate(model_output):\n    return 'function'\n"
    func, _ = resolve_entrypoint(_namespace(source))
    assert func("x") == "function"


ENTRYPOINT_ERRORS = [
    pytest.param("x = 1\n", "define a function", id="nothing"),
    pytest.param("def evaluate(*args):\n    return 1\n", r"\*args", id="var-positional"),
    pytest.param("def evaluate(output):\n    return 1\n", "unknown parameter", id="unknown"),
    pytest.param(
        "class Check:\n"
        "    def __init__(self, x):\n        self.x = x\n"
        "    def evaluate(self, model_output):\n        return 1\n",
        "instantiated",
        id="needs-init-arguments",
    ),
]


@pytest.mark.parametrize(("source", "match"), ENTRYPOINT_ERRORS)
def test_resolve_entrypoint_errors(source: str, match: str) -> None:
    with pytest.raises(EntrypointError, match=match):
        resolve_entrypoint(_namespace(source))


def test_signature_of_inherited_base() -> None:
    class Check(CodeBasedCheck):
        @staticmethod
        def evaluate(model_output: str, scenario_input: str) -> bool:
            return model_output == scenario_input

    assert signature_of(Check.evaluate).parameters == ("model_output", "scenario_input")


# --- binding ----------------------------------------------------------------------------------

BINDINGS = [
    pytest.param(
        ("model_output", "metadata"),
        {"model_output": "out"},
        {"model_output": "out", "metadata": {}},
        id="metadata-defaults-to-empty-dict",
    ),
    pytest.param(
        ("scenario_result",),
        {"model_output": "out", "scenario_result": {"a": 1}},
        {"scenario_result": {"a": 1}},
        id="json-value",
    ),
    pytest.param(
        ("model_input", "scenario_input"),
        {"model_output": "out"},
        {"model_input": None, "scenario_input": None},
        id="absent-is-none",
    ),
    pytest.param((), {"model_output": "out"}, {}, id="nothing"),
]


@pytest.mark.parametrize(("parameters", "row", "expected"), BINDINGS)
def test_bind_arguments(
    parameters: tuple[str, ...], row: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert bind_arguments(parameters, row) == expected


MISSING = [
    pytest.param(("model_output",), {"model_output": "x"}, [], id="requires-nothing"),
    pytest.param(("scenario_input",), {"model_output": "x"}, ["scenario_input"], id="absent"),
    pytest.param(
        ("scenario_input", "scenario_result"),
        {"scenario_input": None, "scenario_result": ""},
        ["scenario_input"],
        id="null-missing-empty-present",
    ),
    pytest.param(("metadata", "model_input"), {}, [], id="never-required"),
]


@pytest.mark.parametrize(("parameters", "row", "expected"), MISSING)
def test_missing_inputs(
    parameters: tuple[str, ...], row: dict[str, Any], expected: list[str]
) -> None:
    assert missing_inputs(parameters, row) == expected


def test_requires_from_parameters() -> None:
    assert check_rules.requires_from_parameters(("scenario_result",)) == {
        "requires_scenario_input": False,
        "requires_scenario_result": True,
    }


# --- helpers the validator and the harness share ----------------------------------------------


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("re", True),
        ("collections.abc", True),
        ("okareo.checks", True),
        ("okareo", False),
        ("os", False),
        ("os.path", False),
        ("subprocess", False),
        ("importlib", False),
    ],
)
def test_import_allowed(module: str, allowed: bool) -> None:
    assert contract.import_allowed(module) is allowed


@pytest.mark.parametrize(
    ("module", "reason"),
    [("socket", "network"), ("urllib.request", "network"), ("subprocess", "process"), ("re", None)],
)
def test_unusable_reason(module: str, reason: str | None) -> None:
    found = check_rules.unusable_reason(module)
    assert (found is None) if reason is None else (found is not None and reason in found)


@pytest.mark.parametrize(
    ("module", "importable"),
    [
        ("json", True),
        ("numpy", True),
        ("okareo.checks", True),
        ("okareo", True),
        ("engine.checks", True),
        ("engine.settings", False),
        ("spacy", False),
        ("torch", False),
    ],
)
def test_sandbox_can_import(module: str, importable: bool) -> None:
    assert check_rules.sandbox_can_import(module) is importable


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("output", "model_output"),
        ("generation", "model_output"),
        ("expected", "scenario_result"),
        ("scenario_inputs", "scenario_input"),
        ("threshold", None),
    ],
)
def test_suggest_parameter(name: str, suggestion: str | None) -> None:
    assert check_rules.suggest_parameter(name) == suggestion


@pytest.mark.parametrize(
    ("line", "offset", "col"),
    [("abc = 1", 4, 5), ("é = 1; x", 8, 8), ("'日本' + y", 11, 8)],
)
def test_char_column(line: str, offset: int, col: int) -> None:
    assert contract.char_column(line, offset) == col


def test_check_prelude_binds_typing_names() -> None:
    prelude = contract.check_prelude()
    assert set(prelude) == set(contract.PRELUDE_TYPING_NAMES)
    assert prelude["Union"] is typing.Union
    assert prelude["Optional"] is typing.Optional


def test_restricted_builtin_lists_are_disjoint() -> None:
    assert not set(contract.RESTRICTED_EXTRA_BUILTINS) & set(contract.RESTRICTED_FORBIDDEN_BUILTINS)


@pytest.mark.parametrize(
    ("module", "denied"),
    [
        ("yaml", False),
        ("yaml.constructor", True),
        ("numpy.lib.npyio", True),
        ("numpy.linalg", False),
        ("json", False),
    ],
)
def test_denied_module(module: str, denied: bool) -> None:
    assert (contract.denied_module(module) is not None) is denied


def test_denied_attribute() -> None:
    assert contract.denied_attribute("yaml", "load") is not None
    assert contract.denied_attribute("yaml", "safe_load") is None
    assert contract.denied_attribute("numpy", "mean") is None


def test_positional_only_contract_parameter_is_refused_at_run_time() -> None:
    from engine.contract import EntrypointError, signature_of

    def evaluate(model_output: str, /) -> bool:
        return True

    with pytest.raises(EntrypointError, match="positional-only"):
        signature_of(evaluate)
