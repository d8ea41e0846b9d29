"""``scorebox audit``: the operator reads every tenant's audit log, straight on the database."""

from __future__ import annotations

import json

import click

from engine.audit.records import valid_action
from engine.errors import ScoreboxError
from engine.settings import Settings


@click.command("audit")
@click.option("--tenant", "tenant_ref", default=None, help="Only this tenant (name or id).")
@click.option("--action", default=None, help="Only this action, e.g. key.revoked.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
def audit(
    tenant_ref: str | None, action: str | None, offset: int, limit: int, as_json: bool
) -> None:
    """Show the audit log: who changed what and when, oldest first."""
    from engine.audit.store import AuditLog  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.storage import open_store  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        store = open_store(Settings().effective_database_url)
        tenant_id = store.get_tenant(tenant_ref).id if tenant_ref else None
        records = AuditLog(store.engine).page(tenant_id, offset, limit, valid_action(action))
    except ScoreboxError as exc:
        raise click.ClickException(str(exc)) from exc
    for r in records:
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "seq": r.seq,
                        "at": r.at.isoformat(),
                        "tenant_id": r.tenant_id,
                        "action": r.action,
                        "actor": {"kind": r.actor_kind, "key_id": r.actor_key_id, "via": r.via},
                        "target": r.target,
                        "detail": r.detail,
                    }
                )
            )
            continue
        who = f"key {r.actor_key_id}" if r.actor_key_id else r.actor_kind
        click.echo(
            f"{r.seq}  {r.at.isoformat(timespec='seconds')}  {r.tenant_id or '-'}  "
            f"{r.action}  {r.target}  by {who} via {r.via}  {json.dumps(r.detail)}"
        )
