"""``scorebox run``: score a JSONL/CSV dataset, on a server or locally in the sandbox."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from engine.cli.remote import Remote, server_options

ROW_FIELDS = ("id", "model_output", "scenario_input", "scenario_result", "model_input", "metadata")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows from a .jsonl/.ndjson (one object per line), .json (a list) or .csv file."""
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    rows: list[dict[str, Any]] = []
    if suffix == ".csv":
        for number, record in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            row: dict[str, Any] = {}
            for key, value in record.items():
                if key is None or key not in ROW_FIELDS or value in (None, ""):
                    continue
                if key == "metadata":
                    try:
                        row[key] = json.loads(value)
                    except json.JSONDecodeError as exc:
                        raise click.ClickException(
                            f"{path}:{number}: metadata is not JSON: {exc}"
                        ) from exc
                else:
                    row[key] = value
            rows.append(row)
        return rows
    if suffix == ".json":
        data = json.loads(text)
        if not isinstance(data, list):
            raise click.ClickException(f"{path}: expected a JSON list of rows")
        return data
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"{path}:{number}: not JSON: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise click.ClickException(f"{path}:{number}: expected a JSON object")
        rows.append(value)
    return rows


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def render_summary(summary: Sequence[Mapping[str, Any]], title: str = "summary") -> None:
    """Print a per-check summary table."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    table = Table(title=title)
    for column in (
        "check",
        "kind",
        "rows",
        "ok",
        "other",
        "mean",
        "min",
        "p50",
        "max",
        "pass rate",
    ):
        table.add_column(
            column, justify="left" if column in ("check", "kind", "other") else "right"
        )
    for s in summary:
        counts = dict(s.get("counts") or {})
        ok = counts.pop("ok", 0)
        ref = s["check"] if s.get("version") is None else f"{s['check']}@{s['version']}"
        rate = s.get("pass_rate")
        table.add_row(
            ref,
            str(s.get("kind", "")),
            str(ok + sum(counts.values())),
            str(ok),
            ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "-",
            _fmt(s.get("mean")),
            _fmt(s.get("min")),
            _fmt(s.get("p50")),
            _fmt(s.get("max")),
            "-" if rate is None else f"{rate:.1%}",
        )
    console.print(table)


def _parse_ref(ref: str) -> str | dict[str, Any]:
    return json.loads(ref) if ref.strip().startswith("{") else ref


def run_remote(
    remote: Remote,
    checks: Sequence[str],
    rows: list[dict[str, Any]],
    labels: Mapping[str, Any],
    progress: bool,
    poll_seconds: float = 0.5,
) -> dict[str, Any]:
    """Submit a run, follow it to the end, return the final run document."""
    payload = "\n".join(json.dumps(r) for r in rows).encode()
    run = remote.json(
        "POST",
        "/v1/runs/upload",
        data={"checks": json.dumps([_parse_ref(c) for c in checks]), "labels": json.dumps(labels)},
        files={"file": ("rows.jsonl", payload, "application/x-ndjson")},
    )
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeRemainingColumn(),
        disable=not progress,
        transient=True,
    ) as bar:
        task = bar.add_task(run["id"], total=run["progress"]["total"])
        while run["status"] in ("queued", "running"):
            time.sleep(poll_seconds)
            run = remote.json("GET", f"/v1/runs/{run['id']}")
            bar.update(task, completed=run["progress"]["done"])
    return dict(run)


def run_local(
    checks: Sequence[str], rows: list[dict[str, Any]], progress: bool
) -> list[dict[str, Any]]:
    """Score locally: each check is a .py file (sandboxed) or a built-in name."""
    from rich.progress import BarColumn, Progress, TextColumn

    from engine.catalog import ResolvedCheck
    from engine.contract import Policy
    from engine.errors import InvalidRequestError
    from engine.runner import CodeCheck, Engine, as_rows
    from engine.runs.registry import load_builtins
    from engine.runs.summary import summarize
    from engine.settings import Settings
    from engine.validation import validate

    settings = Settings()
    builtins = load_builtins()
    row_list = as_rows(rows)
    summaries: list[dict[str, Any]] = []
    with (
        Engine(settings.model_copy(update={"pool_size": 0})) as engine,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            disable=not progress,
            transient=True,
        ) as bar,
    ):
        for ref in checks:
            task = bar.add_task(ref, total=len(row_list))

            def tick(_index: int, _result: Any, task: Any = task) -> None:
                bar.advance(task)

            path = Path(ref)
            if path.suffix == ".py" and path.exists():
                source = path.read_text(encoding="utf-8")
                report = validate(source, Policy.STANDARD)
                if not report.valid:
                    problems = "; ".join(f"line {i.line}: {i.message}" for i in report.errors)
                    raise click.ClickException(f"{path} is not a valid check: {problems}")
                code = CodeCheck(source=source, name=path.stem, output_type=report.output_data_type)
                results = engine.run_check(code, row_list, on_result=tick)
                summaries.append(summarize(results, path.stem).model_dump())
            elif ref in builtins:
                builtin = builtins[ref]
                resolved = ResolvedCheck("builtin", ref, builtin=builtin)
                results = builtin.score(row_list, resolved.params)
                bar.update(task, completed=len(row_list))
                summaries.append(summarize(results, ref, kind="builtin").model_dump())
            else:
                raise click.ClickException(
                    str(
                        InvalidRequestError(
                            f"{ref!r} is neither a .py file nor a built-in: without --server, "
                            "name check files; with --server, name checks pushed there"
                        )
                    )
                )
    return summaries


@click.command("run")
@click.option("--check", "checks", multiple=True, required=True, help="A check (repeatable).")
@click.option(
    "--data",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Rows: .jsonl, .json or .csv.",
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Run label.")
@click.option("--local", is_flag=True, help="Score here even if SCOREBOX_SERVER is set.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--no-progress", is_flag=True)
@server_options
def run(
    checks: tuple[str, ...],
    data: Path,
    labels: tuple[str, ...],
    local: bool,
    as_json: bool,
    no_progress: bool,
    server: str | None,
    api_key: str | None,
) -> None:
    """Score a dataset with checks and print a per-check summary.

    With --server (or SCOREBOX_SERVER), the checks are names on that server and
    the run is durable there; otherwise they are .py files (or built-in names)
    scored here in the sandbox.
    """
    rows = read_rows(data)
    progress = not no_progress and not as_json
    label_map = dict(pair.partition("=")[::2] for pair in labels)
    if server and not local:
        final = run_remote(Remote(server, api_key), checks, rows, label_map, progress)
        if as_json:
            click.echo(json.dumps(final, indent=2))
        else:
            render_summary(final["summary"], f"run {final['id']}: {final['status']}")
        if final["status"] != "succeeded":
            raise SystemExit(1)
        return
    summaries = run_local(checks, rows, progress)
    if as_json:
        click.echo(json.dumps({"summary": summaries}, indent=2))
    else:
        render_summary(summaries, f"{len(rows)} rows, scored locally")
