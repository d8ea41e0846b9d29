"""``scorebox image ...``: build and inspect the sandbox image."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from engine.errors import ScoreboxError
from engine.sandbox.docker.image import build_image, image_status, sandbox_packages
from engine.settings import Settings


@click.group()
def image() -> None:
    """Build and inspect the sandbox image."""


@image.command("build")
@click.option("--force", is_flag=True, help="Rebuild (without the layer cache) even if up to date.")
@click.option("--base", metavar="REF", help="Base image to build on (default: see README).")
def build(force: bool, base: str | None) -> None:
    """Build the sandbox image; skipped when its content-hashed tag exists."""
    try:
        result = build_image(Settings(), force=force, base=base, log=click.echo)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    size = f", {result.size_bytes / 1e6:.0f} MB" if result.size_bytes else ""
    click.echo(f"{' '.join(result.tags)}  {result.image_id[:19]}{size}")


@image.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(as_json: bool) -> None:
    """The configured image: tag, content hash, presence, and the packages it provides."""
    try:
        status = image_status(Settings())
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    packages = sandbox_packages()
    if as_json:
        data = {**asdict(status), "packages": [p.to_dict() for p in packages]}
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"image:    {status.reference}")
    click.echo(f"present:  {'yes' if status.present else 'no (run `scorebox image build`)'}")
    if status.present:
        click.echo(f"id:       {status.image_id}")
        click.echo(f"hash:     {status.content_hash or 'unknown (not built by scorebox)'}")
        click.echo(f"created:  {status.created}")
        if status.size_bytes:
            click.echo(f"size:     {status.size_bytes / 1e6:.0f} MB")
    click.echo("packages:")
    for package in packages:
        version = package.version or "(Debian bookworm)"
        origin = f"{package.source}:{package.distribution}"
        click.echo(f"  {package.import_name:<18} {version:<18} {origin}")
