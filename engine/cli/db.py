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


@db.command("prune")
@click.option(
    "--older-than",
    "older_than",
    default=None,
    metavar="AGE",
    help="Finished runs that ended longer ago than this: 90d, 36h, 2w "
    "(default: SCOREBOX_RETENTION_DAYS).",
)
@click.option(
    "--spans-older-than",
    "spans_older_than",
    default=None,
    metavar="AGE",
    help="Spans received over OTLP that started longer ago than this, with their content "
    "log records; their scores are kept (default: SCOREBOX_SPAN_RETENTION_DAYS).",
)
@click.option("--tenant", default=None, help="Only this tenant's runs and spans (name or id).")
@click.option("--dry-run", is_flag=True, help="Count what would go; delete nothing.")
def prune_command(
    older_than: str | None, spans_older_than: str | None, tenant: str | None, dry_run: bool
) -> None:
    """Delete finished runs past their retention, with their rows and results, and spans
    past theirs.

    Runs still queued or running are never deleted; span scores are never deleted. Run it
    from cron or a systemd timer on one node (docs/operating/backup.md).
    """
    from datetime import timedelta  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    from engine.storage.database import create_db_engine  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.storage.records import utcnow  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.storage.retention import parse_age, prune_runs  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.storage.span_retention import prune_spans  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    try:
        runs_age = spans_age = None
        if older_than is not None:
            runs_age = parse_age(older_than)
        elif settings.retention_days is not None:
            runs_age = timedelta(days=settings.retention_days)
        if spans_older_than is not None:
            spans_age = parse_age(spans_older_than)
        elif settings.span_retention_days is not None:
            spans_age = timedelta(days=settings.span_retention_days)
        if runs_age is None and spans_age is None:
            raise click.UsageError(
                "how old? pass --older-than (e.g. 90d) or set SCOREBOX_RETENTION_DAYS, and for "
                "spans --spans-older-than or SCOREBOX_SPAN_RETENTION_DAYS"
            )
        engine = create_db_engine(settings.effective_database_url)
        if runs_age is not None:
            report = prune_runs(engine, utcnow() - runs_age, tenant=tenant, dry_run=dry_run)
            click.echo(report.describe())
        if spans_age is not None:
            spans = prune_spans(engine, utcnow() - spans_age, tenant=tenant, dry_run=dry_run)
            click.echo(spans.describe())
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
