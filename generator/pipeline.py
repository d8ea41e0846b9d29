"""Description → validated, self-tested, repaired check.

Per attempt: ask the LLM → extract the code → validate it (restricted policy,
declared flags) → run it on every labelled example in the sandbox → send the
problems back as the next message: validation errors, and the examples it
disagrees with, a balanced sample bounded in count and size
(:mod:`generator.repair`; the first message shows the examples the same way).
Stops at the first attempt that validates and agrees with every example, or
after ``max_attempts`` with the best attempt and a report of what is still
wrong. Nothing is saved.

The LLM client and the way to run code are injected (an :class:`LLMClient`
and a :data:`RunRows` callable, e.g. :func:`engine_runner`); this module opens
no connection of its own.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine import contract
from engine.contract import OutputType, Policy, Status, formats
from engine.errors import InvalidRequestError, LLMResponseError
from engine.judging.model_check import run_model_check
from engine.judging.templates import model_check_type, validate_template
from engine.llm.client import LLMClient
from engine.models import Limits, Row, RowResult
from engine.sandbox.runner import CodeCheck
from engine.settings import Settings
from engine.validation import DeclaredCheck, Issue, ValidationReport, validate
from engine.validation.rules import ModelCheckType
from generator.extract import extract_code, extract_template
from generator.models import (
    Agreement,
    Attempt,
    Example,
    ExampleResult,
    GenerationResult,
)
from generator.prompts import (
    GenerationSpec,
    feedback_message,
    feedback_problems,
    initial_messages,
)
from generator.repair import EXAMPLE_BUDGET, REPAIR_BUDGET, RowBudget

#: Runs a code check on rows: ``(source, output_type, rows) -> one result per row``.
RunRows = Callable[[str, OutputType, Sequence[Row]], list[RowResult]]
#: Validates a code check: ``(source, spec) -> report``.
ValidateCode = Callable[[str, GenerationSpec], ValidationReport]
#: Judges rows with a model-check template (:func:`llm_judge` over ``engine.judging``).
JudgeRows = Callable[[str, ModelCheckType, Sequence[Row]], list[RowResult]]

#: Default per-row time limit while testing generated code, in seconds.
EXAMPLE_ROW_TIMEOUT_SECONDS = 2.0


class SandboxRuns(Protocol):
    """What :func:`engine_runner` needs of a sandbox runner (``SandboxRunner`` is one)."""

    @property
    def settings(self) -> Settings: ...

    def run_check(
        self,
        check: CodeCheck,
        rows: Sequence[Row],
        limits: Limits | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> list[RowResult]: ...


@dataclass(frozen=True)
class GeneratorOptions:
    """How the generator calls the LLM and judges attempts."""

    model: str | None = None
    temperature: float = 0.2
    max_attempts: int = 4
    max_tokens: int | None = 2048
    tolerance: float = 1e-6
    #: The labelled examples the first message shows (every example is tested).
    example_budget: RowBudget = EXAMPLE_BUDGET
    #: The disagreeing examples one repair message carries.
    repair_budget: RowBudget = REPAIR_BUDGET

    @classmethod
    def from_settings(cls, settings: Settings) -> GeneratorOptions:
        """The ``generator_*`` settings (model defaults to ``llm_model``)."""
        return cls(
            model=settings.generator_model or settings.llm_model,
            temperature=settings.generator_temperature,
            max_attempts=settings.generator_max_attempts,
        )


def engine_runner(
    runner: SandboxRuns,
    row_timeout_seconds: float = EXAMPLE_ROW_TIMEOUT_SECONDS,
    labels: Mapping[str, str] | None = None,
) -> RunRows:
    """A :data:`RunRows` that runs checks in ``runner``'s sandbox under the restricted policy.

    The per-row time limit is lowered to ``row_timeout_seconds``; ``labels`` go
    on the containers (e.g. ``scorebox.tenant``).
    """
    base = runner.settings.limits
    limits = base.model_copy(
        update={"row_timeout_seconds": min(base.row_timeout_seconds, row_timeout_seconds)}
    )

    def run(source: str, output_type: OutputType, rows: Sequence[Row]) -> list[RowResult]:
        policy = Policy.RESTRICTED
        if formats.format_of_source(source) in formats.STANDARD_POLICY_FORMATS:
            policy = Policy.STANDARD  # its stand-in import is outside the allowlist
        check = CodeCheck(source=source, policy=policy, output_type=output_type)
        return runner.run_check(check, list(rows), limits, labels=labels or {})

    return run


def llm_judge(llm: LLMClient, *, low: int = 1, high: int = 5) -> JudgeRows:
    """A :data:`JudgeRows` over ``engine.judging`` (``score`` checks from ``low`` to ``high``)."""

    def judge(template: str, kind: ModelCheckType, rows: Sequence[Row]) -> list[RowResult]:
        bounded = kind is ModelCheckType.SCORE
        return run_model_check(
            template,
            kind,
            rows,
            llm,
            low=low if bounded else None,
            high=high if bounded else None,
        )

    return judge


def restricted_validator(source: str, spec: GenerationSpec) -> ValidationReport:
    """:data:`ValidateCode` with ``engine.validation`` under the restricted policy."""
    if spec.format is not formats.Format.OKAREO:
        return _format_report(source, spec.format)
    declared = DeclaredCheck(
        output_data_type=spec.output_type,
        requires_scenario_input=spec.requires_scenario_input,
        requires_scenario_result=spec.requires_scenario_result,
    )
    report = validate(source, policy="restricted", declared=declared)
    if not report.valid or report.format in (None, formats.Format.OKAREO):
        return report
    # Another tool's format was written where a scorebox check was asked for: its parameters
    # (`output`, `expected`...) are not the contract's, which the repair prompt must say.
    line, col = _entry_position(source, report.entry)
    given = ", ".join(f"`{name}`" for name in report.signature) or "no parameters"
    issue = Issue(
        severity="error",
        code="wrong-format",
        message=f"`{report.entry}` takes {given}, the "
        f"{formats.FORMATS[report.format].title} format; write a scorebox check whose "
        f"parameters are among {', '.join(contract.PARAMETER_NAMES)}",
        line=line,
        col=col,
    )
    return report.model_copy(update={"valid": False, "issues": [*report.issues, issue]})


def _entry_position(source: str, entry: str | None) -> tuple[int | None, int | None]:
    """Line and column (1-based) of the function ``entry`` in ``source``, when found."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry:
            return node.lineno, node.col_offset + 1
    return None, None


def _format_report(source: str, fmt: formats.Format) -> ValidationReport:
    """Validation of a check in another format: its policy, and the format asked for."""
    policy = "standard" if fmt in formats.STANDARD_POLICY_FORMATS else "restricted"
    report = validate(source, policy=policy)
    if report.valid and report.format is not fmt:
        wanted = formats.FORMATS[fmt].title
        issue = Issue(
            severity="error",
            code="wrong-format",
            message=f"this is a {formats.FORMATS[report.format].title} file; write it in the "
            f"{wanted} format instead",
        )
        return report.model_copy(update={"valid": False, "issues": [*report.issues, issue]})
    return report


def agrees(expected: bool | int | float, result: RowResult, tolerance: float = 1e-6) -> bool:
    """Whether a row result matches the expected score.

    bool: equality (a bool score); int: equality (not a bool); float: within ``tolerance``.
    Any status other than ``ok`` disagrees.
    """
    score = result.score
    if result.status is not Status.OK or score is None:
        return False
    if isinstance(expected, bool):
        return isinstance(score, bool) and score is expected
    if isinstance(score, bool):
        return False
    if isinstance(expected, int):
        return score == expected
    return math.isclose(float(score), expected, rel_tol=0.0, abs_tol=tolerance)


def _check_examples(examples: Sequence[Example], output_type: OutputType) -> None:
    for i, example in enumerate(examples):
        value = example.expected
        ok = (
            isinstance(value, bool)
            if output_type is OutputType.BOOL
            else (not isinstance(value, bool) and isinstance(value, int))
            if output_type is OutputType.INT
            else not isinstance(value, bool)
        )
        if not ok:
            raise InvalidRequestError(
                f"example {i + 1}: expected {value!r} is not a {output_type.value} score"
            )


def _smoke_row(spec: GenerationSpec) -> Row:
    """A row to prove a check runs when no examples are given."""
    return Row(
        model_output="The capital of France is Paris.",
        scenario_input="What is the capital of France?" if spec.requires_scenario_input else None,
        scenario_result="Paris" if spec.requires_scenario_result else None,
    )


def _template_report(template: str, spec: GenerationSpec) -> tuple[str, ValidationReport]:
    parsed = validate_template(
        template,
        requires_scenario_input=spec.requires_scenario_input,
        requires_scenario_result=spec.requires_scenario_result,
    )
    report = ValidationReport(
        valid=parsed.valid,
        issues=list(parsed.issues),
        signature=list(parsed.placeholders),
        output_data_type=spec.output_type,
        **parsed.requires(),
    )
    return parsed.template, report


def _rank(attempt: Attempt) -> tuple[bool, bool, int, int, int]:
    report = attempt.report
    errors = len(report.errors) if report is not None else 1_000_000
    has_check = attempt.code is not None or attempt.prompt_template is not None
    return (
        has_check,
        report is not None and report.valid,
        attempt.agreement.passed,
        -errors,
        attempt.n,
    )


class _Generation:
    """The state of one ``generate_check`` call."""

    def __init__(
        self,
        spec: GenerationSpec,
        llm: LLMClient,
        run: RunRows | None,
        validate: ValidateCode,
        judge: JudgeRows | None,
        options: GeneratorOptions,
        on_attempt: Callable[[Attempt], None] | None,
    ) -> None:
        self.spec = spec
        self.llm = llm
        self.run = run
        self.validate = validate
        self.judge = judge
        self.options = options
        self.on_attempt = on_attempt
        self.messages = initial_messages(spec, options.example_budget)
        self.unusable: list[LLMResponseError] = []  # replies the endpoint sent unusable

    def attempt(self, n: int) -> Attempt:
        """One attempt; appends the reply and the feedback to the conversation."""
        spec = self.spec
        try:
            reply = self.llm.complete(
                self.messages,
                model=self.options.model,
                temperature=self.options.temperature,
                max_tokens=self.options.max_tokens,
            ).text
        except LLMResponseError as exc:
            # Nothing to answer to: ask again with the same conversation.
            self.unusable.append(exc)
            return Attempt(n=n, error=f"unusable reply: {exc}")
        self.messages.append({"role": "assistant", "content": reply})

        attempt = self._evaluate(n, reply)
        if not attempt.accepted:
            failures = [
                (r, spec.examples[r.index])
                for r in attempt.example_results
                if not r.agreed and r.index < len(spec.examples)
            ]
            smoke = [r for r in attempt.example_results if r.index >= len(spec.examples)]
            error = attempt.error
            if smoke and not smoke[0].agreed:
                status = smoke[0].status.value if smoke[0].status else "not run"
                error = (
                    f"the check does not run on a simple row ({_smoke_row(spec).model_dump()}): "
                    f"status {status}: {smoke[0].error or ''}"
                ).strip()
            feedback = feedback_message(
                attempt=n,
                error=error,
                issues=attempt.report.issues if attempt.report else (),
                failures=failures,
                passed=attempt.agreement.passed,
                total=attempt.agreement.total,
                kind=spec.kind,
                budget=self.options.repair_budget,
            )
            attempt = attempt.model_copy(update={"feedback": feedback})
            self.messages.append({"role": "user", "content": feedback})
        return attempt

    def _evaluate(self, n: int, reply: str) -> Attempt:
        spec = self.spec
        if spec.kind == "model":
            template = extract_template(reply)
            if template is None:
                return Attempt(n=n, error="the reply holds no template")
            template, report = _template_report(template, spec)
            attempt = Attempt(n=n, prompt_template=template, report=report)
            if not report.valid:
                return attempt
            if self.judge is None:
                # LLM-judged checks do not exist yet: placeholders are all we can check.
                return attempt.model_copy(update={"accepted": True})
            answer = model_check_type(spec.output_type)
            rows = [ex.row for ex in spec.examples]
            return self._with_results(attempt, self.judge(template, answer, rows) if rows else [])

        code = extract_code(reply)
        if code is None:
            return Attempt(n=n, error="the reply holds no ```python block with a check")
        report = self.validate(code, spec)
        attempt = Attempt(n=n, code=code, report=report)
        if not report.valid:
            return attempt
        if self.run is None:
            return attempt.model_copy(update={"accepted": True})
        rows = [ex.row for ex in spec.examples] or [_smoke_row(spec)]
        return self._with_results(attempt, self.run(code, spec.output_type, rows))

    def _with_results(self, attempt: Attempt, results: Sequence[RowResult]) -> Attempt:
        examples = self.spec.examples
        out: list[ExampleResult] = []
        for index, result in enumerate(results):
            if index < len(examples):
                expected = examples[index].expected
                agreed = agrees(expected, result, self.options.tolerance)
            else:  # the smoke row: it only has to run
                expected, agreed = False, result.status is Status.OK
            out.append(
                ExampleResult(
                    index=index,
                    expected=expected,
                    status=result.status,
                    score=result.score,
                    error=result.error,
                    agreed=agreed,
                )
            )
        passed = sum(r.agreed for r in out[: len(examples)])
        accepted = all(r.agreed for r in out) and len(out) >= len(examples)
        return attempt.model_copy(
            update={
                "example_results": out,
                "agreement": Agreement(passed=passed, total=len(examples)),
                "accepted": accepted,
            }
        )


def _summary(best: Attempt | None, attempts: Sequence[Attempt], spec: GenerationSpec) -> str:
    what = "template" if spec.kind == "model" else "check"
    if best is None:
        return f"no usable {what} in {len(attempts)} attempts: every reply was unusable"
    total = best.agreement.total
    if best.accepted:
        parts = [f"accepted on attempt {best.n} of {len(attempts)}: the {what} validates"]
        if spec.kind == "code":
            parts[0] += " under the restricted policy"
        if total:
            parts.append(f"agrees with all {total} examples")
        elif spec.kind == "model" and spec.examples:
            parts.append("examples not evaluated (LLM-judged checks are not available)")
        return "; ".join(parts) + "."
    report = best.report
    errors = len(report.errors) if report else 0
    state = (
        "validates"
        if report is not None and report.valid
        else f"fails validation ({errors} {'error' if errors == 1 else 'errors'})"
    )
    wrong = feedback_problems(best.feedback) if best.feedback else (best.error or "")
    tries = f"{len(attempts)} attempt" + ("" if len(attempts) == 1 else "s")
    return (
        f"not accepted after {tries}; best is attempt {best.n}: it {state} and "
        f"agrees with {best.agreement.passed} of {total} examples. What is still wrong:\n"
        f"{wrong}"
    )


def generate_check(
    description: str,
    requires_scenario_input: bool = False,
    requires_scenario_result: bool = False,
    output_data_type: OutputType | str = OutputType.BOOL,
    kind: str = "code",
    examples: Sequence[Example | dict[str, Any]] = (),
    prior_code: str | None = None,
    max_attempts: int | None = None,
    *,
    format: formats.Format | str = formats.Format.OKAREO,
    llm: LLMClient,
    run: RunRows | None,
    validate: ValidateCode | None = None,
    judge: JudgeRows | None = None,
    options: GeneratorOptions | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> GenerationResult:
    """Generate a check from ``description``, test it on ``examples``, repair it; save nothing.

    ``run`` runs the examples (:func:`engine_runner` over a sandbox runner, or the
    run service's :data:`RunRows`); None skips running (validation only).
    ``kind="model"`` produces a prompt template instead, evaluated on the
    examples with ``judge`` when given. LLM failures other than unusable replies
    (:class:`~engine.errors.LLMUnavailableError`, :class:`~engine.errors.LLMRateLimitError`,
    ...) propagate after the client's retries. ``on_attempt`` sees each attempt as it finishes.
    """
    if kind not in {"code", "model"}:
        raise InvalidRequestError(f"kind must be 'code' or 'model', not {kind!r}")
    if not description.strip():
        raise InvalidRequestError("the description is empty")
    output_type = OutputType(output_data_type)
    parsed = tuple(ex if isinstance(ex, Example) else Example.model_validate(ex) for ex in examples)
    _check_examples(parsed, output_type)
    options = options or GeneratorOptions()
    attempts_allowed = max_attempts if max_attempts is not None else options.max_attempts
    if attempts_allowed < 1:
        raise InvalidRequestError("max_attempts must be at least 1")
    spec = GenerationSpec(
        description=description.strip(),
        requires_scenario_input=requires_scenario_input,
        requires_scenario_result=requires_scenario_result,
        output_type=output_type,
        kind=kind,
        examples=parsed,
        prior_code=prior_code,
        format=formats.Format(format),
    )
    generation = _Generation(
        spec, llm, run, validate or restricted_validator, judge, options, on_attempt
    )

    attempts: list[Attempt] = []
    for n in range(1, attempts_allowed + 1):
        attempt = generation.attempt(n)
        attempts.append(attempt)
        if on_attempt is not None:
            on_attempt(attempt)
        if attempt.accepted:
            break
    candidates = [a for a in attempts if a.code is not None or a.prompt_template is not None]
    best = max(candidates, key=_rank) if candidates else None
    if best is None and len(generation.unusable) == len(attempts):
        # the endpoint never sent a usable reply: its failure, not the check's (502 at the API)
        raise LLMResponseError(
            f"no usable reply in {len(attempts)} attempts: {generation.unusable[-1]}"
        ) from generation.unusable[-1]
    return GenerationResult(
        kind="model" if kind == "model" else "code",
        code=best.code if best else None,
        prompt_template=best.prompt_template if best else None,
        model_check_type=model_check_type(output_type) if kind == "model" else None,
        report=best.report if best else None,
        attempts=attempts,
        agreement=best.agreement if best else Agreement(total=len(parsed)),
        accepted=best.accepted if best else False,
        message=_summary(best, attempts, spec),
    )
