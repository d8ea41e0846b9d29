"""``scorebox tenant ...``: tenants and API keys, straight on the database (operator)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engine.errors import ScoreboxError
from engine.settings import Settings

if TYPE_CHECKING:
    from engine.audit.store import AuditLog
    from engine.storage import SqlStore


def _audit(store: SqlStore) -> AuditLog:
    from engine.audit.store import AuditLog  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    return AuditLog(store.engine)


def _store() -> SqlStore:
    from engine.storage import open_store  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    return open_store(Settings().effective_database_url)


def _quotas(pairs: tuple[str, ...]) -> dict[str, int]:
    from engine.runs.quotas import parse_overrides  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair!r}: use NAME=VALUE, e.g. rows_per_run=10000")
        values[name.strip()] = value.strip()
    return parse_overrides(values)


@click.group()
def tenant() -> None:
    """Tenants and their API keys."""


@tenant.command("create")
@click.argument("name")
@click.option("--quota", "quotas", multiple=True, metavar="NAME=VALUE", help="Quota override.")
def create_command(name: str, quotas: tuple[str, ...]) -> None:
    """Create a tenant and print its first API key (shown once)."""
    from engine.auth import create_tenant  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = _store()
        new = create_tenant(store, name, _quotas(quotas))
        from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        hooks.tenant_created(_audit(store), "cli", new)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"tenant {new.tenant.name} ({new.tenant.id})", err=True)
    click.echo("API key (shown once, store it now):", err=True)
    click.echo(new.secret)


@tenant.command("list")
def list_command() -> None:
    """List tenants with their keys (prefixes only)."""
    store = _store()
    for t in store.list_tenants():
        quotas = ", ".join(f"{k}={v}" for k, v in sorted(t.quotas.items())) or "default quotas"
        click.echo(f"{t.id}  {t.name}  ({quotas})")
        for k in store.list_keys(t.id):
            state = "revoked" if k.revoked_at else "active"
            click.echo(f"    {k.id}  {k.prefix}...  {state}  {k.name or ''}")


@tenant.command("create-key")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--name", default=None, help="A label for the key.")
def create_key_command(tenant_ref: str, name: str | None) -> None:
    """Issue another API key for TENANT (name or id); printed once."""
    from engine.auth import issue_key  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = _store()
        new = issue_key(store, tenant_ref, name)
        from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        hooks.key_created(_audit(store), "cli", new)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"key {new.key.id} for {new.tenant.name} (shown once):", err=True)
    click.echo(new.secret)


@tenant.command("revoke-key")
@click.argument("key")
def revoke_key_command(key: str) -> None:
    """Revoke a key by id (key_...) or visible prefix (sbx_...)."""
    try:
        store = _store()
        revoked = store.revoke_key(key)
        from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        hooks.key_revoked(_audit(store), "cli", revoked)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"revoked {revoked.id} ({revoked.prefix}...)")


@tenant.command("set-quota")
@click.argument("tenant_ref", metavar="TENANT")
@click.argument("quotas", nargs=-1, required=True, metavar="NAME=VALUE...")
def set_quota_command(tenant_ref: str, quotas: tuple[str, ...]) -> None:
    """Override quotas of TENANT: concurrent_jobs, rows_per_run, source_bytes, queued_runs,
    evaluations_per_run (rows x checks)."""
    try:
        store = _store()
        found = store.get_tenant(tenant_ref)
        changed = _quotas(quotas)
        updated = store.set_tenant_quotas(found.id, changed)
        from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        hooks.quotas_changed(_audit(store), "cli", updated, changed)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    values = ", ".join(f"{k}={v}" for k, v in sorted(updated.quotas.items()))
    click.echo(f"{updated.name}: {values}")
