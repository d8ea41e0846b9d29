"""``scorebox env ...``: declared (PEP 723) environments on this host's Docker engine."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import click

from engine.environments import Environments
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
    """Every environment built on this Docker engine, newest first."""
    try:
        records = _environments(Settings()).records()
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in records], indent=2))
        return
    if not records:
        click.echo("no environments built")
    for record in records:
        built = time.strftime("%Y-%m-%d %H:%M", time.gmtime(record.built_at))
        click.echo(
            f"{record.key}  {record.size_bytes / 1e6:7.1f} MB  {built}  "
            f"{', '.join(record.requirements)}"
        )


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
@click.option("--all", "everything", is_flag=True, help="Also those of the current image.")
def prune(everything: bool) -> None:
    """Remove environments built on other sandbox images (or every one with --all)."""
    try:
        removed = _environments(Settings()).prune(all_bases=everything)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"removed {len(removed)} environment(s)" + "".join(f"\n  {k}" for k in removed))


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
