"""validate(): Okareo's published checks validate; each defect has its code and position."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from engine.contract import OutputType, Policy
from engine.environments import PackageRules
from engine.validation import ISSUE_CODES, DeclaredCheck, ValidationReport, validate
from engine.validation.rules import MAX_SOURCE_BYTES

BOTH = ("standard", "restricted")

# --- checks as Okareo publishes them (docs.okareo.com, okareo-python-sdk, okareo-cookbook) -----

OKAREO_DOCS_WORD_COUNT = """\
# In my_custom_check.py
from okareo.checks import CodeBasedCheck

class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(
        model_output: str, scenario_input: str, scenario_result: str
    ) -> Union[bool, int, float]:
        # Your evaluation logic here
        word_count = len(model_output.split())
        return word_count > 10  # Returns True if output has more than 10 words
"""

OKAREO_DOCS_EXACT_MATCH = """\
# In my_custom_check.py
from okareo.checks import CodeBasedCheck, CheckResponse

class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> CheckResponse:
        passed = model_output.strip().lower() == scenario_result.strip().lower()
        return CheckResponse(
            score=passed,
            explanation="Exact match." if passed else "Output did not match reference.",
        )
"""

OKAREO_SDK_SAMPLE = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_input: str, scenario_result: str, metadata: dict) -> bool:  # fmt: skip
        return (
            True
            if len(model_output + scenario_input + scenario_result) >= 20
            else False
        )
"""  # noqa: E501 - verbatim from Okareo

OKAREO_SDK_WITH_EXPLANATION = """\
from okareo.checks import CodeBasedCheck, CheckResponse


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_input: str, scenario_result: str, metadata: dict, model_input: str) -> CheckResponse:  # fmt: skip
        return (
            CheckResponse(
                score=True,
                explanation="The combined length is at least 20 characters."
            )
            if len(model_output + scenario_input + scenario_result + str(model_input))
            + len(metadata)
            >= 20
            else CheckResponse(
                score=False,
                explanation="The combined length is less than 20 characters."
            )
        )
"""  # noqa: E501 - verbatim from Okareo

OKAREO_SDK_METADATA = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_input: str, scenario_result: str, metadata: dict, model_input: str) -> int:  # fmt: skip
        return len(metadata)
"""  # noqa: E501 - verbatim from Okareo

OKAREO_SDK_MODEL_INPUT_SUBSET = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(scenario_input: str, model_input: list) -> bool:  # fmt: skip
        model_input_len = sum([len(str(mi)) for mi in model_input])
        return model_input_len > len(scenario_input)
"""

OKAREO_COOKBOOK_CHARACTER_COUNT = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str) -> int:
        return len(model_output)
"""

OKAREO_COOKBOOK_REQUIRED_PARAMS = """\
import json
from okareo.checks import CodeBasedCheck

class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> bool:
        try:
            tool_call = json.loads(model_output)["tool_calls"][0]
            generated_params = tool_call["parameters"]
            scenario_params = json.loads(scenario_result)["parameter_definitions"]
            for param, d in scenario_params.items():
                if d['required'] and param not in generated_params.keys():
                    return False
            return True
        except Exception as e:
            print(f"Failed to parse JSON 'Are Required Parameters Present' check. Exception: {e}")
            return False
"""

# What Okareo's check generator returned in its checks.ipynb walkthrough (own BaseCheck).
OKAREO_GENERATED_TOKEN_RATIO = """\
from abc import ABC, abstractmethod
import re
import nltk
import spacy
import sklearn

class BaseCheck(ABC):
    @staticmethod
    @abstractmethod
    def evaluate():
        pass

class Check(BaseCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_input: str) -> float:
        # Calculate the number of tokens in model_output and scenario_input
        model_output_tokens = len(model_output.split(' '))
        scenario_input_tokens = len(scenario_input.split(' '))

        # Calculate the ratio of tokens in model_output to tokens in scenario_input
        token_ratio = model_output_tokens / scenario_input_tokens

        return token_ratio
"""

# Okareo's predefined code checks, written as Okareo check files.
DOES_CODE_COMPILE = '''\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str) -> bool:
        """Whether the generated Python code compiles."""
        try:
            compile(model_output, "<string>", "exec")
            return True
        except SyntaxError:
            return False
'''

COMPRESSION_RATIO = '''\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_input: str) -> float:
        """How much shorter (or longer) the output is than the scenario input."""
        if not model_output:
            return 0.0
        return len(scenario_input) / len(model_output)
'''

LEVENSHTEIN_WITH_HELPER = '''\
from okareo.checks import CodeBasedCheck


def levenshtein_distance(s1: str, s2: str) -> int:
    if len(s1) < len(s2):
        return levenshtein_distance(s2, s1)
    if len(s2) == 0:
        return len(s1)
    previous_row = list(range(len(s2) + 1))
    for i, c1 in enumerate(s1):
        current_row = [i + 1]
        for j, c2 in enumerate(s2):
            insertions = previous_row[j + 1] + 1
            deletions = current_row[j] + 1
            substitutions = previous_row[j] + (c1 != c2)
            current_row.append(min(insertions, deletions, substitutions))
        previous_row = current_row
    return previous_row[-1]


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> int:
        """Levenshtein distance between the output and the expected result."""
        return levenshtein_distance(model_output, scenario_result)
'''

LEVENSHTEIN_INPUT_STATIC_HELPER = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def distance(a, b):
        row = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            prev, row[0] = row[0], i
            for j, cb in enumerate(b, 1):
                prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        return row[-1]

    @staticmethod
    def evaluate(scenario_input: str, model_output: str) -> int:
        return Check.distance(model_output, scenario_input)
"""

CONTAINS_ALL_IMPORTS = """\
import ast
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> bool:
        try:
            tree = ast.parse(model_output)
        except SyntaxError:
            return False
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
        return all(name in imported for name in scenario_result.split(","))
"""

TUPLE_RETURN_UNANNOTATED = """\
from okareo.checks import CodeBasedCheck


class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output, scenario_input, scenario_result, metadata=None):
        text = str(model_output or "").strip()
        bad = (not text) or text.lower().startswith(("error", "exception", "timeout"))
        return (not bad), ("clean response" if not bad else "empty/error response")
"""

TUPLE_RETURN_ANNOTATED = """\
from typing import Tuple


def evaluate(model_output: str, scenario_result: str) -> Tuple[float, str]:
    expected = set(scenario_result.lower().split())
    found = expected & set(model_output.lower().split())
    return len(found) / max(len(expected), 1), f"{len(found)} of {len(expected)} words"
"""

CHECK_RESPONSE_WITH_METADATA = """\
from engine.checks import CheckResponse


def evaluate(model_output: str, metadata: dict) -> CheckResponse:
    limit = metadata.get("max_words", 50)
    words = len(model_output.split())
    return CheckResponse(score=words <= limit, explanation=f"{words} words", metadata={"n": words})
"""

DESIGN_FUNCTION = """\
def evaluate(model_output: str) -> float:          # module-level function
    return len(model_output) / 100
"""


@dataclass(frozen=True)
class Expect:
    """What a valid check's report must say."""

    entrypoint: str
    method_kind: str
    signature: tuple[str, ...]
    output: OutputType | None
    var_keyword: bool = False
    warnings: tuple[str, ...] = ()
    policies: tuple[str, ...] = BOTH
    declared: DeclaredCheck | None = None


CLASS = "class"
FN = "function"
STATIC = "staticmethod"
B, N, F = OutputType.BOOL, OutputType.INT, OutputType.FLOAT
MO, SI, SR, MD, MI = "model_output", "scenario_input", "scenario_result", "metadata", "model_input"

# fmt: off
VALID: list[Any] = [
    pytest.param(OKAREO_DOCS_WORD_COUNT, Expect(CLASS, STATIC, (MO, SI, SR), None), id="okareo-docs-word-count"),  # noqa: E501
    pytest.param(OKAREO_DOCS_EXACT_MATCH, Expect(CLASS, STATIC, (MO, SR), None), id="okareo-docs-check-response"),  # noqa: E501
    pytest.param(OKAREO_SDK_SAMPLE, Expect(CLASS, STATIC, (MO, SI, SR, MD), B), id="okareo-sdk-sample"),  # noqa: E501
    pytest.param(OKAREO_SDK_WITH_EXPLANATION, Expect(CLASS, STATIC, (MO, SI, SR, MD, MI), None), id="okareo-sdk-explanation"),  # noqa: E501
    pytest.param(OKAREO_SDK_METADATA, Expect(CLASS, STATIC, (MO, SI, SR, MD, MI), N), id="okareo-sdk-metadata"),  # noqa: E501
    pytest.param(OKAREO_SDK_MODEL_INPUT_SUBSET, Expect(CLASS, STATIC, (SI, MI), B), id="okareo-sdk-subset-any-order"),  # noqa: E501
    pytest.param(OKAREO_COOKBOOK_CHARACTER_COUNT, Expect(CLASS, STATIC, (MO,), N), id="okareo-cookbook-character-count"),  # noqa: E501
    pytest.param(OKAREO_COOKBOOK_REQUIRED_PARAMS, Expect(CLASS, STATIC, (MO, SR), B), id="okareo-cookbook-json-print"),  # noqa: E501
    pytest.param('# /// script\n# dependencies = ["spacy"]\n# ///\n' + OKAREO_GENERATED_TOKEN_RATIO, Expect(CLASS, STATIC, (MO, SI), F, policies=("standard",)), id="okareo-generated-own-basecheck"),  # noqa: E501
    pytest.param(DOES_CODE_COMPILE, Expect(CLASS, STATIC, (MO,), B, policies=("standard",)), id="does-code-compile"),  # noqa: E501
    pytest.param(COMPRESSION_RATIO, Expect(CLASS, STATIC, (MO, SI), F), id="compression-ratio"),
    pytest.param(LEVENSHTEIN_WITH_HELPER, Expect(CLASS, STATIC, (MO, SR), N), id="levenshtein-helper-function"),  # noqa: E501
    pytest.param(LEVENSHTEIN_INPUT_STATIC_HELPER, Expect(CLASS, STATIC, (SI, MO), N), id="levenshtein-input-static-helper"),  # noqa: E501
    pytest.param(CONTAINS_ALL_IMPORTS, Expect(CLASS, STATIC, (MO, SR), B), id="contains-all-imports"),  # noqa: E501
    pytest.param(TUPLE_RETURN_UNANNOTATED, Expect(CLASS, STATIC, (MO, SI, SR, MD), None), id="tuple-return-unannotated"),  # noqa: E501
    pytest.param(TUPLE_RETURN_ANNOTATED, Expect(FN, FN, (MO, SR), F), id="tuple-return-annotated"),
    pytest.param(CHECK_RESPONSE_WITH_METADATA, Expect(FN, FN, (MO, MD), None), id="check-response-metadata"),  # noqa: E501
    pytest.param(DESIGN_FUNCTION, Expect(FN, FN, (MO,), F), id="design-module-function"),
    pytest.param("def evaluate(model_output, **kwargs):\n    return len(kwargs)\n", Expect(FN, FN, (MO,), None, var_keyword=True), id="var-keyword"),  # noqa: E501
    pytest.param("class Check:\n    @classmethod\n    def evaluate(cls, metadata) -> bool:\n        return bool(metadata)\n", Expect(CLASS, "classmethod", (MD,), B), id="classmethod"),  # noqa: E501
    pytest.param("class Check(object):\n    def evaluate(self, model_output) -> float:\n        return 1.0\n", Expect(CLASS, "method", (MO,), F), id="plain-method-self"),  # noqa: E501
    pytest.param("def evaluate(*, scenario_result, model_output) -> int:\n    return 1\n", Expect(FN, FN, (SR, MO), N), id="keyword-only"),  # noqa: E501
    pytest.param("def evaluate(model_output, threshold: int = 10) -> bool:\n    return len(model_output) > threshold\n", Expect(FN, FN, (MO,), B), id="helper-parameter-default"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> bool | None:\n    return None\n", Expect(FN, FN, (MO,), B, warnings=("optional-return",)), id="optional-bool"),  # noqa: E501
    pytest.param("from typing import Optional\ndef evaluate(model_output) -> Optional[int]:\n    return 1\n", Expect(FN, FN, (MO,), N, warnings=("optional-return",)), id="optional-int"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> int | float:\n    return 1\n", Expect(FN, FN, (MO,), F), id="int-or-float-is-float"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> bool | int:\n    return 1\n", Expect(FN, FN, (MO,), None), id="bool-or-int-inferred"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> 'bool':\n    return True\n", Expect(FN, FN, (MO,), B), id="string-annotation"),  # noqa: E501
    pytest.param("from __future__ import annotations\ndef evaluate(model_output) -> Score:\n    return 1\n", Expect(FN, FN, (MO,), None), id="future-annotations-alias"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> tuple[bool, str]:\n    return True, 'ok'\n", Expect(FN, FN, (MO,), B), id="tuple-bool-str"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> dict:\n    return {'score': 1}\n", Expect(FN, FN, (MO,), None), id="dict-form"),  # noqa: E501
    pytest.param("from okareo.checks import CheckResponse\ndef evaluate(model_output) -> CheckResponse:\n    return CheckResponse(score=True)\n", Expect(FN, FN, (MO,), B, declared=DeclaredCheck(output_data_type=B)), id="declared-bool-check-response"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> int:\n    return 1\n", Expect(FN, FN, (MO,), F, declared=DeclaredCheck(output_data_type=F)), id="declared-float-widens-int"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return 1\n", Expect(FN, FN, (MO,), N, declared=DeclaredCheck(output_data_type=N)), id="declared-unannotated"),  # noqa: E501
    pytest.param("def evaluate(scenario_input, **kwargs) -> bool:\n    return 'scenario_result' in kwargs\n", Expect(FN, FN, (SI,), B, var_keyword=True, declared=DeclaredCheck(requires_scenario_input=True, requires_scenario_result=True)), id="declared-requires-with-kwargs"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return 1\nclass Check:\n    @staticmethod\n    def evaluate(model_output, scenario_result) -> bool:\n        return True\n", Expect(CLASS, STATIC, (MO, SR), B, warnings=("ambiguous-entrypoint",)), id="class-wins-over-function"),  # noqa: E501
    pytest.param("class Check:\n    pass\n\ndef evaluate(model_output) -> float:\n    return 0.5\n", Expect(FN, FN, (MO,), F), id="check-without-evaluate-uses-function"),  # noqa: E501
    pytest.param("import re, math, json\nclass Check:\n    @staticmethod\n    def evaluate(model_output) -> float:\n        n = len(re.findall(r'\\w+', model_output))\n        return math.log1p(n) + len(json.dumps([n]))\n", Expect(CLASS, STATIC, (MO,), F), id="re-math-json"),  # noqa: E501
    pytest.param("import urllib.request\ndef evaluate(model_output) -> bool:\n    return True\n", Expect(FN, FN, (MO,), B, warnings=("unusable-import",), policies=("standard",)), id="stdlib-network-import-warns"),  # noqa: E501
]
# fmt: on


@pytest.mark.parametrize(("source", "expect"), VALID)
def test_valid_checks(source: str, expect: Expect) -> None:
    for policy in expect.policies:
        report = validate(source, policy, expect.declared)
        assert report.valid, [i.model_dump() for i in report.issues]
        assert report.policy is Policy(policy)
        assert report.entrypoint == expect.entrypoint
        assert report.method_kind == expect.method_kind
        assert tuple(report.signature) == expect.signature
        assert report.var_keyword is expect.var_keyword
        assert report.output_data_type is expect.output
        declared = expect.declared or DeclaredCheck()
        assert report.requires_scenario_input is (
            declared.requires_scenario_input
            if declared.requires_scenario_input is not None
            else SI in expect.signature
        )
        assert report.requires_scenario_result is (
            declared.requires_scenario_result
            if declared.requires_scenario_result is not None
            else SR in expect.signature
        )
        assert tuple(i.code for i in report.warnings) == expect.warnings


# --- defects: (source, policy, declared, code, line, col) -------------------------------------

R = "restricted"
S = "standard"
TOO_LARGE = "def evaluate(model_output):\n    return 1\n" + "#" * MAX_SOURCE_BYTES
# fmt: off
DEFECTS: list[Any] = [
    pytest.param(TOO_LARGE, S, None, "source-too-large", None, None, id="source-too-large"),
    pytest.param("def evaluate(model_output:\n    return 1\n", S, None, "syntax-error", 1, 13, id="syntax-unclosed"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n  return 1\n   x = 2\n", S, None, "syntax-error", 3, 3, id="syntax-indent"),  # noqa: E501
    pytest.param("return 1\ndef evaluate(model_output):\n    return 1\n", S, None, "syntax-error", 1, 1, id="syntax-compile-time"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    x = 1\0\n", S, None, "syntax-error", None, None, id="syntax-nul-byte"),  # noqa: E501
    pytest.param("import re\ndef evaluate(model_output):\n    return bool(re.match('\\d', model_output))\n", S, None, "syntax-warning", 3, None, id="syntax-warning-escape"),  # noqa: E501
    pytest.param("def helper(model_output):\n    return 1\n", S, None, "no-entrypoint", None, None, id="no-entrypoint"),  # noqa: E501
    pytest.param("x = 1\n\nclass Check:\n    def score(self, model_output):\n        return 1\n", S, None, "no-entrypoint", 3, 1, id="no-entrypoint-class"),  # noqa: E501
    pytest.param("async def evaluate(model_output):\n    return 1\n", S, None, "unsupported-entrypoint", 1, 1, id="async-evaluate"),  # noqa: E501
    pytest.param("def _impl(model_output):\n    return 1\nevaluate = _impl\n", S, None, "unsupported-entrypoint", 3, 1, id="assigned-evaluate"),  # noqa: E501
    pytest.param("from mychecks import Check\n", S, None, "unsupported-entrypoint", 1, 1, id="imported-check"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return 1\n\nclass Check:\n    @staticmethod\n    def evaluate(model_output):\n        return 2\n", S, None, "ambiguous-entrypoint", 1, 1, id="ambiguous-entrypoint"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return 1\n\ndef evaluate(model_output, scenario_input):\n    return 2\n", S, None, "entrypoint-redefined", 4, 1, id="entrypoint-redefined"),  # noqa: E501
    pytest.param("class Check(dict):\n    @staticmethod\n    def evaluate(model_output):\n        return 1\n", S, None, "unexpected-base-class", 1, 13, id="unexpected-base-class"),  # noqa: E501
    pytest.param("import functools\nclass Check:\n    @staticmethod\n    @functools.lru_cache\n    def evaluate(model_output):\n        return 1\n", S, None, "unknown-decorator", 4, 6, id="unknown-decorator"),  # noqa: E501
    pytest.param("from okareo.checks import CodeBasedCheck\n\nclass Check(CodeBasedCheck):\n    def evaluate(model_output: str) -> bool:\n        return True\n", S, None, "missing-self", 4, 18, id="missing-staticmethod"),  # noqa: E501
    pytest.param("class Check:\n    def evaluate():\n        return True\n", S, None, "missing-self", 2, 5, id="method-without-parameters"),  # noqa: E501
    pytest.param("class Check:\n    def __init__(self, threshold):\n        self.threshold = threshold\n\n    def evaluate(self, model_output):\n        return 1\n", S, None, "check-not-instantiable", 2, 5, id="check-not-instantiable"),  # noqa: E501
    pytest.param("def evaluate(model_output, expected):\n    return 1\n", S, None, "unknown-parameter", 1, 28, id="unknown-parameter"),  # noqa: E501
    pytest.param("class Check:\n    @staticmethod\n    def evaluate(model_output: str, résumé: str):\n        return 1\n", S, None, "unknown-parameter", 3, 37, id="unknown-parameter-unicode-column"),  # noqa: E501
    pytest.param("def evaluate(model_output, *, model_output):\n    return 1\n", S, None, "duplicate-parameter", 1, 31, id="duplicate-parameter"),  # noqa: E501
    pytest.param("def evaluate(model_output, *args):\n    return 1\n", S, None, "var-positional", 1, 29, id="var-positional"),  # noqa: E501
    pytest.param("def evaluate(model_output, /):\n    return 1\n", S, None, "positional-only-parameter", 1, 14, id="positional-only"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> str:\n    return 'yes'\n", S, None, "bad-return-annotation", 1, 31, id="returns-str"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> None:\n    print(model_output)\n", S, None, "bad-return-annotation", 1, 31, id="returns-none"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> tuple[float, str, dict]:\n    return 1.0, '', {}\n", S, None, "bad-return-annotation", 1, 31, id="returns-3-tuple"),  # noqa: E501
    pytest.param("from typing import List\ndef evaluate(model_output) -> List[float]:\n    return [1.0]\n", S, None, "bad-return-annotation", 2, 31, id="returns-list"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> float | None:\n    return None\n", S, None, "optional-return", 1, 31, id="optional-return"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    if model_output:\n        return 'PASS'\n    return f'FAIL {model_output}'\n", S, None, "string-return", 3, 9, id="string-return"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> bool:\n    if model_output:\n        return True\n    return 0.5\n", S, None, "return-mismatch", 4, 5, id="return-mismatch-float-for-bool"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> int:\n    if model_output:\n        return 3\n    return 'high'\n", S, None, "return-mismatch", 4, 5, id="return-mismatch-str-for-int"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> float:\n    return 1.0\n", S, DeclaredCheck(output_data_type=OutputType.BOOL), "output-type-mismatch", 1, 31, id="output-type-mismatch"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> float:\n    return 1.0\n", S, DeclaredCheck(output_data_type=OutputType.INT), "output-type-mismatch", 1, 31, id="output-type-float-not-int"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return 1\n", S, DeclaredCheck(requires_scenario_input=True), "requires-mismatch", 1, 1, id="requires-declared-true"),  # noqa: E501
    pytest.param("def evaluate(model_output, scenario_result):\n    return 1\n", S, DeclaredCheck(requires_scenario_result=False), "requires-mismatch", 1, 1, id="requires-declared-false"),  # noqa: E501
    pytest.param("def evaluate(model_output) -> Score:\n    return 1\n", S, None, "undefined-name", 1, 31, id="undefined-name"),  # noqa: E501
    pytest.param("from okareo.checks import CodeBasedCheck, CheckKind\ndef evaluate(model_output):\n    return 1\n", S, None, "unknown-import-name", 1, 43, id="unknown-import-name"),  # noqa: E501
    pytest.param("from .helpers import score\ndef evaluate(model_output):\n    return score(model_output)\n", S, None, "relative-import", 1, 1, id="relative-import"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    import subprocess\n    return 1\n", S, None, "unusable-import", 2, 12, id="unusable-import"),  # noqa: E501
    pytest.param("import requests\ndef evaluate(model_output):\n    return 1\n", S, None, "network-import", 1, 8, id="network-import"),  # noqa: E501
    pytest.param('# /// script\n# dependencies = ["httpx"]\n# ///\nfrom httpx import get\ndef evaluate(model_output):\n    return 1\n', S, None, "network-import", 4, 1, id="network-import-declared"),  # noqa: E501
    pytest.param("import json, torch\ndef evaluate(model_output):\n    return 1\n", S, None, "undeclared-import", 1, 14, id="undeclared-import"),  # noqa: E501
    pytest.param("try:\n    import torch\nexcept ImportError:\n    torch = None\ndef evaluate(model_output):\n    return 1\n", S, None, "unavailable-import", 2, 12, id="guarded-unavailable-import"),  # noqa: E501
    pytest.param('# /// script\n# dependencies = ["textstat"\n# ///\ndef evaluate(model_output):\n    return 1\n', S, None, "dependencies-invalid", 2, 29, id="block-bad-toml"),  # noqa: E501
    pytest.param('# /// script\n# dependencies = ["textstat", "bad name ==="]\n# ///\ndef evaluate(model_output):\n    return 1\n', S, None, "dependencies-invalid", 2, 32, id="block-bad-requirement"),  # noqa: E501
    pytest.param('# /// script\n# requires-python = ">=3.12"\n# ///\ndef evaluate(model_output):\n    return 1\n', S, None, "dependencies-invalid", 2, 3, id="block-requires-python"),  # noqa: E501
    pytest.param('# /// script\n# dependencies = ["Denied_Pkg==1.0"]\n# ///\ndef evaluate(model_output):\n    return 1\n', S, None, "package-not-allowed", 2, 20, id="block-denied-package"),  # noqa: E501
    pytest.param("import os\ndef evaluate(model_output):\n    return 1\n", R, None, "import-not-allowed", 1, 8, id="import-os"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    import subprocess\n    return 1\n", R, None, "import-not-allowed", 2, 12, id="import-subprocess"),  # noqa: E501
    pytest.param("from socket import socket\ndef evaluate(model_output):\n    return 1\n", R, None, "import-not-allowed", 1, 1, id="import-from-socket"),  # noqa: E501
    pytest.param("import yaml\ndef evaluate(model_output):\n    return len(yaml.load(model_output, Loader=yaml.Loader))\n", R, None, "forbidden-attribute", 3, 16, id="restricted-yaml-load"),  # noqa: E501
    pytest.param("from numpy import load\ndef evaluate(model_output):\n    return 1\n", R, None, "forbidden-attribute", 1, 1, id="restricted-numpy-load"),  # noqa: E501
    pytest.param(DOES_CODE_COMPILE, R, None, "forbidden-builtin", 9, 13, id="restricted-compile"),
    pytest.param("def evaluate(model_output):\n    return len(open('/etc/passwd').read())\n", R, None, "forbidden-builtin", 2, 16, id="restricted-open"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return eval(model_output)\n", R, None, "forbidden-builtin", 2, 12, id="restricted-eval"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    exec(model_output)\n    return 1\n", R, None, "forbidden-builtin", 2, 5, id="restricted-exec"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    g = globals()\n    return 1\n", R, None, "forbidden-builtin", 2, 9, id="restricted-globals"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return __builtins__ is None\n", R, None, "private-name", 2, 12, id="restricted-builtins"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    m = __import__('os')\n    return 1\n", R, None, "private-name", 2, 9, id="restricted-dunder-import"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    for c in ().__class__.__base__.__subclasses__():\n        pass\n    return 1\n", R, None, "private-attribute", 2, 17, id="restricted-subclasses-walk"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return evaluate.__globals__\n", R, None, "private-attribute", 2, 21, id="restricted-globals-attribute"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    return getattr(evaluate, '__globals__')\n", R, None, "private-attribute", 2, 30, id="restricted-getattr-dunder"),  # noqa: E501
    pytest.param("def evaluate(model_output):\n    counts = {}\n    counts['a'] += 1\n    return 1\n", R, None, "restricted-syntax", 3, 5, id="restricted-augmented-item"),  # noqa: E501
    pytest.param("if __name__ == '__main__':\n    pass\ndef evaluate(model_output):\n    return 1\n", R, None, "private-name", 1, 4, id="restricted-main-block"),  # noqa: E501
]
# fmt: on


@pytest.mark.parametrize(("source", "policy", "declared", "code", "line", "col"), DEFECTS)
def test_defects(
    source: str,
    policy: str,
    declared: DeclaredCheck | None,
    code: str,
    line: int | None,
    col: int | None,
) -> None:
    report = validate(source, policy, declared, packages=PackageRules.of([], ["denied-*"]))
    found = [(i.code, i.line, i.col) for i in report.issues]
    assert (code, line, col) in found, [i.model_dump() for i in report.issues]
    issue = next(i for i in report.issues if (i.code, i.line, i.col) == (code, line, col))
    assert issue.severity == ISSUE_CODES[code].severity
    assert report.valid is (not report.errors)
    if issue.severity == "error":
        assert not report.valid
    assert ": " in issue.message or "; " in issue.message  # what is wrong: how to fix it


def test_every_code_has_a_defect_row() -> None:
    covered = {p.values[3] for p in DEFECTS}
    assert covered == set(ISSUE_CODES)


def test_table_has_at_least_fifty_cases() -> None:
    assert len(VALID) + len(DEFECTS) >= 50


def test_every_reported_code_is_documented() -> None:
    sources = [p.values[0] for p in [*VALID, *DEFECTS]]
    for source in sources:
        for policy in BOTH:
            for issue in validate(source, policy).issues:
                assert issue.code in ISSUE_CODES
                assert issue.severity == ISSUE_CODES[issue.code].severity


def test_warnings_leave_the_check_valid() -> None:
    guarded = OKAREO_GENERATED_TOKEN_RATIO.replace(
        "import spacy\n", "try:\n    import spacy\nexcept ImportError:\n    spacy = None\n"
    )
    report = validate(guarded, "standard")
    assert report.valid
    assert [i.code for i in report.warnings] == ["unavailable-import"]
    assert "spacy" in report.warnings[0].message


def test_declared_mapping_and_policy_enum_are_accepted() -> None:
    report = validate(DESIGN_FUNCTION, Policy.RESTRICTED, {"output_data_type": "float"})
    assert report.valid
    assert report.output_data_type is OutputType.FLOAT


def test_unknown_policy_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="lenient"):
        validate(DESIGN_FUNCTION, "lenient")


def test_report_round_trips_as_json() -> None:
    report = validate("def evaluate(model_output, output) -> str:\n    return 'x'\n")
    again = ValidationReport.model_validate_json(report.model_dump_json())
    assert again == report
    assert [i.code for i in again.errors] == ["unknown-parameter", "bad-return-annotation"]


def test_messages_name_the_fix() -> None:
    report = validate("def evaluate(model_output, output):\n    return 1\n")
    (issue,) = report.issues
    assert "did you mean `model_output`" in issue.message
    report = validate("class Check:\n    def evaluate(model_output):\n        return 1\n")
    assert "@staticmethod" in report.issues[0].message


def test_issues_are_sorted_by_position() -> None:
    source = dedent(
        """\
        import os
        def evaluate(model_output, a, *args) -> str:
            return open('x').read()
        """
    )
    report = validate(source, "restricted")
    positions = [(i.line or 0, i.col or 0) for i in report.issues]
    assert positions == sorted(positions)
    assert [i.code for i in report.issues] == [
        "import-not-allowed",
        "unknown-parameter",
        "var-positional",
        "bad-return-annotation",
        "forbidden-builtin",
    ]


def test_restricted_reports_rules_standard_does_not() -> None:
    source = "def evaluate(model_output):\n    return model_output.__class__.__name__ == 'str'\n"
    assert validate(source, "standard").valid
    restricted = validate(source, "restricted")
    assert [(i.code, i.col) for i in restricted.issues] == [
        ("private-attribute", 25),
        ("private-attribute", 35),
    ]


def test_shadowed_forbidden_name_is_not_reported() -> None:
    source = "def evaluate(model_output):\n    input = model_output\n    return len(input)\n"
    assert validate(source, "restricted").valid


def test_every_code_is_documented() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "validation.md").read_text()
    for code, info in ISSUE_CODES.items():
        assert f"| `{code}` | {info.severity} |" in docs


def test_cli_validate(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engine.cli import main

    good = tmp_path / "good.py"
    good.write_text(DESIGN_FUNCTION)
    bad = tmp_path / "bad.py"
    bad.write_text("class Check:\n    def evaluate(model_output, output) -> str:\n        pass\n")
    runner = CliRunner()

    result = runner.invoke(main, ["check", "validate", str(good)])
    assert result.exit_code == 0, result.output
    assert "valid (0 error(s), 0 warning(s))" in result.output
    assert "signature:   evaluate(model_output)" in result.output
    assert "output type: float" in result.output

    result = runner.invoke(main, ["check", "validate", str(bad), "--policy", "restricted"])
    assert result.exit_code == 1
    assert f"{bad}:2:18: error missing-self: " in result.output
    assert f"{bad}:2:32: error unknown-parameter: " in result.output

    result = runner.invoke(
        main,
        ["check", "validate", str(good), "--json", "--output-type", "int",
         "--requires-scenario-input"],
    )  # fmt: skip
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert [i["code"] for i in report["issues"]] == ["requires-mismatch", "output-type-mismatch"]


def test_a_network_client_is_refused_naming_it_and_the_way_out() -> None:
    source = "import requests\n\ndef evaluate(model_output):\n    return 1\n"
    report = validate(source, "standard")
    assert not report.valid
    [issue] = [i for i in report.issues if i.code == "network-import"]
    assert "`requests` is not allowed" in issue.message
    assert "model gateway" in issue.message and "# /// script" in issue.message
