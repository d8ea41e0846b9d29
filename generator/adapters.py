"""What the generator is handed, and its implementations over the engine.

The pipeline opens no connection of its own: it gets a way to run code (:data:`RunRows`,
e.g. :func:`engine_runner` over a sandbox runner), to validate it (:data:`ValidateCode`,
:func:`generator.validators.restricted_validator` by default) and, for model checks, to
judge rows (:data:`JudgeRows`, e.g. :func:`llm_judge`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from engine.contract import OutputType, Policy, formats
from engine.judging.model_check import run_model_check
from engine.llm.client import LLMClient
from engine.models import Limits, Row, RowResult
from engine.sandbox.runner import CodeCheck
from engine.settings import Settings
from engine.validation import ValidationReport
from engine.validation.rules import ModelCheckType
from generator.prompts import GenerationSpec

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
