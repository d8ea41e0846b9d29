"""``scorebox rule create | list | show | disable | enable | delete | backfill``: rules on a
server, which pick received spans and score them with pinned check versions."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from engine.cli.remote import Remote, with_remote


def _json_option(value: str | None, what: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{what}: not JSON: {exc}") from None


def _line(rule: dict[str, Any]) -> str:
    checks = ", ".join(
        c["name"] if c.get("version") is None else f"{c['name']}@{c['version']}"
        for c in rule["checks"]
    )
    state = "enabled" if rule["enabled"] else "disabled"
    return (
        f"{rule['name']}  v{rule['version']}  {state}  sample {rule['sample_rate']:g}  "
        f"checks: {checks}  filter: {json.dumps(rule['filter'])}"
    )


@click.group()
def rule() -> None:
    """Rules: which received spans are scored, by which pinned checks."""


@rule.command("create")
@click.argument("name")
@click.option("--check", "checks", multiple=True, required=True, help="A check (repeatable).")
@click.option(
    "--filter",
    "filter_json",
    default=None,
    help='Fields to match, as JSON: {"service.name": "support-bot"}.',
)
@click.option("--sample-rate", default=1.0, show_default=True, type=click.FloatRange(0, 1))
@click.option("--budget", type=click.IntRange(min=0), default=None, help="LLM tokens a day.")
@click.option("--disabled", is_flag=True, help="Create it disabled (try it with a preview).")
@click.option(
    "--ignore-required-agreement",
    is_flag=True,
    help="Create it even when a check's required agreement with human labels is not met.",
)
@with_remote
def rule_create(
    remote: Remote,
    name: str,
    checks: tuple[str, ...],
    filter_json: str | None,
    sample_rate: float,
    budget: int | None,
    disabled: bool,
    ignore_required_agreement: bool,
) -> None:
    """Create rule NAME; its checks' versions are pinned now."""
    body = {
        "name": name,
        "checks": list(checks),
        "filter": _json_option(filter_json, "--filter") or {},
        "sample_rate": sample_rate,
        "enabled": not disabled,
        "daily_token_budget": budget,
    }
    params = {"ignore_required_agreement": "true"} if ignore_required_agreement else None
    click.echo(_line(remote.json("POST", "/v1/rules", json=body, params=params)))


@rule.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@with_remote
def rule_list(remote: Remote, as_json: bool) -> None:
    """The tenant's rules."""
    rules = remote.json("GET", "/v1/rules")["rules"]
    if as_json:
        click.echo(json.dumps(rules, indent=2))
        return
    for r in rules:
        click.echo(_line(r))
    if not rules:
        click.echo("no rules: scorebox rule create NAME --check CHECK")


@rule.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@with_remote
def rule_show(remote: Remote, name: str, as_json: bool) -> None:
    """A rule, its scores by status and its backlog."""
    got = remote.json("GET", f"/v1/rules/{name}")
    if as_json:
        click.echo(json.dumps(got, indent=2))
        return
    click.echo(_line(got))
    counts = ", ".join(f"{k}={v}" for k, v in sorted((got.get("counts") or {}).items()))
    click.echo(f"scores: {counts or 'none yet'}  backlog: {got.get('backlog', 0)}")


def _set_enabled(remote: Remote, name: str, enabled: bool) -> None:
    click.echo(_line(remote.json("PATCH", f"/v1/rules/{name}", json={"enabled": enabled})))


@rule.command("disable")
@click.argument("name")
@with_remote
def rule_disable(remote: Remote, name: str) -> None:
    """Stop scoring new spans with rule NAME (its scores are kept)."""
    _set_enabled(remote, name, False)


@rule.command("enable")
@click.argument("name")
@with_remote
def rule_enable(remote: Remote, name: str) -> None:
    """Score new spans with rule NAME again."""
    _set_enabled(remote, name, True)


@rule.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@with_remote
def rule_delete(remote: Remote, name: str, yes: bool) -> None:
    """Delete rule NAME with its versions and scores."""
    if not yes:
        click.confirm(f"delete rule {name!r} and all its scores?", abort=True)
    remote.request("DELETE", f"/v1/rules/{name}")
    click.echo(f"deleted rule {name}")


@rule.command("backfill")
@click.argument("name")
@click.option("--since", required=True, help="Spans started at or after (ISO 8601).")
@click.option("--until", default=None, help="Spans started before (ISO 8601; default now).")
@click.option("--cap", "row_cap", type=click.IntRange(min=1), default=None, help="Most spans.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Follow its progress.")
@with_remote
def rule_backfill(
    remote: Remote,
    name: str,
    since: str,
    until: str | None,
    row_cap: int | None,
    wait: bool,
) -> None:
    """Score the stored spans of a window with rule NAME (spans it scored already are
    skipped)."""
    body: dict[str, Any] = {"since": since}
    if until:
        body["until"] = until
    if row_cap:
        body["row_cap"] = row_cap
    b = remote.json("POST", f"/v1/rules/{name}/backfill", json=body)
    click.echo(f"backfill {b['id']} of {name} v{b['rule_version']}: {b['status']}")
    while wait:
        waiting = b["scores"].get("pending", 0) + b["scores"].get("queued", 0)
        if b["status"] != "running" and not waiting:
            break
        time.sleep(1)
        b = remote.json("GET", f"/v1/rules/{name}/backfills/{b['id']}")
    progress = ", ".join(f"{k}={v}" for k, v in sorted(b["progress"].items()))
    scores = ", ".join(f"{k}={v}" for k, v in sorted(b["scores"].items()))
    click.echo(f"{b['status']}: {progress or 'nothing scanned yet'}; scores: {scores or 'none'}")
