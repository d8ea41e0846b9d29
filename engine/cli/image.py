"""``scorebox image ...``: build and inspect the sandbox image."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import click

from engine.errors import ScoreboxError
from engine.sandbox.docker.image import (
    ImageVersions,
    build_image,
    image_status,
    image_versions,
    sandbox_packages,
)
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
@click.option(
    "--versions",
    "all_versions",
    is_flag=True,
    help="Also list every Debian package and Python distribution in the image, with its version.",
)
def show(as_json: bool, all_versions: bool) -> None:
    """The configured image: tag, content hash, presence, the packages it provides and the
    exact versions it was built with."""
    try:
        status = image_status(Settings())
        versions = image_versions(Settings()) if status.present else None
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    packages = sandbox_packages()
    if as_json:
        data = {
            **asdict(status),
            "packages": [p.to_dict() for p in packages],
            "versions": _versions_dict(versions),
        }
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
        if versions is None:
            click.echo("versions: not recorded (built before they were; `scorebox image build`)")
        else:
            click.echo(f"python:   {versions.python}")
            click.echo(
                f"versions: {len(versions.debian)} Debian packages, "
                f"{len(versions.python_packages)} Python distributions"
                + ("" if all_versions else " (--versions lists them)")
            )
    click.echo("packages:")
    for package in packages:
        version = _recorded(versions, package.source, package.distribution) or package.version
        version = version or "(Debian bookworm)"
        origin = f"{package.source}:{package.distribution}"
        click.echo(f"  {package.import_name:<18} {version:<18} {origin}")
    if all_versions and versions is not None:
        click.echo("debian:")
        for name, version in versions.debian.items():
            click.echo(f"  {name:<40} {version}")
        click.echo("python distributions:")
        for name, version in versions.python_packages.items():
            click.echo(f"  {name:<40} {version}")


def _recorded(versions: ImageVersions | None, source: str, distribution: str) -> str | None:
    """The version the image recorded for a listed package, when it did."""
    if versions is None:
        return None
    if source == "debian":
        return versions.debian.get(distribution)
    return versions.python_packages.get(re.sub(r"[-_.]+", "-", distribution).lower())


def _versions_dict(versions: ImageVersions | None) -> dict[str, object] | None:
    if versions is None:
        return None
    return {
        "python": versions.python,
        "debian": dict(versions.debian),
        "python_packages": dict(versions.python_packages),
    }
