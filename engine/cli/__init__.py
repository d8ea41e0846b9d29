"""The ``scorebox`` command. Commands parse, call the engine, render; no logic here."""

from __future__ import annotations

import click

from engine.cli.check import check
from engine.cli.image import image


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scorebox")
def main() -> None:
    """scorebox: score LLM outputs with sandboxed checks."""


main.add_command(check)
main.add_command(image)
