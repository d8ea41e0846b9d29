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
and a :data:`~generator.adapters.RunRows` callable, e.g. :func:`engine_runner`); this
module opens no connection of its own. What it is handed is :mod:`generator.adapters`;
validating an attempt, :mod:`generator.validators`; judging it against the examples and
choosing the best, :mod:`generator.verdicts`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.contract import OutputType, formats
from engine.errors import InvalidRequestError, LLMResponseError
from engine.judging.templates import model_check_type
from engine.llm.client import LLMClient
from engine.settings import Settings
from generator.adapters import JudgeRows, RunRows, ValidateCode, engine_runner
from generator.extract import extract_code, extract_template
from generator.models import Agreement, Attempt, Example, GenerationResult
from generator.prompts import GenerationSpec, feedback_message, initial_messages
from generator.repair import EXAMPLE_BUDGET, REPAIR_BUDGET, RowBudget
from generator.validators import restricted_validator, template_report
from generator.verdicts import check_examples, rank, smoke_row, summary, with_results

#: ``engine_runner`` is documented here (docs/generator.md) beside generate_check.
__all__ = ["GeneratorOptions", "engine_runner", "generate_check"]


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
        if attempt.accepted:
            return attempt
        attempt = self._with_feedback(attempt)
        self.messages.append({"role": "user", "content": attempt.feedback or ""})
        return attempt

    def _with_feedback(self, attempt: Attempt) -> Attempt:
        """The attempt with the repair message that answers it: its validation issues,
        the examples it disagrees with, or why it does not run on a simple row."""
        spec = self.spec
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
                f"the check does not run on a simple row ({smoke_row(spec).model_dump()}): "
                f"status {status}: {smoke[0].error or ''}"
            ).strip()
        feedback = feedback_message(
            attempt=attempt.n,
            error=error,
            issues=attempt.report.issues if attempt.report else (),
            failures=failures,
            passed=attempt.agreement.passed,
            total=attempt.agreement.total,
            kind=spec.kind,
            budget=self.options.repair_budget,
        )
        return attempt.model_copy(update={"feedback": feedback})

    def _evaluate(self, n: int, reply: str) -> Attempt:
        spec = self.spec
        if spec.kind == "model":
            template = extract_template(reply)
            if template is None:
                return Attempt(n=n, error="the reply holds no template")
            template, report = template_report(template, spec)
            attempt = Attempt(n=n, prompt_template=template, report=report)
            if not report.valid:
                return attempt
            if self.judge is None:
                # LLM-judged checks do not exist yet: placeholders are all we can check.
                return attempt.model_copy(update={"accepted": True})
            answer = model_check_type(spec.output_type)
            rows = [ex.row for ex in spec.examples]
            results = self.judge(template, answer, rows) if rows else []
            return with_results(attempt, spec.examples, results, self.options.tolerance)

        code = extract_code(reply)
        if code is None:
            return Attempt(n=n, error="the reply holds no ```python block with a check")
        report = self.validate(code, spec)
        attempt = Attempt(n=n, code=code, report=report)
        if not report.valid:
            return attempt
        if self.run is None:
            return attempt.model_copy(update={"accepted": True})
        rows = [ex.row for ex in spec.examples] or [smoke_row(spec)]
        results = self.run(code, spec.output_type, rows)
        return with_results(attempt, spec.examples, results, self.options.tolerance)


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
    check_examples(parsed, output_type)
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
    best = max(candidates, key=rank) if candidates else None
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
        message=summary(best, attempts, spec),
    )
