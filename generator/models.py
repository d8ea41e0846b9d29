"""Values the generator takes and returns (they cross the API boundary, hence pydantic)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.contract import ModelCheckType, OutputType, Status
from engine.models import Row

Score = bool | int | float


class Example(BaseModel):
    """A labelled row: the check must return ``expected`` on ``row``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    row: Row
    expected: Score = Field(description="The score the check must return (bool, int or float).")


class Issue(BaseModel):
    """One validation problem, with its 1-based line and column when known."""

    severity: Literal["error", "warning"]
    code: str
    message: str
    line: int | None = None
    col: int | None = None


class CheckReport(BaseModel):
    """What validation said about a generated check (code) or template (model)."""

    valid: bool
    issues: list[Issue] = Field(default_factory=list)
    signature: list[str] | None = None
    output_data_type: OutputType | None = None
    requires_scenario_input: bool | None = None
    requires_scenario_result: bool | None = None

    @property
    def errors(self) -> list[Issue]:
        """Issues of severity ``error``."""
        return [i for i in self.issues if i.severity == "error"]

    @classmethod
    def from_validation(cls, report: Any) -> CheckReport:
        """From an ``engine.validation.ValidationReport`` (read by attribute)."""
        signature = getattr(report, "signature", None)
        if signature is not None and not isinstance(signature, list | tuple):
            signature = getattr(signature, "parameters", None)
        return cls(
            valid=bool(report.valid),
            issues=[
                Issue(
                    severity="error"
                    if str(getattr(i, "severity", "error")) == "error"
                    else "warning",
                    code=str(i.code),
                    message=str(i.message),
                    line=getattr(i, "line", None),
                    col=getattr(i, "col", None),
                )
                for i in report.issues
            ],
            signature=list(signature) if signature is not None else None,
            output_data_type=getattr(report, "output_data_type", None),
            requires_scenario_input=getattr(report, "requires_scenario_input", None),
            requires_scenario_result=getattr(report, "requires_scenario_result", None),
        )


class ExampleResult(BaseModel):
    """One example run by a generated check."""

    index: int = Field(description="0-based position in the examples.")
    expected: Score
    status: Status | None = Field(default=None, description="None when the check was not run.")
    score: Score | None = None
    error: str | None = None
    agreed: bool


class Agreement(BaseModel):
    """How many examples the check agreed with."""

    passed: int = 0
    total: int = 0


class Attempt(BaseModel):
    """One round: the LLM's reply, what validation and the examples said, the feedback sent."""

    n: int = Field(description="1-based attempt number.")
    code: str | None = None
    prompt_template: str | None = None
    report: CheckReport | None = None
    example_results: list[ExampleResult] = Field(default_factory=list)
    agreement: Agreement = Field(default_factory=Agreement)
    feedback: str | None = Field(
        default=None, description="What was sent back to the LLM after this attempt."
    )
    error: str | None = Field(
        default=None, description="Why the attempt produced nothing usable (no code, refusal)."
    )
    accepted: bool = False


class GenerationResult(BaseModel):
    """The generator's answer: the best attempt's check, its report, every attempt."""

    check_type: Literal["code", "model"]
    code: str | None = None
    prompt_template: str | None = None
    model_check_type: ModelCheckType | None = None
    report: CheckReport | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    agreement: Agreement = Field(default_factory=Agreement)
    accepted: bool = False
    message: str = Field(description="One-paragraph summary of the outcome.")
