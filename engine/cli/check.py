"""``scorebox check ...``: validate, push, list, show, remove and generate checks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from engine.validation import ValidationReport

from engine.contract import OutputType, Policy
from engine.contract.formats import FORMATS, Format


@click.group()
def check() -> None:
    """Work with checks."""


@check.command("validate")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    type=click.Choice([p.value for p in Policy]),
    default=Policy.STANDARD.value,
    show_default=True,
    help="standard: any import, warnings for ones that cannot work in the sandbox; "
    "restricted: RestrictedPython rules and an import allowlist.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--output-type",
    type=click.Choice([t.value for t in OutputType]),
    default=None,
    help="Declared output_data_type; it must agree with evaluate's return annotation.",
)
@click.option(
    "--requires-scenario-input/--no-requires-scenario-input",
    default=None,
    help="Declared requires_scenario_input; it must agree with evaluate's parameters.",
)
@click.option(
    "--requires-scenario-result/--no-requires-scenario-result",
    default=None,
    help="Declared requires_scenario_result; it must agree with evaluate's parameters.",
)
@click.option(
    "--entry",
    default=None,
    help="The entry function, for a file where several functions fit a scorer format "
    "(promptfoo's file://x.py:fn).",
)
@click.pass_context
def validate_command(
    ctx: click.Context,
    file: Path,
    policy: str,
    as_json: bool,
    entry: str | None,
    output_type: str | None,
    requires_scenario_input: bool | None,
    requires_scenario_result: bool | None,
) -> None:
    """Validate a check FILE without running it; exit 0 when valid, 1 when not."""
    # Undecodable bytes survive as surrogates, so the validator reports them as an issue.
    source = file.read_bytes().decode("utf-8-sig", errors="surrogateescape")
    from engine.validation import DeclaredCheck, validate  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    declared = DeclaredCheck(
        output_data_type=OutputType(output_type) if output_type else None,
        requires_scenario_input=requires_scenario_input,
        requires_scenario_result=requires_scenario_result,
    )
    report = validate(source, policy, declared, entry=entry)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        click.echo(render_report(str(file), report))
    ctx.exit(0 if report.valid else 1)


def render_report(name: str, report: ValidationReport) -> str:
    """Issues as ``FILE:LINE:COL: severity code: message``, then what the check is."""
    lines = []
    for issue in report.issues:
        where = name
        if issue.line is not None:
            where += f":{issue.line}" + (f":{issue.col}" if issue.col is not None else "")
        lines.append(f"{where}: {issue.severity} {issue.code}: {issue.message}")
    errors, warnings = len(report.errors), len(report.warnings)
    verdict = "valid" if report.valid else "invalid"
    lines.append(f"{name}: {verdict} ({errors} error(s), {warnings} warning(s))")
    entry = report.entry or "evaluate"
    if report.entrypoint is not None:
        lines.append(f"  format:      {FORMATS[report.format].title} ({report.format.value})")
    if report.entrypoint == "class":
        lines.append(f"  entrypoint:  class Check, evaluate ({report.method_kind})")
    elif report.entrypoint == "function":
        lines.append(f"  entrypoint:  function {entry}")
    if report.entrypoint is not None:
        parameters = [*report.signature, *(["**kwargs"] if report.var_keyword else [])]
        lines.append(f"  signature:   {entry}({', '.join(parameters)})")
        for parameter, meaning in _bindings(report).items():
            lines.append(f"    {parameter} <- {meaning}")
        output = report.output_data_type.value if report.output_data_type else None
        lines.append(f"  output type: {output or 'inferred from the first result'}")
        lines.append(
            f"  requires:    scenario_input={_yes(report.requires_scenario_input)}, "
            f"scenario_result={_yes(report.requires_scenario_result)}"
        )
    lines.append(f"  policy:      {report.policy.value}")
    return "\n".join(lines)


def _bindings(report: ValidationReport) -> dict[str, str]:
    """What each parameter of the entry receives (the table in engine.contract.formats)."""
    if report.bindings:
        return report.bindings
    table = FORMATS[Format.OKAREO].parameters
    out = {name: table[name] for name in report.signature if name in table}
    if report.var_keyword:
        out["**kwargs"] = "every other parameter above, by name"
    return out


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
