"""Deterministic built-in checks: trusted code, run on the host, in process.

Okareo's (``compression_ratio``, ``levenshtein_distance``,
``levenshtein_distance_input``, ``is_json``, ``does_code_compile``,
``contains_all_imports``), OpenAI graders' (``string_check``,
``text_similarity``) and ``exact_match``, ``regex_match``,
``json_schema_match``. Cohere's ``format`` and ``length`` are in
:mod:`engine.builtins.text_format`. Semantics and every decision where the
originals are silent are written in ``docs/checks.md``.
"""

from __future__ import annotations

import ast
import builtins as python_builtins
import json
import re
from typing import Any, Literal

import jsonschema
import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz.distance import Levenshtein

from engine.builtins.base import (
    BuiltinCheck,
    NoParams,
    Outcome,
    RowTimedOut,
    SkipRow,
    as_text,
    per_row,
    require_text,
)
from engine.builtins.similarity import METRICS, similarity
from engine.contract import OutputType
from engine.models import Row

_FENCED = re.compile(r"^\s*```[^\n`]*\n(.*?)\n?```\s*$", re.DOTALL)


def strip_code_fence(text: str) -> str:
    """The body of a reply that is one fenced block (```python ... ```), else ``text``."""
    match = _FENCED.match(text)
    return match.group(1) if match else text


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _reference(row: Row, override: str | None) -> str:
    if override is not None:
        return override
    return require_text(row, "scenario_result")


# --- compression_ratio ----------------------------------------------------------------------


class CompressionRatioParams(_Params):
    unit: Literal["chars", "words"] = Field(
        default="chars", description="Measure lengths in characters (default) or words."
    )


def _length(text: str, unit: str) -> int:
    return len(text.split()) if unit == "words" else len(text)


def _compression_ratio(row: Row, params: CompressionRatioParams) -> Outcome:
    """Okareo's published formula: ``len(model_output) / len(scenario_input)``."""
    source = require_text(row, "scenario_input")
    in_len = _length(source, params.unit)
    if in_len == 0:
        raise SkipRow("scenario_input is empty: the compression ratio is undefined")
    out_len = _length(row.model_output, params.unit)
    return Outcome(out_len / in_len, f"{out_len} / {in_len} {params.unit}")


# --- levenshtein ----------------------------------------------------------------------------


def _levenshtein_result(row: Row, _: NoParams) -> Outcome:
    return Outcome(
        int(Levenshtein.distance(row.model_output, require_text(row, "scenario_result")))
    )


def _levenshtein_input(row: Row, _: NoParams) -> Outcome:
    return Outcome(int(Levenshtein.distance(row.model_output, require_text(row, "scenario_input"))))


# --- is_json / json_schema_match -----------------------------------------------------------


class IsJsonParams(_Params):
    strip_code_fence: bool = Field(
        default=False, description="Accept JSON wrapped in one ``` fenced block."
    )


def _load_json(text: str, strip_fence: bool) -> tuple[Any, str | None]:
    """(value, None) or (None, why it is not JSON)."""
    if strip_fence:
        text = strip_code_fence(text)
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, f"not JSON: {exc}"


def _is_json(row: Row, params: IsJsonParams) -> Outcome:
    _, problem = _load_json(row.model_output, params.strip_code_fence)
    return Outcome(problem is None, problem)


class JsonSchemaParams(_Params):
    json_schema: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="The JSON Schema; default: the row's scenario_result (object or JSON text).",
    )
    strip_code_fence: bool = Field(
        default=False, description="Accept JSON wrapped in one ``` fenced block."
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            try:
                jsonschema.validators.validator_for(value).check_schema(value)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema: {exc.message}") from exc
        return value


def _row_schema(row: Row) -> dict[str, Any]:
    value = row.scenario_result
    if value is None:
        raise SkipRow("the row has no scenario_result (the schema) and no `schema` param is set")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise SkipRow(f"scenario_result is not a JSON Schema (not JSON: {exc})") from exc
    if not isinstance(value, dict):
        raise SkipRow("scenario_result is not a JSON Schema object")
    try:
        jsonschema.validators.validator_for(value).check_schema(value)
    except jsonschema.SchemaError as exc:
        raise SkipRow(f"scenario_result is not a valid JSON Schema: {exc.message}") from exc
    return value


def _json_schema_match(row: Row, params: JsonSchemaParams) -> Outcome:
    schema = params.json_schema if params.json_schema is not None else _row_schema(row)
    value, problem = _load_json(row.model_output, params.strip_code_fence)
    if problem is not None:
        return Outcome(False, problem)
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return Outcome(True)
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return Outcome(False, f"at {where}: {error.message}")


# --- does_code_compile / contains_all_imports -------------------------------------------------


class CodeParams(_Params):
    strip_code_fence: bool = Field(
        default=True, description="Compile the body of one ``` fenced block when the output is one."
    )


def _compile_problem(source: str) -> str | None:
    try:
        compile(source, "<model_output>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{type(exc).__name__} at line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _does_code_compile(row: Row, params: CodeParams) -> Outcome:
    source = strip_code_fence(row.model_output) if params.strip_code_fence else row.model_output
    problem = _compile_problem(source)
    return Outcome(problem is None, problem)


_MODULE_NAMES = frozenset(
    {"__name__", "__file__", "__doc__", "__builtins__", "__spec__", "__package__", "__loader__"}
)


_TYPE_PARAMS = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple"})


def _imported(node: ast.Import | ast.ImportFrom) -> tuple[list[str], bool]:
    """The names an import binds, and whether it is an ``import *``."""
    names = [alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"]
    return names, len(names) < len(node.names)


def _defined(node: ast.AST) -> tuple[str, ...]:
    """The names a node other than a name or an import binds: a definition, an argument,
    an ``except ... as``, a ``global``/``nonlocal``, a match capture or a type parameter."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return (node.name,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, ast.Global | ast.Nonlocal):
        return tuple(node.names)
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return (node.name,) if node.name else ()
    if isinstance(node, ast.MatchMapping):
        return (node.rest,) if node.rest else ()
    if type(node).__name__ in _TYPE_PARAMS:  # PEP 695 (Python 3.12+)
        return (str(getattr(node, "name", "")),)
    return ()


def _bound_and_used(tree: ast.AST) -> tuple[set[str], dict[str, int], bool]:
    """Names bound anywhere, names read (with their first line), whether ``import *`` occurs."""
    bound: set[str] = set()
    used: dict[str, int] = {}
    star = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                used.setdefault(node.id, node.lineno)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names, starred = _imported(node)
            bound.update(names)
            star = star or starred
        else:
            bound.update(_defined(node))
    return bound, used, star


def _contains_all_imports(row: Row, params: CodeParams) -> Outcome:
    source = strip_code_fence(row.model_output) if params.strip_code_fence else row.model_output
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Outcome(False, f"the code does not parse ({type(exc).__name__}: {exc})")
    bound, used, star = _bound_and_used(tree)
    known = bound | set(dir(python_builtins)) | _MODULE_NAMES
    missing = sorted((name for name in used if name not in known), key=lambda n: used[n])
    if not missing:
        return Outcome(True)
    if star:
        return Outcome(True, f"`import *` may provide: {', '.join(missing)}")
    listed = ", ".join(f"{name} (line {used[name]})" for name in missing)
    return Outcome(False, f"used but never imported or defined: {listed}")


# --- string_check / exact_match / regex_match / text_similarity -----------------------------


class StringCheckParams(_Params):
    operation: Literal["eq", "ne", "like", "ilike"] = Field(
        default="eq",
        description="eq: equal; ne: not equal; like: contains the reference; "
        "ilike: contains it, ignoring case.",
    )
    reference: str | None = Field(
        default=None, description="The reference text; default: the row's scenario_result."
    )


def _string_check(row: Row, params: StringCheckParams) -> Outcome:
    text, reference = row.model_output, _reference(row, params.reference)
    if params.operation == "eq":
        return Outcome(text == reference)
    if params.operation == "ne":
        return Outcome(text != reference)
    if params.operation == "like":
        return Outcome(reference in text)
    return Outcome(reference.casefold() in text.casefold())


class ExactMatchParams(_Params):
    strip: bool = Field(default=True, description="Ignore leading and trailing whitespace.")
    ignore_case: bool = Field(default=False, description="Compare case-insensitively.")
    reference: str | None = Field(
        default=None, description="The expected text; default: the row's scenario_result."
    )


def _exact_match(row: Row, params: ExactMatchParams) -> Outcome:
    expected: Any = params.reference if params.reference is not None else row.scenario_result
    if expected is None:
        raise SkipRow("the row has no scenario_result, which the check requires")
    if not isinstance(expected, str):  # a JSON value: compare parsed values
        try:
            return Outcome(json.loads(row.model_output) == expected)
        except ValueError:
            return Outcome(False, "scenario_result is JSON but model_output is not")
    a, b = row.model_output, expected
    if params.strip:
        a, b = a.strip(), b.strip()
    if params.ignore_case:
        a, b = a.casefold(), b.casefold()
    return Outcome(a == b)


#: Longest accepted regex; patterns run on the host, keep them small.
MAX_PATTERN_CHARS = 1000
#: Time one pattern may spend on one row (catastrophic backtracking stops here).
REGEX_TIMEOUT_SECONDS = 1.0


class RegexParams(_Params):
    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description="A Python regular expression (re syntax; run with a 1 s limit per row).",
    )
    full_match: bool = Field(
        default=False, description="Match the whole output instead of searching anywhere in it."
    )
    ignore_case: bool = False
    multiline: bool = Field(default=False, description="^ and $ match at every line.")
    dotall: bool = Field(default=False, description=". matches newlines too.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            regex.compile(value)
        except regex.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    def compiled(self) -> Any:
        flags = (
            (regex.IGNORECASE if self.ignore_case else 0)
            | (regex.MULTILINE if self.multiline else 0)
            | (regex.DOTALL if self.dotall else 0)
        )
        return regex.compile(self.pattern, flags)


def _regex_match(row: Row, params: RegexParams) -> Outcome:
    pattern = params.compiled()
    find = pattern.fullmatch if params.full_match else pattern.search
    try:
        match = find(row.model_output, timeout=REGEX_TIMEOUT_SECONDS)
    except TimeoutError as exc:
        raise RowTimedOut(
            f"the pattern ran longer than {REGEX_TIMEOUT_SECONDS} s on this row "
            "(catastrophic backtracking?): simplify it"
        ) from exc
    if match is None:
        return Outcome(False)
    return Outcome(True, f"matched {match.group(0)[:200]!r} at {match.start()}")


class TextSimilarityParams(_Params):
    evaluation_metric: Literal[
        "fuzzy_match", "bleu", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"
    ] = Field(default="fuzzy_match", description=f"One of {', '.join(METRICS)}.")
    reference: str | None = Field(
        default=None, description="The reference text; default: the row's scenario_result."
    )
    pass_threshold: float | None = Field(
        default=None, ge=0, le=1, description="When set, the explanation says pass or fail."
    )


def _text_similarity(row: Row, params: TextSimilarityParams) -> Outcome:
    value = similarity(
        params.evaluation_metric, row.model_output, _reference(row, params.reference)
    )
    if params.pass_threshold is None:
        return Outcome(value)
    verdict = "pass" if value >= params.pass_threshold else "fail"
    return Outcome(
        value,
        f"{verdict} ({params.evaluation_metric} {value:.4f} vs threshold {params.pass_threshold})",
    )


def deterministic_builtins() -> list[BuiltinCheck[Any]]:
    """Every deterministic built-in defined in this module."""
    return [
        BuiltinCheck(
            "compression_ratio",
            "Length of model_output divided by length of scenario_input (Okareo's "
            "len(model_output) / len(scenario_input); characters, or words with unit=words); "
            "below 1 means the output is shorter.",
            OutputType.FLOAT,
            CompressionRatioParams,
            per_row(_compression_ratio),
            requires=("scenario_input",),
        ),
        BuiltinCheck(
            "levenshtein_distance",
            "Levenshtein edit distance (characters) between model_output and scenario_result.",
            OutputType.INT,
            NoParams,
            per_row(_levenshtein_result),
            requires=("scenario_result",),
        ),
        BuiltinCheck(
            "levenshtein_distance_input",
            "Levenshtein edit distance (characters) between model_output and scenario_input.",
            OutputType.INT,
            NoParams,
            per_row(_levenshtein_input),
            requires=("scenario_input",),
        ),
        BuiltinCheck(
            "is_json",
            "Whether model_output parses as JSON.",
            OutputType.BOOL,
            IsJsonParams,
            per_row(_is_json),
        ),
        BuiltinCheck(
            "does_code_compile",
            "Whether model_output compiles as Python source (it is never run).",
            OutputType.BOOL,
            CodeParams,
            per_row(_does_code_compile),
        ),
        BuiltinCheck(
            "contains_all_imports",
            "Whether every name the Python code in model_output uses is imported, defined "
            "or a builtin.",
            OutputType.BOOL,
            CodeParams,
            per_row(_contains_all_imports),
        ),
        BuiltinCheck(
            "string_check",
            "OpenAI-grader string check of model_output against a reference: eq, ne, like "
            "(contains), ilike (contains, any case).",
            OutputType.BOOL,
            StringCheckParams,
            per_row(_string_check),
            requires=("scenario_result",),
        ),
        BuiltinCheck(
            "text_similarity",
            "OpenAI-grader text similarity of model_output to a reference, 0..1: fuzzy_match, "
            "bleu, rouge_1..rouge_5, rouge_l.",
            OutputType.FLOAT,
            TextSimilarityParams,
            per_row(_text_similarity),
            requires=("scenario_result",),
        ),
        BuiltinCheck(
            "exact_match",
            "Whether model_output equals scenario_result (trimmed; JSON values compared parsed).",
            OutputType.BOOL,
            ExactMatchParams,
            per_row(_exact_match),
            requires=("scenario_result",),
        ),
        BuiltinCheck(
            "regex_match",
            "Whether a regular expression matches model_output (search, or full_match).",
            OutputType.BOOL,
            RegexParams,
            per_row(_regex_match),
        ),
        BuiltinCheck(
            "json_schema_match",
            "Whether model_output is JSON valid against a JSON Schema (param `schema`, or the "
            "row's scenario_result).",
            OutputType.BOOL,
            JsonSchemaParams,
            per_row(_json_schema_match),
        ),
    ]


__all__ = ["as_text", "deterministic_builtins", "strip_code_fence"]
