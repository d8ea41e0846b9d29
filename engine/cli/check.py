"""``scorebox check ...``: validate, push, list, show, remove and generate checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from engine.validation import ValidationReport

from engine.contract import OutputType, Policy
from engine.contract.formats import FORMATS, Format
from engine.names import split_entry


@click.group()
def check() -> None:
    """Work with checks."""


@check.command("validate")
@click.argument("target", metavar="FILE[:FUNCTION]")
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
    target: str,
    policy: str,
    as_json: bool,
    entry: str | None,
    output_type: str | None,
    requires_scenario_input: bool | None,
    requires_scenario_result: bool | None,
) -> None:
    """Validate a check FILE without running it; exit 0 when valid, 1 when not.

    FILE:FUNCTION (promptfoo's file://FILE:FUNCTION) names the entry, as --entry does.
    """
    named, named_entry = split_entry(target)
    file = Path(named)
    if not file.is_file():
        raise click.BadParameter(f"{named}: no such file", param_hint="FILE")
    if named_entry and entry and named_entry != entry:
        raise click.BadParameter(
            f"{target} names the entry {named_entry!r} and --entry names {entry!r}: give one"
        )
    entry = entry or named_entry
    # Undecodable bytes survive as surrogates, so the validator reports them as an issue.
    source = file.read_bytes().decode("utf-8-sig", errors="surrogateescape")
    from engine.validation import DeclaredCheck, validate  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    declared = DeclaredCheck(
        output_data_type=OutputType(output_type) if output_type else None,
        requires_scenario_input=requires_scenario_input,
        requires_scenario_result=requires_scenario_result,
    )
    report = validate(source, policy, declared, entry=entry)
    packages = declared_packages(source)
    if as_json:
        data = report.model_dump(mode="json")  # format: null when no format fits
        data["packages"] = packages
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_report(str(file), report, packages))
    ctx.exit(0 if report.valid else 1)


def declared_packages(source: str) -> dict[str, Any] | None:
    """The PEP 723 block's requirements and whether their environment is built on this
    Docker engine (``built``: true, false, or null when the engine cannot be asked);
    None without a block."""
    from engine.environments.spec import read_block  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    block = read_block(source)
    if not block.present:
        return None
    out: dict[str, Any] = {
        "requirements": list(block.requirements),
        "line": block.line,
        "built": None,
        "image": None,
        "note": None,
    }
    if not block.ok:
        out["note"] = "the block has problems (above); nothing to build"
        return out
    from engine.errors import ScoreboxError  # noqa: PLC0415 (lazy)
    from engine.settings import Settings  # noqa: PLC0415 (lazy)

    try:
        from engine.sandbox.docker.environments import docker_environments  # noqa: PLC0415 (lazy)

        environments = docker_environments(Settings())
        key = environments.key(block.requirements)
        # the list, not a lookup by key: it fails when the engine is unreachable
        record = next((r for r in environments.records() if r.key == key), None)
    except ScoreboxError as exc:
        out["note"] = f"cannot ask the Docker engine: {exc}"
        return out
    out["built"] = record is not None
    out["image"] = record.image if record is not None else None
    return out


def render_report(
    name: str, report: ValidationReport, packages: Mapping[str, Any] | None = None
) -> str:
    """Issues as ``FILE:LINE:COL: severity code: message``, then what the check is, and
    its declared packages (PEP 723) with whether their environment is built."""
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
        lines.append(f"  format:      {report.format_title}")
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
    if packages is not None:
        lines += _packages_lines(name, packages)
    return "\n".join(lines)


def _packages_lines(name: str, packages: Mapping[str, Any]) -> list[str]:
    requirements = packages.get("requirements") or []
    lines = [
        f"  packages:    {', '.join(requirements) or '(none)'} (PEP 723 block, line "
        f"{packages.get('line')})"
    ]
    if packages.get("built") is True:
        lines.append(f"  environment: built ({packages.get('image')})")
    elif packages.get("built") is False:
        lines.append(
            "  environment: not built yet: the first run builds it, or build it now with "
            f"`scorebox env build {name}`"
        )
    elif packages.get("note"):
        lines.append(f"  environment: unknown ({packages['note']})")
    return lines


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
