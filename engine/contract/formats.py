"""Other tools' scorer formats, as data: entry points, parameters, bindings, return shapes.

The one table (:data:`FORMATS`) the validator, the harness, the generator's prompts and
docs/checks.md read. Functions here are pure: which format a file is in and which
function is its entry (from the file's ``ast``, the same in the validator and in the
harness), what each parameter receives from a row (:func:`bind`), and what a return
value means (:func:`coerce`). Carried into the sandbox image (stdlib only).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.contract.params import (
    ENTRYPOINT_CLASS,
    ENTRYPOINT_FUNCTION,
    PARAMETER_NAMES,
    EntrypointError,
)
from engine.contract.returns import InvalidScore, Score, coerce_score
from engine.contract.statuses import MAX_EXPLANATION_CHARS, OutputType


class Format(StrEnum):
    """A scorer format scorebox runs unchanged."""

    OKAREO = "okareo"
    REWARD_KIT = "reward-kit"
    GRADER = "grader"
    PROMPTFOO = "promptfoo"
    #: Braintrust code scorers and Phoenix code evaluators bind the same names: one adapter.
    BRAINTRUST = "braintrust"
    LANGSMITH = "langsmith"


#: Stand-in modules in the sandbox image for other tools' packages (top-level import name);
#: ``sandbox_images/python/stand-in-modules/``. A check's declared real package wins.
STAND_IN_MODULES: tuple[str, ...] = (
    "reward_kit",
    "eval_protocol",
    "langsmith",
    "phoenix",
    "braintrust",
)

#: Row fields a row may carry for other formats (besides Okareo's PARAMETER_NAMES).
FORMAT_ROW_FIELDS: tuple[str, ...] = (
    "messages",
    "item",
    "sample",
    "vars",
    "ground_truth",
    "output",
)

#: Formats whose tools pass the task's output as it was returned (a dict, a list, a
#: number): their ``output`` is the row's ``output`` when it has one, else its
#: ``model_output`` parsed when that is a JSON object, array or number (:func:`output_of`).
STRUCTURED_OUTPUT_FORMATS: frozenset[Format] = frozenset(
    {Format.PROMPTFOO, Format.BRAINTRUST, Format.LANGSMITH}
)

#: Formats whose tools await an ``async def`` entry (OpenAI graders and Okareo call theirs).
ASYNC_FORMATS: frozenset[Format] = frozenset(
    {Format.PROMPTFOO, Format.BRAINTRUST, Format.LANGSMITH, Format.REWARD_KIT}
)


@dataclass(frozen=True)
class FormatSpec:
    """One format: how its entry is found, what its parameters receive, what it may return."""

    format: Format
    title: str
    #: Function names that make a function this format's entry (besides a decorator).
    entry_names: tuple[str, ...]
    #: Parameter name -> what it is bound to (a sentence for people; :func:`bind` does it).
    parameters: Mapping[str, str]
    returns: tuple[str, ...]
    #: Where scorebox differs from the tool itself.
    differences: tuple[str, ...] = ()
    #: A decorator that marks the entry (any name).
    decorator: str | None = None
    #: The entry must take ``**kwargs`` (reward-kit refuses functions without it).
    needs_var_keyword: bool = False
    #: The entry is called positionally with exactly this many parameters (names free).
    positional: int | None = None
    #: Whether its results carry a pass flag (then the check's pass rate uses it).
    pass_flag: bool = False
    #: A ``None`` return skips the row (status ``skipped``), as the tool itself does.
    none_skips: bool = False
    example: str = ""


FORMATS: Mapping[Format, FormatSpec] = {
    spec.format: spec
    for spec in (
        FormatSpec(
            Format.OKAREO,
            "Okareo CodeBasedCheck",
            (ENTRYPOINT_FUNCTION,),
            {
                "model_output": "the row's model_output",
                "scenario_input": "the row's scenario_input (missing: the row is skipped)",
                "scenario_result": "the row's scenario_result (missing: the row is skipped)",
                "metadata": "the row's metadata ({} when absent)",
                "model_input": "the row's model_input",
            },
            (
                "bool, int or float",
                "(score, explanation)",
                "CheckResponse(score, explanation, metadata)",
                '{"score", "explanation"?, "metadata"?}',
            ),
            example=(
                "from okareo.checks import CodeBasedCheck\n\n\n"
                "class Check(CodeBasedCheck):\n"
                "    @staticmethod\n"
                "    def evaluate(model_output: str, scenario_result: str) -> bool:\n"
                "        return model_output.strip() == scenario_result.strip()\n"
            ),
        ),
        FormatSpec(
            Format.REWARD_KIT,
            "reward-kit / Fireworks / eval-protocol reward function",
            (),
            {
                "messages": "the row's messages, else [user: scenario_input, assistant: "
                "model_output] leaving out what the row lacks (Message objects when "
                "annotated List[Message])",
                "ground_truth": "the row's ground_truth, else its scenario_result",
                "**kwargs": "nothing: scorebox rows carry no extra fields (never scorebox's "
                "own parameter names)",
                "other keyword parameters": "the check's configuration (its key of that "
                "name), else their default",
            },
            (
                "EvaluateResult(score, reason, metrics)",
                '{"score", "reason"|"reasoning"?, "metrics"?, ...} (other keys -> metadata)',
                "a bare number (real reward-kit refuses it)",
            ),
            (
                "a bare float is accepted (reward-kit refuses it)",
                "metrics (MetricResult score, reason, is_score_valid) are kept as sub-scores "
                "in the result's metadata",
            ),
            decorator="reward_function",
            needs_var_keyword=True,
            example=(
                "from reward_kit import EvaluateResult, MetricResult, reward_function\n\n\n"
                "@reward_function\n"
                "def exact(messages, ground_truth=None, **kwargs):\n"
                '    reply = messages[-1]["content"]\n'
                "    ok = reply.strip() == str(ground_truth).strip()\n"
                "    return EvaluateResult(\n"
                '        score=1.0 if ok else 0.0, reason="exact match" if ok else "differs",\n'
                '        metrics={"exact": MetricResult(score=float(ok), reason="compared")},\n'
                "    )\n"
            ),
        ),
        FormatSpec(
            Format.GRADER,
            "OpenAI / Azure python grader",
            ("grade",),
            {
                "sample": 'the row\'s sample, else {"output_text": model_output, '
                '"output_json": model_output parsed when it is JSON, "choices": [...]}',
                "item": "the row's item, else the row's fields as a dict",
            },
            ("a number (documented range 0..1)",),
            ("anything that is not a finite number is invalid_score (OpenAI grades it 0)",),
            positional=2,
            example=(
                "def grade(sample, item) -> float:\n"
                '    return 1.0 if sample["output_text"] == item["reference"] else 0.0\n'
            ),
        ),
        FormatSpec(
            Format.PROMPTFOO,
            "promptfoo python assertion",
            ("get_assert",),
            {
                "output": "the row's output, else model_output parsed when it is a JSON "
                "object, array or number",
                "context": '{"prompt": scenario_input, "vars": the row\'s vars (else its '
                'metadata), "test": {"vars", "metadata"}, "config": the check\'s '
                'configuration, "metadata"}',
            },
            (
                "bool",
                "a number (pass = score > 0)",
                'GradingResult {"pass", "score", "reason", "namedScores"?, '
                '"componentResults"?} (snake_case accepted)',
            ),
            ("a GradingResult without pass, score or reason is invalid_score",),
            positional=2,
            pass_flag=True,
            example=(
                "def get_assert(output, context):\n"
                '    ok = context["vars"]["expected"] in output\n'
                '    return {"pass": ok, "score": 1.0 if ok else 0.0, "reason": "substring"}\n'
            ),
        ),
        FormatSpec(
            Format.BRAINTRUST,
            "Braintrust code scorer / Phoenix code evaluator",
            ("handler",),
            {
                "input": "the row's scenario_input",
                "output": "the row's output, else model_output parsed when it is a JSON "
                "object, array or number",
                "expected": "the row's scenario_result (else ground_truth)",
                "reference": "the same as expected (Phoenix's alias)",
                "metadata": "the row's metadata",
                "example": '{"input", "output": expected, "metadata"}',
            },
            (
                "bool or a number",
                '{"score", "name"?, "metadata"?} or {"score", "label", "explanation"}',
                "a list of those (several named scores; the score is their mean)",
                "(score, label[, explanation])",
                "EvaluationResult(score, label, explanation)",
            ),
            (
                "numbers outside 0..1 are accepted (Phoenix accepts them, Braintrust does not)",
                "a label alone (no score) is invalid_score: scorebox keeps a score per row",
                "None skips the row (status skipped), as Braintrust does",
            ),
            none_skips=True,
            example=(
                "def handler(input, output, expected):\n"
                '    return {"name": "exact", "score": 1.0 if output == expected else 0.0}\n'
            ),
        ),
        FormatSpec(
            Format.LANGSMITH,
            "LangSmith custom evaluator",
            (),
            {
                "inputs": 'the row\'s scenario_input when a dict, else {"input": it}',
                "outputs": "the row's output (else model_output parsed when a JSON object, "
                'array or number) when a dict, else {"output": it}',
                "reference_outputs": 'scenario_result when a dict, else {"output": it}',
                "run": '{"inputs", "outputs"}',
                "example": '{"inputs", "outputs": reference_outputs, "metadata"}',
            },
            (
                "bool or a number",
                '{"key", "score", "comment"?}',
                'a list of those, or {"results": [...]} (several metrics: each a named '
                "sub-score, the score is their mean)",
            ),
            example=(
                "def correct(outputs: dict, reference_outputs: dict) -> dict:\n"
                '    ok = outputs["output"] == reference_outputs["output"]\n'
                '    return {"key": "correct", "score": ok, "comment": "exact"}\n'
            ),
        ),
    )
}

#: Formats the generator writes (``--format``).
GENERATOR_FORMATS: tuple[Format, ...] = (
    Format.GRADER,
    Format.PROMPTFOO,
    Format.REWARD_KIT,
    Format.OKAREO,
)

_KEYWORD_FORMATS: tuple[Format, ...] = (Format.BRAINTRUST, Format.LANGSMITH)

#: Phoenix's decorator marking an evaluator (``phoenix.experiments.evaluators``).
PHOENIX_DECORATOR = "create_evaluator"

#: Formats whose files import a stand-in module (``reward_kit``), which the restricted
#: policy's import allowlist does not hold: the generator vets and runs them under the
#: standard policy (still in the sandbox).
STANDARD_POLICY_FORMATS: frozenset[Format] = frozenset({Format.REWARD_KIT})


def format_of_source(source: str) -> Format | None:
    """The format a check's source is in, or None when it has no (single) entry."""
    try:
        return detect(*shapes_of(ast.parse(source))).format
    except (SyntaxError, ValueError):
        return None


# -- which function is the entry ---------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    has_default: bool
    annotation: str = ""


@dataclass(frozen=True)
class FunctionShape:
    """A top-level function of a check file, as its source declares it."""

    name: str
    params: tuple[Param, ...]
    var_keyword: bool = False
    var_positional: bool = False
    decorators: tuple[str, ...] = ()
    line: int = 0
    #: ``async def``: the harness runs the coroutine to completion within the row's limits.
    is_async: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if not p.has_default)


@dataclass(frozen=True)
class Detected:
    """A file's format and its entry function (``Check`` for an Okareo class)."""

    format: Format
    entry: str
    shape: FunctionShape | None = None
    bindings: Mapping[str, str] = field(default_factory=dict)


class FormatError(EntrypointError):
    """No entry, or several: the message says how to name one."""


def _dotted_tail(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def shapes_of(tree: ast.Module) -> tuple[list[FunctionShape], bool]:
    """The file's top-level functions, and whether it defines a ``Check`` class."""
    shapes: list[FunctionShape] = []
    has_check = False
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == ENTRYPOINT_CLASS:
            has_check = True
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = stmt.args
        positional = [*args.posonlyargs, *args.args]
        first_default = len(positional) - len(args.defaults)
        params = [
            Param(a.arg, i >= first_default, ast.unparse(a.annotation) if a.annotation else "")
            for i, a in enumerate(positional)
        ]
        params += [
            Param(a.arg, d is not None, ast.unparse(a.annotation) if a.annotation else "")
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
        ]
        shapes.append(
            FunctionShape(
                stmt.name,
                tuple(params),
                args.kwarg is not None,
                args.vararg is not None,
                tuple(_dotted_tail(d) for d in stmt.decorator_list),
                stmt.lineno,
                isinstance(stmt, ast.AsyncFunctionDef),
            )
        )
    return shapes, has_check


def fits(fmt: Format, shape: FunctionShape) -> bool:
    """Whether ``shape``'s parameters fit ``fmt`` (its name aside)."""
    spec = FORMATS[fmt]
    names = [p.name for p in shape.params]
    if shape.var_positional and fmt is not Format.GRADER and fmt is not Format.PROMPTFOO:
        return False
    if fmt is Format.REWARD_KIT:
        return spec.decorator in shape.decorators
    if spec.positional is not None:
        return len(shape.required) == spec.positional and len(names) >= spec.positional
    if fmt is Format.OKAREO:
        return all(n in PARAMETER_NAMES for n in shape.required)
    known = set(spec.parameters)
    return bool(shape.required) and all(n in known for n in shape.required)


def _named_fit(fmt: Format, shape: FunctionShape) -> bool:
    """A function that has no entry name fits a positional format only by its names."""
    spec = FORMATS[fmt]
    if spec.positional is None:
        return fits(fmt, shape)
    names = tuple(p.name for p in shape.params[: spec.positional])
    return fits(fmt, shape) and names == tuple(spec.parameters)


def detect(shapes: Sequence[FunctionShape], has_check: bool, entry: str | None = None) -> Detected:
    """The file's format and entry, or :class:`FormatError` saying how to pick one."""
    by_name = {s.name: s for s in shapes}  # the last definition wins, as in Python
    if entry is not None and entry != ENTRYPOINT_CLASS:
        shape = by_name.get(entry)
        if shape is None:
            raise FormatError(f"the file has no top-level function `{entry}` (the named entry)")
        return _detected(_format_of(shape, explicit=True), shape)
    if has_check:
        return Detected(Format.OKAREO, ENTRYPOINT_CLASS)
    decorated = [s for s in by_name.values() if "reward_function" in s.decorators]
    if len(decorated) > 1:
        raise FormatError(_several([s.name for s in decorated], "are @reward_function"))
    if decorated:
        return _detected(Format.REWARD_KIT, decorated[0])
    marked = [s for s in by_name.values() if PHOENIX_DECORATOR in s.decorators]
    if len(marked) > 1:
        raise FormatError(_several([s.name for s in marked], f"are @{PHOENIX_DECORATOR}"))
    if marked:
        return _detected(_format_of(marked[0], explicit=True), marked[0])
    for name in (ENTRYPOINT_FUNCTION, "grade", "get_assert", "handler"):
        shape = by_name.get(name)
        if shape is not None:
            return _detected(_format_of(shape, explicit=False), shape)
    candidates: list[tuple[FunctionShape, Format]] = []
    for shape in by_name.values():
        if shape.name.startswith("_"):
            continue
        formats = (Format.GRADER, Format.PROMPTFOO, *_KEYWORD_FORMATS)
        matching = [f for f in formats if _named_fit(f, shape)]
        if len(matching) == 1:
            candidates.append((shape, matching[0]))
    if len(candidates) > 1:
        raise FormatError(_several([s.name for s, _ in candidates], "fit a scorer format"))
    if candidates:
        return _detected(candidates[0][1], candidates[0][0])
    raise FormatError(
        "the file has no entrypoint: define `evaluate(model_output, ...)` or a class `Check` "
        "(Okareo), `grade(sample, item)` (OpenAI grader), `get_assert(output, context)` "
        "(promptfoo), a @reward_function (reward-kit), or one public function taking "
        "input/output/expected (Braintrust, Phoenix) or inputs/outputs/reference_outputs "
        "(LangSmith)"
    )


def one_argument_output(fmt: Format, shape: FunctionShape) -> bool:
    """Phoenix binds a one-parameter evaluator whose name it does not know to the output."""
    if fmt is not Format.BRAINTRUST or len(shape.params) != 1 or shape.var_positional:
        return False
    return shape.params[0].name not in FORMATS[fmt].parameters


def _several(names: list[str], what: str) -> str:
    listed = ", ".join(f"`{n}`" for n in names)
    return (
        f"several functions {what}: {listed}; name the entry at upload (`entry` in the API, "
        "`--entry` in the CLI) or make the others private with a leading `_`"
    )


def _format_of(shape: FunctionShape, *, explicit: bool) -> Format:
    """The format of an entry found by its name, or named at upload (``explicit``)."""
    if "reward_function" in shape.decorators:
        return Format.REWARD_KIT
    preferred = {
        ENTRYPOINT_FUNCTION: Format.OKAREO,
        "grade": Format.GRADER,
        "get_assert": Format.PROMPTFOO,
    }.get(shape.name)
    if preferred is not None and fits(preferred, shape):
        return preferred
    order: tuple[Format, ...] = (Format.OKAREO,) if shape.name == ENTRYPOINT_FUNCTION else ()
    order += (*_KEYWORD_FORMATS, Format.GRADER)
    for fmt in order:
        if _named_fit(fmt, shape):
            return fmt
    if explicit and fits(Format.PROMPTFOO, shape):
        return Format.PROMPTFOO  # promptfoo's file://x.py:fn takes any two names
    if (explicit or shape.name == "handler") and one_argument_output(Format.BRAINTRUST, shape):
        return Format.BRAINTRUST  # Phoenix: one parameter, any name, gets the output
    if preferred is not None:
        return preferred  # its own error (bindings) names what is wrong
    raise FormatError(
        f"`{shape.name}` takes {', '.join(shape.required) or 'no parameters'}, which fit no "
        "scorer format: see docs/checks.md for each format's parameters"
    )


def _detected(fmt: Format, shape: FunctionShape) -> Detected:
    return Detected(fmt, shape.name, shape, bindings_of(fmt, shape))


def bindings_of(fmt: Format, shape: FunctionShape) -> dict[str, str]:
    """What each of the entry's parameters is bound to, or :class:`FormatError`."""
    spec = FORMATS[fmt]
    out: dict[str, str] = {}
    if shape.is_async and fmt not in ASYNC_FORMATS:
        raise FormatError(
            f"`{shape.name}` is `async def`, but a {spec.title} is called synchronously: "
            "make it a plain `def`"
        )
    if spec.needs_var_keyword and not shape.var_keyword:
        raise FormatError(
            f"`{shape.name}` is a @reward_function without `**kwargs`: reward-kit requires "
            "it, add `**kwargs` to its parameters"
        )
    if spec.positional is not None:
        if len(shape.required) != spec.positional:
            wanted = ", ".join(spec.parameters)
            raise FormatError(
                f"`{shape.name}` must take exactly {spec.positional} parameters ({wanted}); "
                f"it takes {', '.join(shape.required) or 'none'}"
            )
        for param, meaning in zip(shape.params, spec.parameters.values(), strict=False):
            out[param.name] = meaning
        return out
    if one_argument_output(fmt, shape):
        out[shape.params[0].name] = spec.parameters["output"] + " (Phoenix binds a "
        out[shape.params[0].name] += "one-parameter evaluator to the output)"
        return out
    for param in shape.params:
        if param.name in spec.parameters:
            out[param.name] = spec.parameters[param.name]
        elif param.has_default:
            configured = " (or the check's configuration)" if fmt in CONFIGURED_BY_KEYWORD else ""
            out[param.name] = "its default" + configured
        else:
            raise FormatError(
                f"`{param.name}` is not a parameter of a {spec.title}: it may take "
                f"{', '.join(n for n in spec.parameters if not n.startswith(('*', 'other')))}"
            )
    if shape.var_keyword and fmt is Format.REWARD_KIT:
        out["**kwargs"] = spec.parameters["**kwargs"]
    return out


# -- binding a row ----------------------------------------------------------------------


def _parsed(text: Any, *, containers_only: bool = True) -> Any:
    """``text`` parsed as JSON, or None when it is not JSON (an object or array)."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if containers_only and not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _structured(text: Any) -> Any:
    """``text`` parsed when it is a JSON object, array or number; else None."""
    parsed = _parsed(text, containers_only=False)
    if isinstance(parsed, dict | list) or (
        isinstance(parsed, int | float) and not isinstance(parsed, bool)
    ):
        if isinstance(parsed, float) and not math.isfinite(parsed):
            return None  # json.loads reads NaN and Infinity, which no tool returns as output
        return parsed
    return None


def output_of(row: Mapping[str, Any]) -> Any:
    """The task's output as a structured-output format's tool passes it.

    The row's ``output`` (any JSON value) when it has one; else its ``model_output``
    parsed when that is a JSON object, array or number; else ``model_output`` itself.
    """
    if row.get("output") is not None:
        return row["output"]
    text = row.get("model_output")
    parsed = _structured(text)
    return text if parsed is None else parsed


def messages_of(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The row's ``messages``, or built from its scenario_input and model_output."""
    given = row.get("messages")
    if given is not None:
        return [dict(m) if isinstance(m, Mapping) else m for m in given]
    built: list[dict[str, Any]] = []
    if row.get("scenario_input") is not None:
        prompt = row["scenario_input"]
        built.append(
            {"role": "user", "content": prompt if isinstance(prompt, str) else json.dumps(prompt)}
        )
    if row.get("model_output") is not None:
        built.append({"role": "assistant", "content": row["model_output"]})
    return built


def _row_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "i" and v is not None}


def _as_dict(value: Any, key: str) -> Any:
    return value if isinstance(value, dict) else {key: value}


class Record(dict[str, Any]):
    """A dict whose keys are also attributes: LangSmith's ``run.outputs`` and ``example.inputs``
    work on it as on the SDK's ``Run`` and ``Example``, and it stays JSON."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


#: Formats whose entries take the check's configuration as keyword parameters.
CONFIGURED_BY_KEYWORD: frozenset[Format] = frozenset({Format.REWARD_KIT, Format.BRAINTRUST})


def bind(
    fmt: Format,
    shape: FunctionShape,
    row: Mapping[str, Any],
    message: Callable[[dict[str, Any]], Any] | None = None,
    config: Mapping[str, Any] | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for the entry, from a row.

    ``message`` builds a ``Message`` object from a dict, for parameters annotated
    ``List[Message]`` (the harness passes ``reward_kit.Message``). ``config`` is the check
    version's configuration: promptfoo's ``context["config"]``, and the keyword
    parameters of reward-kit and Braintrust scorers that the row does not bind.
    """
    if fmt is Format.GRADER:
        sample = row.get("sample")
        if sample is None:
            output = row.get("model_output")
            sample = {
                "output_text": output,
                "output_json": _parsed(output),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": output},
                    }
                ],
            }
        item = row.get("item")
        if item is None:
            item = _row_fields(row)
        return [sample, item], {}
    if fmt is Format.PROMPTFOO:
        metadata = row.get("metadata") or {}
        variables = row.get("vars")
        if variables is None:
            variables = metadata
        context = {
            "prompt": row.get("scenario_input"),
            "vars": variables,
            "test": {"vars": variables, "metadata": metadata},
            "config": dict(config or {}),
            "metadata": metadata,
        }
        return [output_of(row), context], {}
    values = _keyword_values(fmt, row)
    if one_argument_output(fmt, shape):
        return [], {shape.params[0].name: values["output"]}
    kwargs: dict[str, Any] = {}
    configured = dict(config or {}) if fmt in CONFIGURED_BY_KEYWORD else {}
    for param in shape.params:
        if param.name in values:
            value = values[param.name]
            if param.name == "messages" and message is not None and "Message" in param.annotation:
                value = [message(m) if isinstance(m, dict) else m for m in value]
            kwargs[param.name] = value
        elif param.name in configured:
            kwargs[param.name] = configured[param.name]
    if shape.var_keyword and fmt is Format.REWARD_KIT:
        # reward-kit hands the caller's other keyword arguments to **kwargs
        kwargs.update({k: v for k, v in configured.items() if k not in kwargs})
    return [], kwargs


def _keyword_values(fmt: Format, row: Mapping[str, Any]) -> dict[str, Any]:
    metadata = row.get("metadata") or {}
    expected = row.get("scenario_result")
    if expected is None:
        expected = row.get("ground_truth")
    if fmt is Format.OKAREO:
        return {name: row.get(name) for name in PARAMETER_NAMES} | {"metadata": metadata}
    if fmt is Format.REWARD_KIT:
        truth = row.get("ground_truth")
        return {
            "messages": messages_of(row),
            "ground_truth": row.get("scenario_result") if truth is None else truth,
        }
    if fmt is Format.BRAINTRUST:
        return {
            "input": row.get("scenario_input"),
            "output": output_of(row),
            "expected": expected,
            "reference": expected,
            "metadata": metadata,
            "example": {
                "input": row.get("scenario_input"),
                "output": expected,
                "metadata": metadata,
            },
        }
    inputs = _as_dict(row.get("scenario_input"), "input")
    outputs = _as_dict(output_of(row), "output")
    reference = _as_dict(expected, "output")
    return {
        "inputs": inputs,
        "outputs": outputs,
        "reference_outputs": reference,
        "run": Record(inputs=inputs, outputs=outputs),
        "example": Record(inputs=inputs, outputs=reference, metadata=metadata),
    }


# -- what a return value means ----------------------------------------------------------

#: Longest result metadata (sub-scores, a format's extra keys) kept, as JSON characters.
MAX_METADATA_CHARS = 16384


def bounded_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """JSON-safe metadata within :data:`MAX_METADATA_CHARS`, or a note that it was dropped."""
    if not metadata:
        return None
    safe = jsonable(dict(metadata))
    size = len(json.dumps(safe, ensure_ascii=False))
    if size > MAX_METADATA_CHARS:
        return {"metadata_dropped": f"{size} characters of metadata, over {MAX_METADATA_CHARS}"}
    return safe  # type: ignore[no-any-return]


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value`` (objects become their fields or their repr)."""
    if depth > 8:
        return repr(value)[:200]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump(), depth + 1)
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return {k: jsonable(v, depth + 1) for k, v in fields.items() if not k.startswith("_")}
    return repr(value)[:200]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_EXPLANATION_CHARS:
        text = text[: MAX_EXPLANATION_CHARS - 3] + "..."
    return text


def _finish(
    score: Any,
    expected: OutputType | None,
    *,
    explanation: Any = None,
    passed: Any = None,
    metadata: dict[str, Any] | None = None,
) -> Score:
    base = coerce_score(score, expected)
    if passed is not None and not isinstance(passed, bool):
        raise InvalidScore(f"`pass` must be true or false, got {type(passed).__name__}")
    return Score(base.score, base.output_type, _text(explanation), metadata or None, passed)


def skips(fmt: Format, value: Any) -> bool:
    """Whether ``value`` returned by a ``fmt`` entry skips the row (Braintrust's ``None``,
    or a ``Score`` / ``{"score": None}`` without a score)."""
    if not FORMATS[fmt].none_skips:
        return False
    if value is None:
        return True
    if isinstance(value, Mapping):
        return "score" in value and value["score"] is None
    return type(value).__name__ == "Score" and getattr(value, "score", 0) is None


#: Formats whose checks may report a row ``skipped`` themselves (the host accepts it).
SELF_SKIPPING: frozenset[Format] = frozenset(f for f, spec in FORMATS.items() if spec.none_skips)


def coerce(fmt: Format, value: Any, expected: OutputType | None = None) -> Score:
    """What the entry returned, as a :class:`Score`; or :class:`InvalidScore` naming the fix."""
    if fmt is Format.OKAREO:
        return coerce_score(value, expected)
    if value is None:
        raise InvalidScore(
            f"the {FORMATS[fmt].title} returned None: return a score (scorebox keeps one per row)"
        )
    if fmt is Format.REWARD_KIT:
        return _reward_kit(value, expected)
    if fmt is Format.GRADER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidScore(f"a grader returns a number, got {type(value).__name__}")
        return _finish(float(value), expected)
    if fmt is Format.PROMPTFOO:
        return _promptfoo(value, expected)
    if fmt is Format.LANGSMITH:
        return _langsmith(value, expected)
    return _braintrust(value, expected)


def _metric_named(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """LangSmith's uploaded code evaluators return ``{"metric_name": score, "comment"?}``:
    as ``{"key": "metric_name", "score": score, "comment"}``."""
    named = [k for k in value if k not in {"comment", "key", "value", "results"}]
    if len(named) == 1 and isinstance(value[named[0]], bool | int | float):
        return {"key": named[0], "score": value[named[0]]} | (
            {"comment": value["comment"]} if "comment" in value else {}
        )
    return value


def _langsmith(value: Any, expected: OutputType | None) -> Score:
    if isinstance(value, Mapping) and "results" in value:
        value = value["results"]  # LangSmith's {"results": [...]}: several metrics
    if isinstance(value, list):
        if not value:
            raise InvalidScore("the evaluator returned an empty list of results")
        parts = [_langsmith(v, None) for v in value]
        keys = [_field(v, "key") or f"score_{i}" for i, v in enumerate(value)]
        subs = {
            str(k): {"score": p.score}
            | ({"comment": p.explanation} if p.explanation is not None else {})
            for k, p in zip(keys, parts, strict=True)
        }
        mean = sum(float(p.score) for p in parts) / len(parts)
        return _finish(mean, expected, metadata={"sub_scores": subs})
    if isinstance(value, Mapping) and "score" not in value:
        value = _metric_named(value)
    if isinstance(value, Mapping) or type(value).__name__ == "EvaluationResult":
        score = _field(value, "score")
        if score is None:
            raise InvalidScore('a LangSmith result needs "score" (and "key", "comment")')
        if isinstance(value, Mapping):
            extra = {k: jsonable(v) for k, v in value.items() if k not in {"score", "comment"}}
        else:
            extra = {"key": jsonable(_field(value, "key"))} if _field(value, "key") else {}
        return _finish(
            score, expected, explanation=_field(value, "comment"),
            passed=score if isinstance(score, bool) else None, metadata=extra,
        )  # fmt: skip
    return _finish(value, expected, passed=value if isinstance(value, bool) else None)


def _sub_scores(entries: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, entry in entries.items():
        if isinstance(entry, bool | int | float):
            out[str(name)] = {"score": entry}
            continue
        fields = {
            k: jsonable(_field(entry, k))
            for k in ("score", "pass", "reason", "is_score_valid", "success", "data")
            if _field(entry, k) is not None
        }
        out[str(name)] = fields or jsonable(entry)
    return out


def _reward_kit(value: Any, expected: OutputType | None) -> Score:
    if isinstance(value, bool | int | float):
        return _finish(value, expected)
    if not isinstance(value, Mapping) and type(value).__name__ != "EvaluateResult":
        raise InvalidScore(
            f"a reward function returns EvaluateResult or a dict with score, got "
            f"{type(value).__name__}"
        )
    score = _field(value, "score")
    if score is None:
        raise InvalidScore('a reward function\'s result needs "score"')
    reason = _field(value, "reason")
    if reason is None:
        reason = _field(value, "reasoning")
    metadata: dict[str, Any] = {}
    metrics = _field(value, "metrics")
    if metrics:
        if not isinstance(metrics, Mapping):
            raise InvalidScore(
                f"metrics must be a dict of MetricResult, got {type(metrics).__name__}"
            )
        metadata["sub_scores"] = _sub_scores(metrics)
    if isinstance(value, Mapping):
        skip = {"score", "reason", "reasoning", "metrics"}
        metadata.update({str(k): jsonable(v) for k, v in value.items() if k not in skip})
    else:
        for key in ("is_score_valid", "error"):
            if _field(value, key) is not None and _field(value, key) is not True:
                metadata[key] = jsonable(_field(value, key))
    return _finish(score, expected, explanation=reason, metadata=metadata)


def _promptfoo(value: Any, expected: OutputType | None) -> Score:
    if isinstance(value, bool):
        return _finish(value, expected, passed=value)
    if isinstance(value, int | float):
        score = coerce_score(value, expected)
        return _finish(score.score, expected, passed=float(score.score) > 0)
    if not isinstance(value, Mapping):
        raise InvalidScore(
            f"a promptfoo assertion returns bool, a number or a GradingResult dict, got "
            f"{type(value).__name__}"
        )
    lacking = [k for k in ("pass", "score", "reason") if k not in value]
    if lacking:
        raise InvalidScore(
            f"a GradingResult needs pass, score and reason; it lacks {', '.join(lacking)}"
        )
    metadata: dict[str, Any] = {}
    named = value.get("namedScores", value.get("named_scores"))
    if named:
        metadata["sub_scores"] = _sub_scores(named)
    components = value.get("componentResults", value.get("component_results"))
    if components:
        metadata["component_results"] = jsonable(components)
    skip = {"pass", "score", "reason", "namedScores", "named_scores"}
    skip |= {"componentResults", "component_results"}
    metadata.update({str(k): jsonable(v) for k, v in value.items() if k not in skip})
    return _finish(
        value["score"], expected, explanation=value["reason"], passed=value["pass"],
        metadata=metadata,
    )  # fmt: skip


def _braintrust(value: Any, expected: OutputType | None) -> Score:
    if isinstance(value, bool | int | float):
        return _finish(value, expected, passed=value if isinstance(value, bool) else None)
    if isinstance(value, str):
        raise InvalidScore(
            f"the evaluator returned only the label {value[:80]!r}: return (score, label) or "
            '{"score", "label"}, since scorebox keeps a score per row'
        )
    if isinstance(value, tuple):
        if not 2 <= len(value) <= 3:
            raise InvalidScore(
                f"a tuple result is (score, label[, explanation]); got {len(value)} items"
            )
        label = value[1]
        return _finish(
            value[0], expected, explanation=value[2] if len(value) == 3 else None,
            metadata={"label": jsonable(label)} if label is not None else None,
        )  # fmt: skip
    if isinstance(value, list):
        if not value:
            raise InvalidScore("the scorer returned an empty list of scores")
        parts = [_braintrust(v, None) for v in value]
        names = [_field(v, "name") or f"score_{i}" for i, v in enumerate(value)]
        mean = sum(float(p.score) for p in parts) / len(parts)
        subs = {
            str(n): {"score": p.score} | (p.metadata or {})
            for n, p in zip(names, parts, strict=True)
        }
        return _finish(mean, expected, metadata={"sub_scores": subs})
    if isinstance(value, Mapping) or type(value).__name__ in {"EvaluationResult", "Score"}:
        score = _field(value, "score")
        if score is None:
            raise InvalidScore(
                "the evaluator's result has no score: return a number with the label, "
                "since scorebox keeps a score per row"
            )
        metadata = {}
        for key in ("name", "label"):
            if _field(value, key) is not None:
                metadata[key] = jsonable(_field(value, key))
        extra = _field(value, "metadata")
        if isinstance(extra, Mapping):
            metadata.update({str(k): jsonable(v) for k, v in extra.items()})
        return _finish(score, expected, explanation=_field(value, "explanation"), metadata=metadata)
    raise InvalidScore(
        f"a scorer returns a number, a dict with score, or a list of them; got "
        f"{type(value).__name__}"
    )
