"""The generator's prompts, built from :mod:`engine.contract`. Pure.

Every fact about checks (parameter names and meanings, entrypoint forms,
return types, importable modules, model-check placeholders) is read from the
contract module, so the prompts change when the contract does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.contract import (
    CHECK_BASE_CLASSES,
    CHECK_BASE_MODULES,
    ENTRYPOINT_CLASS,
    ENTRYPOINT_FUNCTION,
    PARAMETER_NAMES,
    REQUIRABLE_PARAMETERS,
    RESTRICTED_FORBIDDEN_BUILTINS,
    RESTRICTED_IMPORT_ALLOWLIST,
    OutputType,
    Status,
    import_allowed,
)
from engine.contract.checks import CheckResponse
from engine.contract.formats import FORMATS, STANDARD_POLICY_FORMATS, Format
from engine.judging.templates import model_check_type
from engine.validation import Issue
from engine.validation.rules import (
    LEGACY_PLACEHOLDERS,
    MODEL_CHECK_PLACEHOLDERS,
    PARAMETER_DOCS,
    SANDBOX_PACKAGES,
    SANDBOX_UNUSABLE_MODULES,
    ModelCheckType,
)
from generator.models import Example, ExampleResult
from generator.repair import EXAMPLE_BUDGET, REPAIR_BUDGET, RowBudget, within_budget

#: Longest row value shown in a prompt, in characters.
MAX_VALUE_CHARS = 1500
Message = dict[str, str]


@dataclass(frozen=True)
class GenerationSpec:
    """What the user asked for."""

    description: str
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    output_type: OutputType = OutputType.BOOL
    kind: str = "code"  # "code" | "model"
    examples: tuple[Example, ...] = ()
    prior_code: str | None = None
    #: The scorer format to write (engine.contract.formats); Okareo's is scorebox's own.
    format: Format = Format.OKAREO


# -- facts from the contract ---------------------------------------------------------------


def _base_class() -> str:
    return "CodeBasedCheck" if "CodeBasedCheck" in CHECK_BASE_CLASSES else min(CHECK_BASE_CLASSES)


def importable_modules() -> tuple[list[str], list[str]]:
    """(standard-library modules, third-party packages) a restricted check may import."""
    third_party = sorted(p.import_name for p in SANDBOX_PACKAGES if import_allowed(p.import_name))
    internal = {*CHECK_BASE_MODULES, "__future__"}
    stdlib = sorted(
        m
        for m in RESTRICTED_IMPORT_ALLOWLIST
        if m not in internal and m.split(".")[0] not in third_party
    )
    return stdlib, third_party


def _check_response_signature() -> str:
    parts = []
    for f in dataclasses.fields(CheckResponse):
        has_default = f.default is not dataclasses.MISSING
        parts.append(f"{f.name}={f.default!r}" if has_default else f.name)
    return f"{CheckResponse.__name__}({', '.join(parts)})"


def _parameter_lines() -> str:
    return "\n".join(f"  - `{name}`: {PARAMETER_DOCS[name]}" for name in PARAMETER_NAMES)


def code_system_prompt() -> str:
    """The system message for code checks: the whole contract, from the contract module."""
    stdlib, third_party = importable_modules()
    types = ", ".join(f"`{t.value}`" for t in OutputType)
    base, module = _base_class(), CHECK_BASE_MODULES[0]
    unusable = ", ".join(sorted(SANDBOX_UNUSABLE_MODULES))
    forbidden = ", ".join(f"`{name}`" for name in RESTRICTED_FORBIDDEN_BUILTINS)
    return f"""\
You write checks for scorebox: small, deterministic Python functions that score one \
output of an LLM application.

The check contract:
- Define a module-level function `{ENTRYPOINT_FUNCTION}(...)`, or a class \
`{ENTRYPOINT_CLASS}({base})` (`from {module} import {base}, {CheckResponse.__name__}`) \
whose `{ENTRYPOINT_FUNCTION}` is a `@staticmethod`.
- `{ENTRYPOINT_FUNCTION}` takes, by name, only the parameters it needs from:
{_parameter_lines()}
  Any other parameter name, and `*args`, make the check invalid.
- It returns the score: one of {types} (annotate it, e.g. `-> bool`), or \
`{_check_response_signature()}`, or a `(score, explanation)` tuple. \
Never return None, a string, NaN or infinity.
- Imports: only these standard-library modules: {", ".join(stdlib)}; and these packages: \
{", ".join(third_party)}. Anything else ({unusable}, os, sys, files...) makes the check invalid.
- The check runs in a sandbox: no network, no subprocesses, no files, a time limit per row. \
It is compiled with RestrictedPython: no names or attributes starting with an underscore, \
and these builtins do not exist: {forbidden}.
- Handle missing or oddly-typed inputs gracefully (e.g. `scenario_input` may be a JSON value \
rather than a string), do not print, and keep it fast.

Reply with the complete check in a single ```python block. Add nothing after the block."""


def format_system_prompt(fmt: Format) -> str:
    """The system message for a check in another tool's format, from the format table."""
    spec = FORMATS[fmt]
    stdlib, third_party = importable_modules()
    if fmt in STANDARD_POLICY_FORMATS:
        third_party = [*third_party, "reward_kit (scorebox's stand-in)"]
    parameters = "\n".join(f"  - `{name}`: {meaning}" for name, meaning in spec.parameters.items())
    returns = "; ".join(spec.returns)
    entry = (
        f"a function decorated with `@{spec.decorator}` (any name)"
        if spec.decorator
        else " or ".join(f"`{name}`" for name in spec.entry_names) or "one public function"
    )
    notes = "".join(f"\n- Note: {d}." for d in spec.differences)
    return f"""\
You write scorers for scorebox in the {spec.title} format: small, deterministic Python \
functions that score one output of an LLM application. scorebox runs them unchanged.

The format:
- The entry is {entry}.{" It must accept `**kwargs`." if spec.needs_var_keyword else ""}
- Its parameters receive, from each row:
{parameters}
- It returns: {returns}. Never return None, NaN or infinity.{notes}
- Imports: only these standard-library modules: {", ".join(stdlib)}; and these packages: \
{", ".join(third_party)}.
- The check runs in a sandbox: no network, no subprocesses, no files, a time limit per row. \
Do not print, and keep it fast. Name helper functions with a leading underscore.

An example in this format:
```python
{spec.example.rstrip()}
```

Reply with the complete check in a single ```python block. Add nothing after the block."""


def model_system_prompt(check_type: ModelCheckType) -> str:
    """The system message for model checks (prompt templates judged by an LLM)."""
    placeholders = "\n".join(
        f"  - `{{{p}}}`: {PARAMETER_DOCS[p]}" for p in MODEL_CHECK_PLACEHOLDERS
    )
    legacy = ", ".join(f"`{{{k}}}`" for k in LEGACY_PLACEHOLDERS)
    if check_type is ModelCheckType.PASS_FAIL:
        answer = "The judge will answer PASS or FAIL: say precisely what passes and what fails."
    else:
        answer = (
            "The judge will answer an integer score from 1 (worst) to 5 (best): say what the "
            "ends and the middle of the scale mean."
        )
    return f"""\
You write model checks for scorebox: a prompt template that an LLM judge receives, filled \
with one row, to grade the output of an LLM application.

The template contract:
- Placeholders in single braces are filled from the row; only these exist:
{placeholders}
- The template must show the judge `{{model_output}}`. Do not use {legacy} or any other \
name in single braces; write literal braces doubled: `{{{{` and `}}}}`.
- {answer} Do not prescribe a reply format: scorebox adds that.

Reply with the template in a single ```text block. Add nothing after the block."""


# -- the task ----------------------------------------------------------------------------


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_VALUE_CHARS:
        text = text[: MAX_VALUE_CHARS - 20] + f"... [{len(text)} chars]"
    return text


def _compact(value: Any) -> Any:
    """A field for :func:`render_row`: text shortened; an object (``metadata``) kept an
    object, unless it is too long, then its shortened JSON text."""
    if isinstance(value, str):
        return _short(value)
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= MAX_VALUE_CHARS else _short(text)


def render_row(example: Example) -> str:
    """A row's non-empty fields as compact JSON (``metadata`` as an object, not a string)."""
    fields = example.row.model_dump(exclude_none=True, exclude={"id"})
    if not fields.get("metadata"):
        fields.pop("metadata", None)
    return json.dumps({k: _compact(v) for k, v in fields.items()}, ensure_ascii=False)


def render_expected(value: bool | int | float) -> str:
    """An expected score as Python writes it (``True``, ``3``, ``0.5``)."""
    return repr(value)


def _signature_rules(spec: GenerationSpec) -> str:
    flags = {
        "scenario_input": spec.requires_scenario_input,
        "scenario_result": spec.requires_scenario_result,
    }
    lines = ["- `model_output` is always available."]
    for name in REQUIRABLE_PARAMETERS:
        if flags.get(name):
            lines.append(f"- It must take `{name}`: every row has it.")
        else:
            lines.append(f"- It must not take `{name}`: rows may not have it.")
    return "\n".join(lines)


def _example_line(index: int, example: Example) -> str:
    row, expected = render_row(example), render_expected(example.expected)
    return f"{index + 1}. row: {row}\n   expected score: {expected}"


def task_prompt(spec: GenerationSpec, budget: RowBudget = EXAMPLE_BUDGET) -> str:
    """The first user message: description, signature rules, score type, examples (a
    balanced sample within ``budget`` when there are many), prior code."""
    if spec.kind == "model":
        requires = {
            "scenario_input": spec.requires_scenario_input,
            "scenario_result": spec.requires_scenario_result,
        }
        used = [f"{{{name}}}" for name in REQUIRABLE_PARAMETERS if requires[name]]
        rules = (
            f"- Use {' and '.join(used)} in the template.\n"
            if used
            else "- Use only `{model_output}` (and optionally `{model_input}`, `{metadata}`).\n"
        )
        head = f"Write a model check.\n\nDescription: {spec.description}\n\n{rules}"
    elif spec.format is not Format.OKAREO:
        t = spec.output_type.value
        head = (
            f"Write a check in the {FORMATS[spec.format].title} format.\n\n"
            f"Description: {spec.description}\n\n"
            f"Score type: `{t}` (the score it returns must be a {t}).\n"
        )
    else:
        t = spec.output_type.value
        head = (
            f"Write a check.\n\nDescription: {spec.description}\n\n"
            f"Parameters of `{ENTRYPOINT_FUNCTION}`:\n{_signature_rules(spec)}\n"
            f"Score type: `{t}` (annotate `-> {t}`).\n"
        )
    parts = [head]
    if spec.examples:
        lines = [(repr(ex.expected), _example_line(i, ex)) for i, ex in enumerate(spec.examples)]
        shown = [
            text
            for _, text in within_budget(
                lines, lambda pair: pair[0], lambda pair: len(pair[1]), budget
            )
        ]
        more = len(lines) - len(shown)
        rest = (
            f"({more} more labelled examples are not shown here; the check is tested on "
            "them too, and the ones it gets wrong will be shown after your reply.)\n"
            if more
            else ""
        )
        parts.append(
            "Labelled examples (the check must return exactly the expected score on each):\n"
            + "\n".join(shown)
            + "\n"
            + rest
        )
    if spec.prior_code:
        what = "template" if spec.kind == "model" else "check"
        fence = "text" if spec.kind == "model" else "python"
        parts.append(
            f"Refine this existing {what} to match the description above; keep what still "
            f"applies:\n```{fence}\n{spec.prior_code.rstrip()}\n```\n"
        )
    return "\n".join(parts)


def initial_messages(spec: GenerationSpec, budget: RowBudget = EXAMPLE_BUDGET) -> list[Message]:
    """The conversation's opening: system contract, then the task (examples within
    ``budget``)."""
    if spec.kind == "model":
        system = model_system_prompt(model_check_type(spec.output_type))
    elif spec.format is not Format.OKAREO:
        system = format_system_prompt(spec.format)
    else:
        system = code_system_prompt()
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": task_prompt(spec, budget)},
    ]


# -- feedback ----------------------------------------------------------------------------

_STATUS_HINTS: dict[Status, str] = {
    Status.TIMEOUT: "it did not finish within the time limit; remove loops that may never end "
    "and expensive work",
    Status.ERROR: "evaluate raised an exception",
    Status.INVALID_SCORE: "it returned something that is not an acceptable score",
    Status.OOM: "it ran out of memory",
    Status.CRASHED: "the process died",
    Status.OUTPUT_LIMIT: "it printed too much; do not print",
    Status.SKIPPED: "the row lacks an input the check requires",
    Status.SANDBOX_ERROR: "the sandbox failed to run it (the check may not even load)",
    Status.JUDGE_ERROR: "the judge could not answer",
}


def render_issue(issue: Issue) -> str:
    """``line 3, col 5: error forbidden_import: ...``."""
    where = ""
    if issue.line is not None:
        col = f", col {issue.col}" if issue.col is not None else ""
        where = f"line {issue.line}{col}: "
    return f"- {where}{issue.severity} {issue.code}: {issue.message}"


def render_example_failure(result: ExampleResult, example: Example) -> str:
    """One failed example: which, its row, the expected value, and what happened instead."""
    expected = render_expected(result.expected)
    head = f"- example {result.index + 1}: row {render_row(example)}\n  expected {expected}"
    if result.status is not None and result.status is not Status.OK:
        hint = _STATUS_HINTS.get(result.status, "")
        detail = f": {result.error.strip()}" if result.error else ""
        return f"{head}, but the check ended with status {result.status.value} ({hint}){detail}"
    return f"{head}, got {render_expected(result.score) if result.score is not None else 'None'}"


def feedback_message(
    *,
    attempt: int,
    error: str | None = None,
    issues: Sequence[Issue] = (),
    failures: Sequence[tuple[ExampleResult, Example]] = (),
    passed: int = 0,
    total: int = 0,
    kind: str = "code",
    budget: RowBudget = REPAIR_BUDGET,
) -> str:
    """The user message after a failed attempt: every problem found, then what to send back.

    ``failures`` are the examples the check disagrees with; the message carries a balanced
    sample of them within ``budget`` and says how many there are in all. Its first and last
    paragraphs speak to the model; :func:`feedback_problems` gives the rest, for people."""
    what = "template" if kind == "model" else "check"
    fence = "text" if kind == "model" else "python"
    parts = [f"Attempt {attempt} is not acceptable yet. Fix every problem below."]
    if error:
        parts.append(f"Problem with your reply: {error}")
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        parts.append(
            f"Validation of the {what} failed:\n" + "\n".join(render_issue(i) for i in errors)
        )
    if failures:
        rendered = [(r, render_example_failure(r, ex)) for r, ex in failures]
        shown = within_budget(
            rendered, lambda pair: repr(pair[0].expected), lambda pair: len(pair[1]), budget
        )
        head = f"It disagrees with {len(failures)} of {total} labelled examples ({passed} agreed)"
        if len(shown) < len(failures):
            head += (
                f"; {len(shown)} of them below (the rest are left out to keep this short: "
                "fix the rule they share, not these rows alone)"
            )
        parts.append(head + ":\n" + "\n".join(text for _, text in shown))
    parts.append(f"Reply with the complete corrected {what} in a single ```{fence} block.")
    return "\n\n".join(parts)


def feedback_problems(feedback: str) -> str:
    """The problems of a :func:`feedback_message`, for people: without its first paragraph
    (``Attempt N is not acceptable yet...``) and its last (the reply instruction)."""
    parts = feedback.split("\n\n")
    if len(parts) >= 2 and parts[0].startswith("Attempt ") and parts[-1].startswith("Reply with"):
        parts = parts[1:-1]
    return "\n\n".join(parts)
