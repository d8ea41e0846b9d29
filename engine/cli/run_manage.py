"""``scorebox run list | show | results | cancel | compare``: runs on a server, and the
summary table and result records the run command shares with them."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from engine.cli.remote import Remote, server_options
from engine.runs.export import record, write_records


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def render_summary(summary: Sequence[Mapping[str, Any]], title: str = "summary") -> None:
    """Print a per-check summary table."""
    from rich.console import Console  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from rich.table import Table  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

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


def remote_results(
    remote: Remote, run_id: str, rows: Sequence[Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Every result of a run as flat records (inputs joined when ``rows`` are known)."""
    response = remote.request(
        "GET", f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
    )
    out: list[dict[str, Any]] = []
    for line in response.text.splitlines():
        if line.strip():
            item = json.loads(line)
            index = int(item["row_index"])
            row = rows[index] if rows is not None and index < len(rows) else None
            out.append(record(index, item, row))
    return out


@click.command("list")
@click.option("--status", default=None, help="Only runs with this status.")
@click.option(
    "--label", "label", default=None, metavar="KEY=VALUE", help="Only runs with this label."
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@click.option("--offset", default=0, type=click.IntRange(min=0))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@server_options
def run_list(
    status: str | None,
    label: str | None,
    limit: int,
    offset: int,
    as_json: bool,
    server: str | None,
    api_key: str | None,
) -> None:
    """List recent runs on the server."""
    query: dict[str, Any] = {"limit": limit, "offset": offset}
    if status:
        query["status"] = status
    if label:
        query["label"] = label
    found = Remote(server, api_key).json("GET", "/v1/runs", params=query)["runs"]
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    for r in found:
        labels = ",".join(f"{k}={v}" for k, v in (r.get("labels") or {}).items())
        click.echo(
            f"{r['id']}  {r['status']:<10} {r['progress']['done']}/{r['progress']['total']}  "
            f"{r.get('created_at', '')}  {labels}"
        )


@click.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the run document as JSON.")
@server_options
def run_show(run_id: str, as_json: bool, server: str | None, api_key: str | None) -> None:
    """A run's status, progress and per-check summary."""
    doc = Remote(server, api_key).json("GET", f"/v1/runs/{run_id}")
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    progress = doc["progress"]
    render_summary(
        doc.get("summary") or [],
        f"run {doc['id']}: {doc['status']} ({progress['done']}/{progress['total']})",
    )


@click.command("results")
@click.argument("run_id")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to a .jsonl, .csv, .tsv or .html file (default: JSONL on stdout).",
)
@server_options
def run_results(run_id: str, output: Path | None, server: str | None, api_key: str | None) -> None:
    """Every row x check result of a run."""
    records = remote_results(Remote(server, api_key), run_id)
    if output is None:
        for r in records:
            click.echo(json.dumps(r, ensure_ascii=False))
        return
    write_records(output, records, f"scorebox run {run_id}")
    click.echo(f"wrote {output}", err=True)


@click.command("cancel")
@click.argument("run_id")
@server_options
def run_cancel(run_id: str, server: str | None, api_key: str | None) -> None:
    """Cancel a run (rows already scored are kept)."""
    doc = Remote(server, api_key).json("POST", f"/v1/runs/{run_id}/cancel")
    click.echo(f"run {doc['id']}: {doc['status']}")


def _interval(value: Mapping[str, Any] | None, scale: float = 1.0) -> str:
    if value is None:
        return "-"
    verdict = "significant" if value["significant"] else "not significant"
    return (
        f"{value['delta'] * scale:+.3f} [{value['low'] * scale:+.3f}, "
        f"{value['high'] * scale:+.3f}] {verdict}"
    )


def _side(row: Mapping[str, Any], side: str) -> str:
    """One side of a changed row: its status, its score rounded, pass or fail."""
    score = row[f"score_{side}"]
    text = f"{row[f'status_{side}']} {_fmt(score)}"
    flag = row.get(f"passed_{side}")
    if flag is None or isinstance(score, bool):  # a bool score is its own pass flag
        return text
    return f"{text} {'pass' if flag else 'fail'}"


def _regressed(check: Mapping[str, Any]) -> bool:
    return any(
        (d := check.get(name)) is not None and d["significant"] and d["delta"] < 0
        for name in ("mean_delta", "pass_rate_delta")
    )


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 3 when a check's mean or pass rate dropped significantly (95% CI below 0).",
)
@server_options
def run_compare(
    run_a: str,
    run_b: str,
    as_json: bool,
    fail_on_regression: bool,
    server: str | None,
    api_key: str | None,
) -> None:
    """Compare run B with baseline A: deltas with a 95% paired-bootstrap CI, changed rows."""
    doc = Remote(server, api_key).json("GET", f"/v1/runs/{run_a}/compare/{run_b}")
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(
            f"{doc['matched']} rows matched by {doc['matched_by']} "
            f"({doc['only_a']} only in A, {doc['only_b']} only in B); deltas are B - A"
        )
        for c in doc["checks"]:
            click.echo(f"{c['check']}: mean {_interval(c['mean_delta'])}")
            if c["pass_rate_delta"] is not None:
                click.echo(f"{' ' * len(c['check'])}  pass rate {_interval(c['pass_rate_delta'])}")
            for r in c["changed"][:20]:  # regressions (pass -> fail) first
                click.echo(
                    f"    {r['key']}: {r['kind'].replace('_to_', ' -> ')} "
                    f"({_side(r, 'a')} -> {_side(r, 'b')})"
                )
            if c["changed_total"] > 20:
                click.echo(f"    ... {c['changed_total'] - 20} more changed rows")
    if fail_on_regression and any(_regressed(c) for c in doc["checks"]):
        sys.exit(3)
