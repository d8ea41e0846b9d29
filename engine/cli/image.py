"""``scorebox image ...``: build and inspect the sandbox image."""

from __future__ import annotations

import click


@click.group()
def image() -> None:
    """Build and inspect the sandbox image."""
