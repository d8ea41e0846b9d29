"""``scorebox check push|list|show|rm``: checks on a scorebox server."""

from __future__ import annotations

import json
from pathlib import Path

import click

from engine.cli.check_config import read_config
from engine.cli.remote import Remote, with_remote
from engine.names import split_entry


@click.command("push")
@click.argument("file", metavar="FILE[:FUNCTION]")
@click.option(
    "--name", default=None, help="Check name (default: the file name without its extension)."
)
@click.option(
    "--kind",
    type=click.Choice(["code", "model"]),
    default=None,
    help="code (Python) or model (a prompt template for an LLM judge). Default: .py is code; "
    ".txt, .md, .prompt and .tmpl are model; any other file is code when it defines "
    "`evaluate` or `class Check`, else model (the server decides by the same rule).",
)
@click.option(
    "--check-type",
    type=click.Choice(["score", "pass_fail"]),
    default=None,
    help="Model checks: what the judge answers (default: score).",
)
@click.option("--description", default=None)
@click.option("--tag", "tags", multiple=True)
@click.option("--policy", type=click.Choice(["standard", "restricted"]), default="standard")
@click.option(
    "--entry",
    default=None,
    help="The entry function of another tool's scorer file where several fit "
    "(promptfoo's file://x.py:fn; FILE:FUNCTION says the same); default: found by name or "
    "by its parameters.",
)
@click.option(
    "--config",
    default=None,
    metavar="JSON|@FILE",
    help="The check's configuration (a JSON object): promptfoo's context['config'], the "
    "keyword parameters of reward-kit and Braintrust scorers. A new configuration is a "
    "new version.",
)
@click.option(
    "--origin",
    type=click.Choice(["pushed", "generated"]),
    default="pushed",
    show_default=True,
    help="Where the check comes from: generated when `scorebox check generate` wrote it "
    "(as the next steps it prints say); shown by `scorebox check list` and `show`.",
)
@with_remote
def push(
    file: str,
    name: str | None,
    kind: str | None,
    check_type: str | None,
    description: str | None,
    tags: tuple[str, ...],
    policy: str,
    entry: str | None,
    config: str | None,
    origin: str,
    remote: Remote,
) -> None:
    """Upload FILE as a new version of a check (unchanged content keeps its version).

    FILE is a Python check or a model check's prompt template (see --kind). A name
    that is a built-in's shadows the built-in for this tenant: a warning says so, and
    `builtin:NAME` still reaches the built-in.
    """
    named, named_entry = split_entry(file)
    path = Path(named)
    if not path.is_file():
        raise click.BadParameter(f"{named}: no such file", param_hint="FILE")
    if named_entry and entry and named_entry != entry:
        raise click.BadParameter(
            f"{file} names the entry {named_entry!r} and --entry names {entry!r}: give one"
        )
    entry = entry or named_entry
    data = {"name": name or path.stem, "policy": policy}
    if kind:
        data["kind"] = kind
    if check_type:
        data["check_type"] = check_type
    if description:
        data["description"] = description
    if tags:
        data["tags"] = ",".join(tags)
    if entry:
        data["entry"] = entry
    if config is not None:
        data["config"] = json.dumps(read_config(config))
    if origin != "pushed":
        data["origin"] = origin
    media = "text/x-python" if path.suffix == ".py" else "text/plain"
    response = remote.request(
        "POST",
        "/v1/checks/upload",
        data=data,
        files={"file": (path.name, path.read_bytes(), media)},
    )
    body = response.json()
    state = "created" if response.status_code == 201 else "unchanged"
    click.echo(f"{body['name']}@{body['version']} {body['kind']} {state} ({body['id']})")
    for warning in body.get("warnings") or []:
        click.echo(f"  warning [{warning['code']}] {warning['message']}", err=True)


@click.command("list")
@click.option("--all-versions", is_flag=True, help="Every version, not only the latest.")
@click.option("--json", "as_json", is_flag=True)
@with_remote
def list_checks(all_versions: bool, as_json: bool, remote: Remote) -> None:
    """List this tenant's checks and the built-ins."""
    body = remote.json("GET", "/v1/checks", params={"all_versions": all_versions})
    if as_json:
        click.echo(json.dumps(body, indent=2))
        return
    for c in body["checks"]:
        # an older server sends no origin, only the boolean `builtin` it replaces
        origin = c.get("origin") or ("builtin" if c.get("builtin") else "pushed")
        ref = c["name"] if origin == "builtin" else f"{c['name']}@{c['version']}"
        out = c.get("output_data_type") or ""
        click.echo(f"{ref:40} {c['kind']:8} {origin:8} {out:6} {c.get('id') or ''}".rstrip())


@click.command("show")
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True)
@with_remote
def show(ref: str, as_json: bool, remote: Remote) -> None:
    """Show a check: REF is a name, name@N or an id."""
    body = remote.json("GET", f"/v1/checks/{ref}")
    if as_json:
        click.echo(json.dumps(body, indent=2))
        return
    for key in ("id", "name", "version", "kind", "origin", "output_data_type", "policy", "sha256"):
        click.echo(f"{key}: {body.get(key)}")
    click.echo(
        f"requires: scenario_input={body.get('requires_scenario_input')} "
        f"scenario_result={body.get('requires_scenario_result')}"
    )
    if body.get("description"):
        click.echo(f"description: {body['description']}")
    if "# /// script" in (body.get("source") or ""):
        env = remote.json("GET", f"/v1/checks/{body.get('id') or ref}/environment")
        line = f"environment: {env.get('state')} ({', '.join(env.get('requirements') or [])})"
        if env.get("error"):
            line += f": {env['error']}"
        click.echo(line)
    click.echo("")
    click.echo(body.get("source") or body.get("prompt_template") or "")


@click.command("rm")
@click.argument("ref")
@click.option("--version", type=int, default=None, help="Only this version.")
@with_remote
def rm(ref: str, version: int | None, remote: Remote) -> None:
    """Delete a check (every version of a name, or one version)."""
    params = {"version": version} if version else {}
    body = remote.json("DELETE", f"/v1/checks/{ref}", params=params)
    click.echo(f"deleted {body['deleted']} version(s) of {ref}")
