"""Values the generator takes and returns (they cross the API boundary, hence pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from engine.contract import Status
from engine.models import Row
from engine.validation import ValidationReport
from engine.validation.rules import ModelCheckType

Score = bool | int | float


class Example(BaseModel):
    """A labelled row: the check must return ``expected`` on ``row``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    row: Row
    expected: Score = Field(description="The score the check must return (bool, int or float).")


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
    """One attempt: the LLM's reply, what validation and the examples said, the feedback sent."""

    n: int = Field(description="1-based attempt number.")
    code: str | None = None
    prompt_template: str | None = None
    report: ValidationReport | None = None
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

    kind: Literal["code", "model"] = Field(
        description="What was generated: `code` (a Python check) or `model` (a prompt template)."
    )
    code: str | None = None
    prompt_template: str | None = None
    model_check_type: ModelCheckType | None = None
    report: ValidationReport | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    agreement: Agreement = Field(default_factory=Agreement)
    accepted: bool = False
    message: str = Field(description="One-paragraph summary of the outcome.")

    @computed_field(  # type: ignore[prop-decorator]
        description="Deprecated: the old name of `kind`, still sent for older clients.",
        json_schema_extra={"deprecated": True},
    )
    @property
    def check_type(self) -> Literal["code", "model"]:
        return self.kind
