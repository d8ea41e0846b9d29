"""Rules and their versions, in SQL. Every query filters on the tenant.

A rule's content (pinned checks, filter, sample rate, budget) lives in its versions; a
change makes version N+1 and the rule points at it. Scores name the version that made
them, so a changed rule starts new series and old scores keep their meaning.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, delete, select
from sqlalchemy.exc import IntegrityError

from engine.errors import ConflictError, NotFoundError
from engine.storage.database import SqlSessions, once_per_engine, one_or_404
from engine.storage.records import aware, new_id, utcnow
from engine.storage.rule_records import Rule, RuleVersion
from engine.storage.rule_tables import RuleRow, RuleVersionRow

__all__ = ["UNSET", "RuleStore", "rule_store"]

#: How long the enabled rules of a tenant are reused by ingestion before a fresh read.
ENABLED_CACHE_SECONDS = 2.0


class _Unset:
    pass


UNSET: Any = _Unset()


def _version(r: RuleVersionRow) -> RuleVersion:
    return RuleVersion(
        id=r.id,
        rule_id=r.rule_id,
        version=r.version,
        checks=list(r.checks),
        filter=dict(r.filter),
        sample_rate=float(r.sample_rate),
        daily_token_budget=r.daily_token_budget,
        created_at=aware(r.created_at) or r.created_at,
    )


def _rule(r: RuleRow, v: RuleVersionRow) -> Rule:
    return Rule(
        id=r.id,
        tenant_id=r.tenant_id,
        name=r.name,
        enabled=r.enabled,
        current=_version(v),
        created_at=aware(r.created_at) or r.created_at,
        updated_at=aware(r.updated_at) or r.updated_at,
    )


def _missing(name: str) -> str:
    return f"no rule {name!r}: GET /v1/rules lists this tenant's rules"


class RuleStore(SqlSessions):
    """A tenant's rules and their versions."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._enabled: dict[str, tuple[float, list[Rule]]] = {}

    def create_rule(
        self,
        tenant_id: str,
        name: str,
        *,
        enabled: bool,
        checks: Sequence[dict[str, Any]],
        filter: dict[str, Any],
        sample_rate: float,
        daily_token_budget: int | None,
    ) -> Rule:
        """A new rule at version 1; a 409 when the tenant has a rule of that name."""
        now = utcnow()
        rule = RuleRow(
            id=new_id("rule"),
            tenant_id=tenant_id,
            name=name,
            enabled=enabled,
            version=1,
            created_at=now,
            updated_at=now,
        )
        version = RuleVersionRow(
            id=new_id("rulev"),
            tenant_id=tenant_id,
            rule_id=rule.id,
            version=1,
            checks=list(checks),
            filter=filter,
            sample_rate=sample_rate,
            daily_token_budget=daily_token_budget,
            created_at=now,
        )
        try:
            with self._session() as s:
                s.add(rule)
                s.flush()
                s.add(version)
        except IntegrityError:
            raise ConflictError(
                f"rule {name!r} exists: change it with PATCH /v1/rules/{name}, or pick another name"
            ) from None
        self._enabled.pop(tenant_id, None)
        return _rule(rule, version)

    def _load(self, s: Any, tenant_id: str, name: str) -> tuple[RuleRow, RuleVersionRow]:
        rule = one_or_404(
            s,
            select(RuleRow).where(RuleRow.tenant_id == tenant_id, RuleRow.name == name),
            _missing(name),
        )
        version = s.scalar(
            select(RuleVersionRow).where(
                RuleVersionRow.rule_id == rule.id, RuleVersionRow.version == rule.version
            )
        )
        if version is None:  # written with its rule in one transaction: never seen
            raise NotFoundError(_missing(name))
        return rule, version

    def get_rule(self, tenant_id: str, name: str) -> Rule:
        """The tenant's rule ``name`` (404 otherwise)."""
        with self._session() as s:
            return _rule(*self._load(s, tenant_id, name))

    def list_rules(self, tenant_id: str) -> list[Rule]:
        """The tenant's rules by name."""
        with self._session() as s:
            rows = s.execute(
                select(RuleRow, RuleVersionRow)
                .join(
                    RuleVersionRow,
                    (RuleVersionRow.rule_id == RuleRow.id)
                    & (RuleVersionRow.version == RuleRow.version),
                )
                .where(RuleRow.tenant_id == tenant_id)
                .order_by(RuleRow.name)
            ).all()
            return [_rule(r, v) for r, v in rows]

    def enabled_rules(self, tenant_id: str) -> list[Rule]:
        """The tenant's enabled rules, reused for a couple of seconds (ingestion asks often)."""
        cached = self._enabled.get(tenant_id)
        if cached is not None and time.monotonic() - cached[0] < ENABLED_CACHE_SECONDS:
            return cached[1]
        rules = [r for r in self.list_rules(tenant_id) if r.enabled]
        self._enabled[tenant_id] = (time.monotonic(), rules)
        return rules

    def get_version(self, tenant_id: str, version_id: str) -> tuple[Rule, RuleVersion]:
        """A rule version by id, with its rule (404 when gone)."""
        with self._session() as s:
            version = one_or_404(
                s,
                select(RuleVersionRow).where(
                    RuleVersionRow.tenant_id == tenant_id, RuleVersionRow.id == version_id
                ),
                f"no rule version {version_id!r}",
            )
            rule = s.get(RuleRow, version.rule_id)
            if rule is None:
                raise NotFoundError(f"no rule version {version_id!r}")
            _, current = self._load(s, tenant_id, rule.name)
            return _rule(rule, current), _version(version)

    def list_versions(self, tenant_id: str, name: str) -> list[RuleVersion]:
        """Every version of a rule, oldest first."""
        with self._session() as s:
            rule, _ = self._load(s, tenant_id, name)
            rows = s.scalars(
                select(RuleVersionRow)
                .where(RuleVersionRow.rule_id == rule.id)
                .order_by(RuleVersionRow.version)
            )
            return [_version(r) for r in rows]

    def update_rule(
        self,
        tenant_id: str,
        name: str,
        *,
        enabled: bool | None = None,
        checks: Sequence[dict[str, Any]] | None = None,
        filter: dict[str, Any] | None = None,
        sample_rate: float | None = None,
        daily_token_budget: int | _Unset | None = UNSET,
    ) -> Rule:
        """Change a rule. A change of its content makes a new version; ``enabled`` alone
        does not."""
        now = utcnow()
        with self._session() as s:
            rule, version = self._load(s, tenant_id, name)
            content = {
                "checks": list(checks) if checks is not None else version.checks,
                "filter": filter if filter is not None else version.filter,
                "sample_rate": sample_rate if sample_rate is not None else version.sample_rate,
                "daily_token_budget": (
                    version.daily_token_budget
                    if isinstance(daily_token_budget, _Unset)
                    else daily_token_budget
                ),
            }
            old = {
                "checks": version.checks,
                "filter": version.filter,
                "sample_rate": version.sample_rate,
                "daily_token_budget": version.daily_token_budget,
            }
            if content != old:
                version = RuleVersionRow(
                    id=new_id("rulev"),
                    tenant_id=tenant_id,
                    rule_id=rule.id,
                    version=rule.version + 1,
                    created_at=now,
                    **content,
                )
                s.add(version)
                rule.version = version.version
            if enabled is not None:
                rule.enabled = enabled
            rule.updated_at = now
            s.flush()
            out = _rule(rule, version)
        self._enabled.pop(tenant_id, None)
        return out

    def delete_rule(self, tenant_id: str, name: str) -> None:
        """Delete a rule with its versions and scores (404 when there is none)."""
        with self._session() as s:
            rule, _ = self._load(s, tenant_id, name)
            # the scores and runs go with it (ON DELETE CASCADE; SQLite needs the pragma,
            # which the engine sets)
            s.execute(delete(RuleRow).where(RuleRow.id == rule.id))
        self._enabled.pop(tenant_id, None)


#: The rule store on ``engine``, made once per engine.
rule_store = once_per_engine(RuleStore)
