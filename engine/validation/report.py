"""Issues and reports: the one vocabulary of validation (code checks and templates alike)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    field_serializer,
    model_validator,
)

from engine.contract import OutputType, Policy
from engine.contract.formats import FORMATS, Format

Severity = Literal["error", "warning"]
EntrypointKind = Literal["function", "class"]
MethodKind = Literal["staticmethod", "classmethod", "method", "function"]


@dataclass(frozen=True)
class CodeInfo:
    """The fixed severity of an issue code and what it means."""

    severity: Severity
    meaning: str


#: Every issue code ``validate`` reports, with its severity and a one-line meaning.
ISSUE_CODES: Mapping[str, CodeInfo] = {
    "source-too-large": CodeInfo("error", "the source is larger than 256 KiB"),
    "syntax-error": CodeInfo("error", "Python cannot parse or compile the source"),
    "syntax-warning": CodeInfo("warning", "Python warns about the source (invalid escape...)"),
    "no-entrypoint": CodeInfo("error", "no entry in any scorer format (or several that fit)"),
    "unsupported-entrypoint": CodeInfo("error", "evaluate/Check is not a plain def/class"),
    "ambiguous-entrypoint": CodeInfo("warning", "both Check.evaluate and evaluate: class wins"),
    "entrypoint-redefined": CodeInfo("warning", "evaluate or Check is defined more than once"),
    "unexpected-base-class": CodeInfo("warning", "Check derives from an unknown class"),
    "unknown-decorator": CodeInfo("warning", "evaluate has a decorator scorebox cannot follow"),
    "missing-self": CodeInfo("error", "a plain-method evaluate lacks `self` (add @staticmethod)"),
    "check-not-instantiable": CodeInfo("error", "Check() needs arguments, evaluate needs self"),
    "unknown-parameter": CodeInfo("error", "evaluate takes a parameter scorebox cannot pass"),
    "duplicate-parameter": CodeInfo("error", "evaluate names the same parameter twice"),
    "var-positional": CodeInfo("error", "evaluate takes *args; arguments are passed by name"),
    "positional-only-parameter": CodeInfo("error", "a contract parameter before `/`"),
    "bad-return-annotation": CodeInfo("error", "the return annotation can never be a score"),
    "optional-return": CodeInfo("warning", "the return annotation admits None"),
    "string-return": CodeInfo("warning", "every return is a string literal: never a score"),
    "return-mismatch": CodeInfo("warning", "a literal return contradicts the return annotation"),
    "output-type-mismatch": CodeInfo("error", "declared output_data_type contradicts annotation"),
    "requires-mismatch": CodeInfo("error", "declared requires_* contradicts the signature"),
    "undefined-name": CodeInfo("error", "an annotation of evaluate names something undefined"),
    "unknown-import-name": CodeInfo("error", "name not provided by engine.checks/okareo.checks"),
    "relative-import": CodeInfo("error", "a relative import (`from . import x`)"),
    "network-import": CodeInfo("error", "an HTTP/socket client library (requests, httpx...)"),
    "unusable-import": CodeInfo("warning", "module cannot work in the sandbox (network...)"),
    "unavailable-import": CodeInfo("warning", "module is not installed in the sandbox"),
    "undeclared-import": CodeInfo("error", "module neither in the image nor declared (PEP 723)"),
    "dependencies-invalid": CodeInfo("error", "the PEP 723 block is not valid TOML/PEP 508"),
    "package-not-allowed": CodeInfo("error", "a declared package the operator does not allow"),
    "import-not-allowed": CodeInfo("error", "restricted: import outside the allowlist"),
    "forbidden-builtin": CodeInfo("error", "restricted: eval/exec/open/compile/globals..."),
    "private-name": CodeInfo("error", "restricted: a name starting with `_`"),
    "private-attribute": CodeInfo("error", "restricted: an attribute starting with `_`"),
    "forbidden-attribute": CodeInfo("error", "restricted: yaml.load, numpy.load and the like"),
    "restricted-syntax": CodeInfo("error", "restricted: a construct RestrictedPython forbids"),
}


class Issue(BaseModel):
    """One problem found in a check's source or a model check's template (the one issue type)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Severity
    code: str = Field(description="Stable code (code checks: one of ISSUE_CODES).")
    message: str = Field(description="What is wrong and how to fix it.")
    line: int | None = Field(default=None, description="1-based line, when known.")
    col: int | None = Field(default=None, description="1-based character column, when known.")


class DeclaredCheck(BaseModel):
    """What a client declares about a check; each field, when set, must agree with the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output_data_type: OutputType | None = None
    requires_scenario_input: bool | None = None
    requires_scenario_result: bool | None = None


class ValidationReport(BaseModel):
    """The outcome of validating a check: issues, and what the check is when it is valid."""

    model_config = ConfigDict(extra="forbid")

    valid: bool
    entrypoint: EntrypointKind | None = None
    method_kind: MethodKind | None = None
    signature: list[str] = Field(default_factory=list, description="Named parameters, in order.")
    var_keyword: bool = Field(default=False, description="evaluate takes **kwargs (gets all).")
    output_data_type: OutputType | None = None
    requires_scenario_input: bool = False
    requires_scenario_result: bool = False
    policy: Policy = Policy.STANDARD
    format: Format = Field(default=Format.OKAREO, description="The scorer format recognised.")
    entry: str | None = Field(default=None, description="The entry function (not for Okareo).")
    bindings: dict[str, str] = Field(
        default_factory=dict, description="What each of the entry's parameters is bound to."
    )
    issues: list[Issue] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _read_back(cls, data: Any) -> Any:
        """A dumped report reads back: ``format: null`` and the computed title are dropped."""
        if isinstance(data, dict) and (data.get("format", "") is None or "format_title" in data):
            data = {k: v for k, v in data.items() if k != "format_title"}
            if data.get("format", "") is None:
                del data["format"]
        return data

    @field_serializer("format")
    def _no_format_when_none_fits(self, value: Format) -> Format | None:
        """No entry found: the report names no format (``null``), never Okareo's default."""
        return None if self.entrypoint is None else value

    @computed_field  # type: ignore[prop-decorator]
    @property
    def format_title(self) -> str | None:
        """The format in words: a module-level ``evaluate`` is a plain function (which
        Okareo's runner also accepts); null when no format fits."""
        if self.entrypoint is None:
            return None
        if self.format is Format.OKAREO and self.entrypoint == "function":
            return "plain function (it also runs as an Okareo check)"
        return f"{FORMATS[self.format].title} ({self.format.value})"

    @property
    def errors(self) -> list[Issue]:
        """The issues that make the check invalid."""
        return [issue for issue in self.issues if issue.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        """The issues that do not."""
        return [issue for issue in self.issues if issue.severity == "warning"]
