"""``scorebox init`` and the suite file side of ``scorebox run`` (see :mod:`engine.suites.file`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.names import SUITE_FILE

if TYPE_CHECKING:
    from engine.suites.file import SuitePlan


class SuiteFileError(click.ClickException):
    """A suite file that cannot be used: exit 2, like a malformed option."""

    exit_code = 2


def find_suite(explicit: Path | None, checks: tuple[str, ...]) -> SuitePlan | None:
    """The suite of this run: ``--suite FILE``, else ``./scorebox.yaml`` when no ``--check``
    is given; None when ``--check`` names the checks and no ``--suite`` is given."""
    from engine.suites.file import SuiteError, load_suite  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    path = explicit
    if path is None:
        if checks:
            return None
        path = Path(SUITE_FILE)
        if not path.is_file():
            raise click.UsageError(
                f"no --check given and no {SUITE_FILE} in {Path.cwd()}: write one with "
                "`scorebox init`, name one with --suite FILE, or give --check and --data"
            )
    try:
        return load_suite(path)
    except SuiteError as exc:
        raise SuiteFileError(str(exc)) from exc


def suite_checks(plan: SuitePlan) -> list[str]:
    """The suite's checks in ``--check`` form (names, or JSON objects with params)."""
    return [c if isinstance(c, str) else json.dumps(c) for c in plan.checks]


def suite_data(plan: SuitePlan) -> Path:
    """The suite's data file, which must exist."""
    if plan.data is None:
        raise SuiteFileError(
            f"{plan.path}: data: no data file; set `data:` in the suite or pass --data FILE"
        )
    if not plan.data.is_file():
        raise SuiteFileError(
            f"{plan.path}: data: {plan.suite.data} does not exist (paths are relative to the "
            f"suite file, so this is {plan.data})"
        )
    return plan.data


EXAMPLE_SUITE = """\
# scorebox.yaml: what `scorebox run` scores when no --check is given.
# Every key is described in docs/suite.md; docs/scorebox.schema.json is its JSON Schema.
# Paths are relative to this file. Command-line flags override what is here:
# --data, --map, --check (replaces checks), --param, --threshold, --fail-on,
# --max-failures, --label, -o (replaces output).
version: 1

# The rows: .jsonl, .json, .csv, .tsv or .parquet. A row has model_output and,
# optionally, id, scenario_input, scenario_result (the expected answer),
# model_input and metadata.
data: rows.jsonl

# Read a row field from another column of the file (like --map FIELD=COLUMN):
# map:
#   model_output: answer
#   scenario_result: expected

checks:
  # A check file, scored in the sandbox (needs Docker and `scorebox image build`).
  # threshold: the run fails (exit 3) when the pass rate of a bool check, or the
  # mean score of a numeric one, is below it.
  - name: checks/mentions_expected.py
    threshold: 0.75
  # A built-in with parameters (`scorebox judge builtins` lists them all).
  - name: regex_match
    params:
      pattern: "[.!?]$"       # ends like a sentence
    threshold: 0.5
  # builtin:NAME always means the built-in, even if a pushed check has its name.
  - builtin:compression_ratio
  # LLM judges (fluency, coherence, ...) need SCOREBOX_LLM_BASE_URL; replies are cached.
  # - fluency

# The run fails (exit 3) when any row ends with one of these statuses, or when a
# check has no row that scored ok; [] for neither.
fail_on: [error, invalid_score, judge_error, sandbox_error]

# Allow up to N failing rows (false, or a fail_on status) instead of failing on any.
# max_failures: 2

# Labels of the run (shown by `scorebox run list` on a server).
labels:
  suite: example

# Write every row x check result: .jsonl, .csv, .tsv, or .html (a one-file report).
output:
  - scorebox-results.jsonl
  - scorebox-report.html
"""

EXAMPLE_ROWS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "scenario_input": "How do I reset my password?",
        "model_output": "Go to Settings > Security and click 'Reset password'.",
        "scenario_result": "reset password; settings",
    },
    {
        "id": "q2",
        "scenario_input": "What is your refund window?",
        "model_output": "You can ask for a refund within 30 days of purchase.",
        "scenario_result": "30 days",
    },
    {
        "id": "q3",
        "scenario_input": "Do you ship to Canada?",
        "model_output": "We ship to Canada and the United States!",
        "scenario_result": "canada",
    },
    {
        "id": "q4",
        "scenario_input": "Can I pay by invoice?",
        "model_output": "Please contact our sales team",
        "scenario_result": "invoice",
    },
]

EXAMPLE_CHECK = '''\
"""Does the answer mention every expected part (scenario_result, split on ";")?"""


def evaluate(model_output: str, scenario_result: str) -> bool:
    expected = [part.strip().lower() for part in scenario_result.split(";") if part.strip()]
    return all(part in model_output.lower() for part in expected)
'''


@click.command("init")
@click.argument(
    "directory",
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--force", is_flag=True, help=f"Overwrite an existing {SUITE_FILE}.")
def init(directory: Path, force: bool) -> None:
    """Write a commented example scorebox.yaml (and an example data file and check if absent).

    Then `scorebox run` in DIRECTORY scores it. The example data file and check are
    written only where no file has that name; scorebox.yaml is overwritten only with
    --force.
    """
    suite = directory / SUITE_FILE
    if suite.exists() and not force:
        raise click.ClickException(f"{suite} exists; keep it, or overwrite it with --force")
    directory.mkdir(parents=True, exist_ok=True)
    suite.write_text(EXAMPLE_SUITE, encoding="utf-8")
    click.echo(f"wrote {suite}")
    examples = {
        directory / "rows.jsonl": "".join(json.dumps(r) + "\n" for r in EXAMPLE_ROWS),
        directory / "checks" / "mentions_expected.py": EXAMPLE_CHECK,
    }
    for path, text in examples.items():
        if path.exists():
            click.echo(f"kept {path} (exists; the example suite refers to it)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        click.echo(f"wrote {path}")
    where = "" if directory == Path() else f"cd {directory} && "
    click.echo(f"next: {where}scorebox run   (a .py check needs Docker: `scorebox image build`)")
