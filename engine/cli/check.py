"""``scorebox check ...``: validate, push, list, show, remove and generate checks."""

from __future__ import annotations

import click


@click.group()
def check() -> None:
    """Work with checks."""
