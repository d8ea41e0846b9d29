"""``scorebox env ...``: declared (PEP 723) environments on this host's Docker engine."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import click

from engine.environments import BLOCK_MARKER, Environments
from engine.errors import ScoreboxError
from engine.settings import Settings


def _environments(settings: Settings) -> Environments:
    from engine.sandbox.docker.environments import docker_environments  # noqa: PLC0415 (lazy)

    return docker_environments(settings)


@click.group()
def env() -> None:
    """Declared environments: list, show, build in advance, prune, and operator wheels."""


@env.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_environments(as_json: bool) -> None:
    """Every environment built on this Docker engine, newest first, and the checks using it."""
    settings = Settings()
    try:
        environments = _environments(settings)
        records = environments.records()
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    users = _checks_by_key(settings, environments)
    if as_json:
        listed = [
            {
                **r.to_dict(),
                "last_used": environments.last_used(r),
                "checks": users.get(r.key, []) if users is not None else None,
            }
            for r in records
        ]
        click.echo(json.dumps(listed, indent=2))
        return
    if not records:
        click.echo("no environments built")
        return
    click.echo(f"{'KEY':<20}  {'SIZE':>9}  {'BUILT':<16}  {'LAST USED':<16}  CHECKS  REQUIREMENTS")
    for record in records:
        checks = users.get(record.key, []) if users is not None else None
        click.echo(
            f"{record.key:<20}  {record.size_bytes / 1e6:6.1f} MB  {_when(record.built_at)}  "
            f"{_when(environments.last_used(record))}  "
            f"{'?' if checks is None else len(checks):>6}  {', '.join(record.requirements)}"
        )
        for check in checks or []:
            click.echo(f"{'':<22}used by {check}")
    if users is None:
        click.echo("(checks: the database could not be read; CHECKS shows ?)")


def _when(moment: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(moment))


def _checks_by_key(settings: Settings, environments: Environments) -> dict[str, list[str]] | None:
    """Environment key -> the checks (``tenant/name@version``, latest versions) declaring it;
    None when the database cannot be read."""
    import sqlalchemy  # noqa: PLC0415 (lazy: the database layer)

    from engine.storage import open_store  # noqa: PLC0415

    try:
        store = open_store(settings.effective_database_url, migrate=False)
        if not sqlalchemy.inspect(store.engine).has_table("tenants"):
            store.engine.dispose()
            return {}  # no tenant, no check yet
    except Exception:  # no database here (a worker host): the list works without it
        return None
    users: dict[str, list[str]] = {}
    try:
        for tenant in store.list_tenants():
            for check in store.list_checks(tenant.id):
                if not check.source or BLOCK_MARKER not in check.source:
                    continue
                declared = environments.declared(check.source)
                if declared.requirements and not declared.problems:
                    key = environments.key(declared.requirements)
                    users.setdefault(key, []).append(f"{tenant.name}/{check.name}@{check.version}")
    except Exception:  # an unmigrated or foreign database: say so rather than fail
        return None
    finally:
        store.engine.dispose()
    return users


@env.command("show")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(target: str, as_json: bool) -> None:
    """The state of a check file's environment (or of a key): what resolved, size, log."""
    settings = Settings()
    try:
        environments = _environments(settings)
        path = Path(target)
        if path.is_file():
            declared = environments.declared(path.read_text())
            if declared.problems:
                problem = declared.problems[0]
                raise click.ClickException(
                    f"{target}:{problem.line}:{problem.col}: {problem.message}"
                )
            if not declared.requirements:
                raise click.ClickException(f"{target} declares no dependencies")
            state = environments.state(declared.requirements)
        else:
            record = environments.installer.find_environment(target)
            if record is None:
                raise click.ClickException(f"no environment {target}: see `scorebox env list`")
            state = environments.state(record.requirements)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    data = {
        "key": state.key,
        "state": state.state,
        "requirements": list(state.requirements),
        "error": state.error,
        "log": state.log_path or str(environments.log_path(state.key)),
        "record": state.record.to_dict() if state.record else None,
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"key:          {state.key}")
    click.echo(f"state:        {state.state}")
    click.echo(f"requirements: {', '.join(state.requirements)}")
    if state.record:
        click.echo(f"image:        {state.record.image}")
        click.echo(f"size:         {state.record.size_bytes / 1e6:.1f} MB")
        click.echo(f"build time:   {state.record.build_seconds:.1f} s")
        for name, version in sorted(state.record.resolved.items()):
            click.echo(f"  {name}=={version}")
    if state.error:
        click.echo(f"error:        {state.error}")
    click.echo(f"log:          {data['log']}")


@env.command("build")
@click.argument("check_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def build(check_file: Path) -> None:
    """Build a check file's environment now (for SCOREBOX_PACKAGES_OFFLINE hosts)."""
    settings = Settings().model_copy(update={"packages_offline": False})
    try:
        environments = _environments(settings)
        declared = environments.declared(check_file.read_text())
        if declared.problems:
            problem = declared.problems[0]
            raise click.ClickException(
                f"{check_file}:{problem.line}:{problem.col}: {problem.message}"
            )
        if not declared.requirements:
            raise click.ClickException(f"{check_file} declares no dependencies")
        environments.forget_failure(environments.key(declared.requirements))
        started = time.monotonic()
        record = environments.ensure(declared.requirements)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    fresh = "built" if environments.built else "already built"
    click.echo(
        f"{record.key} {fresh} ({time.monotonic() - started:.1f} s, "
        f"{record.size_bytes / 1e6:.1f} MB): {record.image}"
    )


@env.command("prune")
@click.option("--all", "everything", is_flag=True, help="Remove every environment.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def prune(everything: bool, dry_run: bool) -> None:
    """Remove environments of other sandbox images, those unused for
    SCOREBOX_ENV_PRUNE_UNUSED_DAYS, then the least recently used past
    SCOREBOX_ENV_MAX_TOTAL_MB (or every one with --all)."""
    try:
        plan = _environments(Settings()).prune_unused(all_bases=everything, dry_run=dry_run)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    verb = "would remove" if dry_run else "removed"
    total = sum(item.size_bytes for item in plan) / 1e6
    click.echo(f"{verb} {len(plan)} environment(s), {total:.1f} MB")
    for item in plan:
        click.echo(f"  {item.key}  {item.size_bytes / 1e6:6.1f} MB  {item.reason}")


@env.command("wheel")
@click.argument("requirement")
def wheel(requirement: str) -> None:
    """Build REQUIREMENT's wheel from its sdist, offline, into the wheelhouse.

    The sdist comes from the index's simple API (checked against its sha256) and its
    build requirements as wheels; the build runs in a hardened container with no
    network, no secrets and bounded time, memory and size.
    """
    from engine.environments.wheels import build_wheel  # noqa: PLC0415 (lazy: httpx)
    from engine.sandbox.docker.environments import DockerEnvironments  # noqa: PLC0415 (lazy)

    settings = Settings()
    try:
        environments = _environments(settings)
        installer = environments.installer
        if not isinstance(installer, DockerEnvironments):  # one backend today
            raise click.ClickException("scorebox env wheel needs the Docker backend")
        with tempfile.TemporaryDirectory(prefix="scorebox-wheel-") as work:
            path = build_wheel(requirement, settings, installer, Path(work))
        environments.forget_failure()  # failed builds may now find their wheel
    except (ScoreboxError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"built {path.name} into {path.parent}")
