"""``scorebox check generate``: description → validated, self-tested check file.

Runs locally: the LLM from SCOREBOX_LLM_* and the sandbox from the local Docker engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli.remote import server_options
from engine.contract.formats import GENERATOR_FORMATS
from engine.errors import ScoreboxError
from engine.settings import Settings

if TYPE_CHECKING:
    from engine.cli.generate_labels import LabelledSplit
    from engine.validation.rules import ModelCheckType
    from generator.adapters import RunRows


def _example(text: str, where: str) -> dict[str, Any]:
    """``{"row": {...}, "expected": x}``, or the flat ``{"model_output": ..., "expected": x}``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{where}: not JSON: {exc}") from exc
    if not isinstance(data, dict) or "expected" not in data:
        raise click.BadParameter(f'{where}: expected an object with "expected" and a row')
    if "row" in data:
        return data
    row = {k: v for k, v in data.items() if k != "expected"}
    return {"row": row, "expected": data["expected"]}


def _examples(inline: tuple[str, ...], files: tuple[Path, ...]) -> list[dict[str, Any]]:
    out = [_example(text, f"--example {i + 1}") for i, text in enumerate(inline)]
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                out.append(_example(line, f"{path}:{number}"))
    return out


def _outcome(attempt: Any) -> str:
    if attempt.error and attempt.report is None:
        return f"no check: {attempt.error}"
    report = attempt.report
    if report is not None and not report.valid:
        first = report.errors[0] if report.errors else None
        where = f" (line {first.line}: {first.code})" if first and first.line else ""
        return f"invalid: {len(report.errors)} validation error(s){where}"
    agreement = attempt.agreement
    verdict = "accepted" if attempt.accepted else "rejected"
    if agreement.total:
        return f"{verdict}: agrees with {agreement.passed}/{agreement.total} examples"
    return verdict if attempt.accepted else f"{verdict}: does not run"


@click.command("generate")
@click.argument("description")
@click.option(
    "--example",
    "inline",
    multiple=True,
    metavar="JSON",
    help='A labelled row: {"row": {"model_output": ...}, "expected": true}, or flat '
    '{"model_output": ..., "expected": true}. Repeatable.',
)
@click.option(
    "--examples",
    "files",
    multiple=True,
    metavar="FILE.jsonl",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Labelled rows, one JSON object a line.",
)
@click.option("--requires-scenario-input", is_flag=True, help="The check reads scenario_input.")
@click.option("--requires-scenario-result", is_flag=True, help="The check reads scenario_result.")
@click.option(
    "--output-type", type=click.Choice(["bool", "int", "float"]), default="bool", show_default=True
)
@click.option(
    "--type",
    "kind",
    type=click.Choice(["code", "model"]),
    default="code",
    show_default=True,
    help="code: a Python check; model: a prompt template.",
)
@click.option(
    "--prior",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An existing check to refine from DESCRIPTION.",
)
@click.option(
    "--max-attempts",
    type=click.IntRange(1, 20),
    default=None,
    help="Default: SCOREBOX_GENERATOR_MAX_ATTEMPTS.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the check here (default: print it).",
)
@click.option(
    "--format",
    "scorer_format",
    type=click.Choice([f.value for f in GENERATOR_FORMATS]),
    default="okareo",
    show_default=True,
    help="Code checks: the scorer format to write (docs/writing-checks/formats.md).",
)
@click.option("--force", is_flag=True, help="Write the best attempt even if not accepted.")
@click.option("-v", "--verbose", is_flag=True, help="Print the feedback sent after each attempt.")
@click.option(
    "--labels",
    "label_name",
    metavar="NAME",
    default=None,
    help="Learn from human labels: the rows of --run labelled NAME are the examples (each "
    "row's majority label expected), part held back, and the generated check's agreement "
    "on the held-back rows is reported. Needs a server, where the labels are.",
)
@click.option("--run", "run_id", metavar="RUN", default=None, help="The labelled run (--labels).")
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.3,
    show_default=True,
    help="--labels: the share of labelled rows held back from the generator, per label value.",
)
@click.option("--holdout-seed", type=int, default=0, show_default=True, help="Seeds the split.")
@server_options
def generate(
    description: str,
    inline: tuple[str, ...],
    files: tuple[Path, ...],
    requires_scenario_input: bool,
    requires_scenario_result: bool,
    output_type: str,
    kind: str,
    prior: Path | None,
    max_attempts: int | None,
    output: Path | None,
    scorer_format: str,
    force: bool,
    verbose: bool,
    label_name: str | None,
    run_id: str | None,
    holdout: float,
    holdout_seed: int,
    server: str | None,
    api_key: str | None,
) -> None:
    """Generate a check from DESCRIPTION, test it on the examples, repair it.

    Exit 0 when accepted (validates under the restricted policy and agrees with
    every example), 1 otherwise. Then: `scorebox check push FILE`.
    """
    from engine.llm.openai_client import create_llm_client  # noqa: PLC0415 (lazy: keeps openai out of scorebox --help)
    from generator.adapters import engine_runner, llm_judge  # noqa: PLC0415 (lazy: as below)
    from generator.pipeline import (  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
        GeneratorOptions,
        generate_check,
    )

    examples = _examples(inline, files)
    split = None
    if label_name is not None or run_id is not None:
        if label_name is None or run_id is None or kind != "code":
            raise click.UsageError("--labels NAME and --run RUN go together, for --type code")
        from engine.cli.generate_labels import fetch_split  # noqa: PLC0415 (lazy)
        from engine.cli.remote import Remote  # noqa: PLC0415 (lazy)

        split = fetch_split(Remote(server, api_key), label_name, run_id, holdout, holdout_seed)
        examples += split.examples
        click.echo(
            f"{len(split.examples)} labelled rows as examples; {len(split.held)} held back "
            f"(--holdout {holdout:g} --holdout-seed {holdout_seed})",
            err=True,
        )
    settings = Settings().model_copy(update={"pool_size": 0})

    def show(attempt: Any) -> None:
        click.echo(f"attempt {attempt.n}: {_outcome(attempt)}", err=True)
        if verbose and attempt.feedback:
            click.echo(click.style(attempt.feedback, dim=True), err=True)

    try:
        llm = create_llm_client(settings)
        runner = None
        if kind == "code":
            from engine.sandbox.runner import SandboxRunner  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

            runner = SandboxRunner(settings)
        try:
            result = generate_check(
                description,
                requires_scenario_input=requires_scenario_input,
                requires_scenario_result=requires_scenario_result,
                output_data_type=output_type,
                kind=kind,
                examples=examples,
                prior_code=prior.read_text() if prior else None,
                max_attempts=max_attempts,
                format=scorer_format,
                llm=llm,
                run=engine_runner(runner) if runner is not None else None,
                judge=llm_judge(llm) if kind == "model" else None,
                options=GeneratorOptions.from_settings(settings),
                on_attempt=show,
            )
            if split is not None and runner is not None and result.code is not None:
                first = next((a.code for a in result.attempts if a.code is not None), None)
                held_back_agreement(
                    split,
                    str(run_id),
                    engine_runner(runner),
                    result.code,
                    output_type,
                    holdout_seed,
                    first=first if first != result.code else None,
                )
        finally:
            if runner is not None:
                runner.close()
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc

    click.echo(result.message, err=True)
    text = result.code if kind == "code" else result.prompt_template
    if text is not None and (result.accepted or force):
        if output is None:
            click.echo(text, nl=not text.endswith("\n"))
        else:
            output.write_text(text)
            click.echo(f"wrote {output}", err=True)
        for line in next_steps(output, kind, result.model_check_type):
            click.echo(line, err=True)
    raise SystemExit(0 if result.accepted else 1)


def held_back_agreement(
    split: LabelledSplit,
    run_id: str,
    run: RunRows,
    code: str,
    output_type: str,
    seed: int,
    *,
    first: str | None = None,
) -> None:
    """Score the generated check on the held-back rows and print its agreement report;
    with ``first`` (the first attempt's check, when repair changed it), say how the
    repair moved the agreement on those rows."""
    from engine.cli.agreement import render_report  # noqa: PLC0415 (lazy)
    from engine.cli.generate_labels import (  # noqa: PLC0415 (lazy)
        held_back_report,
        repair_figures,
    )
    from engine.contract import OutputType  # noqa: PLC0415 (lazy)

    kind = OutputType(output_type)
    report = held_back_report(split, run_id, lambda rows: run(code, kind, rows), seed)
    click.echo(f"agreement on the {len(split.held)} held-back rows:", err=True)
    click.echo(render_report(report), err=True)
    if first is not None:
        before = held_back_report(split, run_id, lambda rows: run(first, kind, rows), seed)
        click.echo(f"held-back rows, {repair_figures(before, report)}", err=True)


def next_steps(
    output: Path | None, kind: str, model_check_type: ModelCheckType | None
) -> list[str]:
    """The exact commands that push the generated check and run it on a server."""
    from engine.catalog.files import TEMPLATE_SUFFIXES  # noqa: PLC0415 (lazy: --help stays light)

    path = str(output) if output is not None else ("check.py" if kind == "code" else "check.txt")
    if kind == "code":
        push = f"scorebox check push {path} --policy restricted --origin generated"
    else:
        kind = "" if Path(path).suffix in TEMPLATE_SUFFIXES else " --kind model"
        answer = "score" if model_check_type is None else model_check_type.value
        push = f"scorebox check push {path}{kind} --check-type {answer} --origin generated"
    lines = ["next (on the server in SCOREBOX_SERVER, with SCOREBOX_API_KEY):"]
    if output is None:
        lines[0] = f"next: save the output above as {path} (or pass -o {path}), then, " + lines[
            0
        ].removeprefix("next ")
    lines.append(f"  {push}")
    lines.append(f"  scorebox run --check {Path(path).stem} --data rows.jsonl")
    return lines
