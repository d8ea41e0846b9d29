"""``scorebox db ...``: schema migrations."""

from __future__ import annotations

import click

from engine.errors import ScoreboxError
from engine.settings import Settings


@click.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def upgrade_command(revision: str) -> None:
    """Create or upgrade the schema (the service also does this at start-up)."""
    from engine.storage.database import create_db_engine, current_revision, upgrade  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    try:
        engine = create_db_engine(settings.effective_database_url)
        upgrade(engine, revision)
        click.echo(f"database at revision {current_revision(engine)}")
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc


@db.command("current")
def current_command() -> None:
    """Show the schema revision of the database and of this scorebox."""
    from engine.storage.database import create_db_engine, current_revision, head_revision  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    engine = create_db_engine(settings.effective_database_url)
    click.echo(f"database: {current_revision(engine) or 'empty'}; scorebox: {head_revision()}")
