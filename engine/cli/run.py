"""``scorebox run``: score a JSONL/CSV dataset, on a server or locally in the sandbox.

The run command and following a run on a server live here; scoring without a server
is ``run_local``, the ``run list | show | results | cancel | compare`` subcommands
(and the summary table) are ``run_manage``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from engine.cli.agreement import check_agreement, min_agreement_option
from engine.cli.check_config import apply_configs
from engine.cli.params import check_threshold_names, parse_map, parse_thresholds
from engine.cli.remote import Remote, server_options
from engine.cli.run_manage import (
    remote_results,
    render_summary,
    run_cancel,
    run_compare,
    run_list,
    run_results,
    run_show,
)
from engine.cli.suite import find_suite, suite_checks, suite_data
from engine.runs.export import (
    DEFAULT_FAIL_ON,
    EXIT_COULD_NOT_RUN,
    EXIT_GATE_FAILED,
    EXIT_INTERRUPTED,
    Gates,
    write_records,
)
from engine.suites.data import read_rows
from engine.suites.gates import broken_gates, failing_rows, row_reasons
from engine.suites.local import BUILTIN_PREFIX, run_local
from engine.suites.outputs import prepare_outputs

# re-exported for callers of the CLI's own paths
__all__ = [
    "BUILTIN_PREFIX",
    "check_refs",
    "parse_params",
    "remote_results",
    "render_summary",
    "run",
    "run_local",
    "run_remote",
]


def _interrupted(remote: Remote, run_id: str) -> None:
    """Ctrl-C on a followed run: say how to follow or cancel it; cancel only if asked.

    The question is asked only when stdin is a terminal: without one (CI, a pipe,
    ``< /dev/null``) the command exits 130 at once and the run goes on.
    """
    click.echo(
        f"\ninterrupted; run {run_id} goes on on the server.\n"
        f"  follow it:  scorebox run show {run_id}\n"
        f"  results:    scorebox run results {run_id} -o results.jsonl\n"
        f"  cancel it:  scorebox run cancel {run_id}",
        err=True,
    )
    if sys.stdin is not None and sys.stdin.isatty():
        try:
            cancel = click.confirm("cancel the run now?", default=False, err=True)
        except (click.Abort, EOFError):
            cancel = False
        if cancel:
            remote.json("POST", f"/v1/runs/{run_id}/cancel")
            click.echo(f"run {run_id} cancelled", err=True)
    raise SystemExit(EXIT_INTERRUPTED)


def run_remote(
    remote: Remote,
    checks: Sequence[str | dict[str, Any]],
    rows: list[dict[str, Any]],
    labels: Mapping[str, Any],
    progress: bool,
    poll_seconds: float = 0.5,
) -> dict[str, Any]:
    """Submit a run, follow it to the end, return the final run document."""
    payload = "\n".join(json.dumps(r) for r in rows).encode()
    try:
        run = remote.json(
            "POST",
            "/v1/runs/upload",
            data={"checks": json.dumps(list(checks)), "labels": json.dumps(labels)},
            files={"file": ("rows.jsonl", payload, "application/x-ndjson")},
        )
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted while submitting the run: the server may have queued it before the\n"
            "upload was cut off. See `scorebox run list` (and `scorebox run cancel RUN_ID`).",
            err=True,
        )
        raise SystemExit(EXIT_INTERRUPTED) from None
    for warning in run.get("warnings") or []:
        click.echo(f"warning: {warning}", err=True)
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        click.echo(
            f"run {run['id']} submitted ({run['progress']['total']} row x check results); "
            "Ctrl-C stops following it, not the run",
            err=True,
        )
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
    except KeyboardInterrupt:
        _interrupted(remote, str(run["id"]))
    return dict(run)


def _parse_ref(ref: str) -> str | dict[str, Any]:
    if not ref.strip().startswith("{"):
        return ref
    try:
        value = json.loads(ref)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{ref!r} is not JSON: {exc.msg}", param_hint="--check") from exc
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise click.BadParameter(
            f"{ref!r}: a JSON check is an object with a name, e.g. "
            '\'{"name": "regex_match", "params": {"pattern": "Paris"}}\'',
            param_hint="--check",
        )
    return value


def parse_params(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``--param CHECK.KEY=VALUE`` (VALUE is JSON when it parses, else a string)."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        target, sep, raw = pair.partition("=")
        check, dot, key = target.rpartition(".")
        if not sep or not dot or not check or not key:
            raise click.BadParameter(
                f"{pair!r}: expected CHECK.KEY=VALUE, e.g. regex_match.pattern=Paris",
                param_hint="--param",
            )
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(check, {})[key] = value
    return out


def check_refs(
    checks: Sequence[str], params: Mapping[str, Mapping[str, Any]]
) -> list[str | dict[str, Any]]:
    """The run's check references: names, JSON objects, with ``--param`` merged in."""
    refs: list[str | dict[str, Any]] = []
    used: set[str] = set()
    for raw in checks:
        ref = _parse_ref(raw)
        name = ref if isinstance(ref, str) else str(ref["name"])
        extra = params.get(name) or params.get(name.removeprefix(BUILTIN_PREFIX))
        if extra:
            used.update({name, name.removeprefix(BUILTIN_PREFIX)})
            base: dict[str, Any] = {"name": ref} if isinstance(ref, str) else dict(ref)
            given: dict[str, Any] = dict(base.get("params") or {})
            base["params"] = {**given, **extra}
            ref = base
        refs.append(ref)
    unknown = sorted(set(params) - used)
    if unknown:
        raise click.BadParameter(
            f"--param names check(s) not in the run: {', '.join(unknown)}", param_hint="--param"
        )
    return refs


def _reasons(records: Sequence[Mapping[str, Any]]) -> None:
    """Under the summary table: why rows did not score, so a CI log explains itself."""
    lines = row_reasons(records)
    if lines:
        click.echo("\n".join(["rows that did not score:", *(f"  {line}" for line in lines)]))


def _finish(
    records: list[dict[str, Any]], outputs: Sequence[Path], title: str, gates: Gates
) -> None:
    for path in outputs:
        write_records(path, records, title)
        click.echo(f"wrote {path}", err=True)
    problems = broken_gates(records, gates)
    for problem in problems:
        click.echo(f"FAILED: {problem}", err=True)
    if problems:
        for line in failing_rows(records, gates):
            click.echo(line, err=True)
        raise SystemExit(EXIT_GATE_FAILED)


def _fail_on(value: str) -> tuple[str, ...]:
    from engine.contract import Status  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    if value.strip().lower() in ("", "none"):
        return ()
    names = tuple(v.strip() for v in value.split(",") if v.strip())
    known = {s.value for s in Status}
    bad = [n for n in names if n not in known]
    if bad:
        import difflib  # noqa: PLC0415 (lazy: only for the message)

        close = difflib.get_close_matches(bad[0], sorted(known), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise click.BadParameter(
            f"unknown status {', '.join(bad)}; {hint}use statuses from "
            f"{', '.join(sorted(known))} or none",
            param_hint="--fail-on",
        )
    return names


def _check_output_kinds(outputs: Sequence[Path]) -> None:
    """A usage error, before scoring, for an output file of a kind no writer makes."""
    for path in outputs:
        if path.suffix.lower() not in (".jsonl", ".ndjson", ".csv", ".tsv", ".html", ".htm"):
            raise click.BadParameter(
                f"{path}: use a .jsonl, .csv, .tsv or .html file", param_hint="-o/--output"
            )


def _refuse_configs(refs: Sequence[str | dict[str, Any]]) -> None:
    """A server run takes no configuration: it belongs to the pushed check's version."""
    if any(not isinstance(r, str) and "config" in r for r in refs):
        raise click.UsageError(
            "a configuration is part of a pushed check's version: push it with "
            "`scorebox check push FILE --config JSON` and run that check by name "
            "(--config and a suite's config: apply to local runs)"
        )


def _run_on_server(
    remote: Remote,
    refs: Sequence[str | dict[str, Any]],
    rows: list[dict[str, Any]],
    label_map: Mapping[str, Any],
    progress: bool,
    as_json: bool,
    outputs: Sequence[Path],
    gates: Gates,
) -> None:
    """Run on the server, follow the run, print and write its results, then gate on them
    (a run that did not succeed exits 1 after writing what it stored)."""
    final = run_remote(remote, refs, rows, label_map, progress)
    if as_json:
        click.echo(json.dumps(final, indent=2))
    else:
        render_summary(final["summary"], f"run {final['id']}: {final['status']}")
    records = remote_results(remote, str(final["id"]), rows)
    if not as_json:
        _reasons(records)
    if final["status"] != "succeeded":
        for path in outputs:
            write_records(path, records, f"run {final['id']}")
        click.echo(f"run {final['id']} {final['status']}: {final.get('error') or ''}", err=True)
        raise SystemExit(EXIT_COULD_NOT_RUN)
    _finish(records, outputs, f"scorebox run {final['id']}", gates)


@click.group("run", invoke_without_command=True)
@click.option(
    "--suite",
    "suite_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A suite file (default: ./scorebox.yaml when no --check is given); the flags "
    "below override it. See docs/suite.md.",
)
@click.option(
    "--check",
    "checks",
    multiple=True,
    help="A check (repeatable): a .py file, a built-in name (builtin:NAME always means the "
    "built-in), a name pushed to the server, or JSON "
    '\'{"name": "regex_match", "params": {"pattern": "Paris"}}\'.',
)
@click.option(
    "--data",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Rows: .jsonl, .json, .csv, .tsv, or .parquet (with pandas and pyarrow).",
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="Read a row field from another column, e.g. --map model_output=answer.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="CHECK.KEY=VALUE",
    help="A check parameter, e.g. --param regex_match.pattern=Paris (VALUE is JSON if it "
    "parses, else a string).",
)
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="CHECK=JSON",
    help="A code check's configuration, e.g. --config graders.py=@config.json (promptfoo's "
    "context['config'], reward-kit and Braintrust keyword parameters).",
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Run label.")
@click.option(
    "-o",
    "--output",
    "outputs",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every row x check result: .jsonl, .csv, .tsv, or .html (a one-file report). "
    "Repeatable.",
)
@click.option(
    "--fail-on",
    default=None,
    help="Exit 3 when any row has one of these statuses (comma-separated), or a check has "
    "no row that scored ok; none turns both off. "
    f"Default: the suite's fail_on, else {','.join(DEFAULT_FAIL_ON)}.",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="CHECK=MIN",
    help="Exit 3 when CHECK's value is below MIN: the pass rate of a bool check, the mean "
    "score of a numeric one (rows that scored ok).",
)
@click.option(
    "--max-failures",
    type=click.IntRange(min=0),
    default=None,
    help="Exit 3 when more than N rows fail (false, or a --fail-on status); replaces the "
    "any-row rule of --fail-on.",
)
@click.option("--local", is_flag=True, help="Score here even if SCOREBOX_SERVER is set.")
@click.option("--no-cache", is_flag=True, help="Local runs: do not use the judge cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--no-progress", is_flag=True)
@min_agreement_option
@server_options
@click.pass_context
def run(
    ctx: click.Context,
    suite_file: Path | None,
    checks: tuple[str, ...],
    data: Path | None,
    maps: tuple[str, ...],
    params: tuple[str, ...],
    configs: tuple[str, ...],
    labels: tuple[str, ...],
    outputs: tuple[Path, ...],
    fail_on: str | None,
    thresholds: tuple[str, ...],
    max_failures: int | None,
    local: bool,
    no_cache: bool,
    as_json: bool,
    no_progress: bool,
    min_agreement: tuple[str, ...],
    server: str | None,
    api_key: str | None,
) -> None:
    """Score a dataset with checks, print a per-check summary, gate on the results.

    With --server (or SCOREBOX_SERVER), the checks are names on that server and
    the run is durable there; otherwise they are .py files (or built-in names)
    scored here in the sandbox. Exit codes: 0 passed, 1 scorebox could not run,
    2 usage error, 3 checks fell below a gate (--fail-on, --threshold,
    --max-failures), 130 interrupted.

    With no --check, the run is the suite file ./scorebox.yaml (or --suite FILE):
    data, checks with params and thresholds, gates, labels and outputs, each
    overridden by its flag (`scorebox init` writes an example).

    Subcommands (list, show, results, cancel) manage runs on a server.
    """
    if ctx.invoked_subcommand is not None:
        return
    plan = find_suite(suite_file, checks)
    if plan is not None:
        suite = plan.suite
        data = data or suite_data(plan)
        maps = (*(f"{k}={v}" for k, v in suite.map.items()), *maps)
        labels = (*(f"{k}={v}" for k, v in suite.labels.items()), *labels)
        outputs = outputs or plan.outputs
        if fail_on is None:
            fail_on = ",".join(suite.fail_on) or "none"
        if max_failures is None:
            max_failures = suite.max_failures
        min_agreement = (*suite.min_agreement, *min_agreement)
        if not checks:
            checks = tuple(suite_checks(plan))
            thresholds = (*(f"{k}={v!r}" for k, v in plan.thresholds.items()), *thresholds)
    if not checks or data is None:
        raise click.UsageError(
            "name at least one --check and a --data file, or a suite file (or a subcommand: "
            + ", ".join(sorted(run.commands))
            + ")"
        )
    gates = Gates(
        _fail_on(",".join(DEFAULT_FAIL_ON) if fail_on is None else fail_on),
        parse_thresholds(thresholds),
        max_failures,
    )
    _check_output_kinds(outputs)
    refs = apply_configs(check_refs(checks, parse_params(params)), configs)
    on_server = bool(server) and not local
    if on_server:
        _refuse_configs(refs)
    check_agreement(None if local else server, api_key, refs, min_agreement)
    check_threshold_names(gates.thresholds, refs)  # before scoring: a typo is a usage error
    rows = read_rows(data, parse_map(maps))  # later --map pairs win
    prepare_outputs(outputs)  # before scoring: a finished run is not lost to a typo
    progress = not no_progress and not as_json
    label_map = dict(pair.partition("=")[::2] for pair in labels)
    if on_server:
        remote = Remote(server, api_key)
        _run_on_server(remote, refs, rows, label_map, progress, as_json, outputs, gates)
        return
    summaries, records = run_local(refs, rows, progress, no_cache=no_cache)
    if as_json:
        click.echo(json.dumps({"summary": summaries}, indent=2))
    else:
        render_summary(summaries, f"{len(rows)} rows, scored locally")
        _reasons(records)
    _finish(records, outputs, f"scorebox run: {data.name}", gates)


for _command in (run_list, run_show, run_results, run_cancel, run_compare):
    run.add_command(_command)
