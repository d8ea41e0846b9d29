"""``scorebox tenant ...``: tenants and API keys, straight on the database (operator)."""

from __future__ import annotations

from dataclasses import asdict
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


def _quotas(pairs: tuple[str, ...], clearing: bool = False) -> dict[str, int | None]:
    """``NAME=VALUE`` pairs as overrides; with ``clearing``, ``NAME=default`` clears one."""
    from engine.tenancy.quotas import parse_overrides  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    values: dict[str, str] = {}
    cleared: list[str] = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair!r}: use NAME=VALUE, e.g. rows_per_run=10000")
        if clearing and value.strip().lower() == "default":
            cleared.append(name.strip())
        else:
            values[name.strip()] = value.strip()
    out: dict[str, int | None] = dict(parse_overrides(values))
    parse_overrides({name: 1 for name in cleared})  # an unknown name is refused the same way
    out.update(dict.fromkeys(cleared))
    return out


@click.group()
def tenant() -> None:
    """Tenants and their API keys."""


@tenant.command("create")
@click.argument("name")
@click.option("--quota", "quotas", multiple=True, metavar="NAME=VALUE", help="Quota override.")
def create_command(name: str, quotas: tuple[str, ...]) -> None:
    """Create a tenant and print its first API key (shown once)."""
    from engine.tenancy.auth import create_tenant  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = _store()
        overrides = {k: v for k, v in _quotas(quotas).items() if v is not None}
        new = create_tenant(store, name, overrides)
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
        state = "  disabled" if t.disabled_at else ""
        click.echo(f"{t.id}  {t.name}  ({quotas}){state}")
        for k in store.list_keys(t.id):
            state = "revoked" if k.revoked_at else "active"
            click.echo(f"    {k.id}  {k.prefix}...  {state}  {k.name or ''}")


@tenant.command("create-key")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--name", default=None, help="A label for the key.")
def create_key_command(tenant_ref: str, name: str | None) -> None:
    """Issue another API key for TENANT (name or id); printed once."""
    from engine.tenancy.auth import issue_key  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

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
    evaluations_per_run (rows x checks), ...; NAME=default clears an override, so the
    setting's default applies again (`scorebox tenant show` lists them all)."""
    try:
        store = _store()
        found = store.get_tenant(tenant_ref)
        changed = _quotas(quotas, clearing=True)
        updated = store.set_tenant_quotas(found.id, changed)
        from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        hooks.quotas_changed(_audit(store), "cli", updated, changed)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    values = ", ".join(f"{k}={v}" for k, v in sorted(updated.quotas.items()))
    click.echo(f"{updated.name}: {values or 'default quotas'}")


@tenant.command("show")
@click.argument("tenant_ref", metavar="TENANT")
def show_command(tenant_ref: str) -> None:
    """TENANT's state, keys and effective quotas: each quota's value, marked `override`
    where the tenant's own value replaces the setting's default."""
    from engine.tenancy.quotas import Quotas, effective_quotas  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = _store()
        found = store.get_tenant(tenant_ref)
        keys = store.list_keys(found.id)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    settings = Settings()
    effective = effective_quotas(settings, found.quotas)
    defaults = effective_quotas(settings, {})
    state = (
        "active"
        if found.disabled_at is None
        else f"disabled since {found.disabled_at:%Y-%m-%d %H:%M} UTC"
    )
    click.echo(f"tenant:   {found.name} ({found.id})")
    click.echo(f"state:    {state}")
    click.echo(f"created:  {found.created_at:%Y-%m-%d %H:%M} UTC")
    click.echo("keys:")
    for k in keys:
        key_state = "revoked" if k.revoked_at else "active"
        click.echo(f"  {k.id}  {k.prefix}...  {key_state}  {k.name or ''}".rstrip())
    click.echo("quotas:")
    width = max(len(name) for name in Quotas.names())
    for name in Quotas.names():
        value = getattr(effective, name)
        if name in found.quotas:
            where = f"override (default {getattr(defaults, name)})"
        else:
            setting = f"quota_{name}"
            where = (
                f"default (SCOREBOX_{setting.upper()})"
                if setting in Settings.model_fields
                else "default"
            )
        click.echo(f"  {name:<{width}}  {value:>10}  {where}")


@tenant.command("disable")
@click.argument("tenant_ref", metavar="TENANT")
def disable_command(tenant_ref: str) -> None:
    """Disable TENANT: its keys answer 401 saying so; its data stays (`enable` undoes it).

    Nodes that cached a key see it within SCOREBOX_KEY_CACHE_SECONDS.
    """
    _set_disabled(tenant_ref, True)


@tenant.command("enable")
@click.argument("tenant_ref", metavar="TENANT")
def enable_command(tenant_ref: str) -> None:
    """Enable a disabled TENANT again: its keys that are not revoked work again."""
    _set_disabled(tenant_ref, False)


def _set_disabled(tenant_ref: str, disabled: bool) -> None:
    from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = _store()
        found = store.get_tenant(tenant_ref)
        updated = store.set_tenant_disabled(found.id, disabled)
        if (found.disabled_at is None) == disabled:  # a change: recorded; a repeat is not
            hooks.tenant_disabled(_audit(store), "cli", updated, disabled)
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{updated.name}: {'disabled' if disabled else 'enabled'}")


@tenant.command("delete")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--yes", is_flag=True, help="Do not ask: delete at once.")
def delete_command(tenant_ref: str, yes: bool) -> None:
    """Delete TENANT and all it holds: keys, checks, runs with their rows and results,
    labels. There is no undo but a backup (docs/operating/backup.md); the audit log keeps
    the tenant's events and records the deletion."""
    from engine.audit import hooks  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = _store()
        found = store.get_tenant(tenant_ref)
        held = store.tenant_data(found.id)
        if not yes:
            click.confirm(
                f"delete tenant {found.name} ({found.id}) with {held.describe()}?", abort=True
            )
        removed = store.delete_tenant(found.id)
        hooks.tenant_deleted(_audit(store), "cli", found, asdict(removed))
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"deleted tenant {found.name} ({found.id}): {removed.describe()}")
