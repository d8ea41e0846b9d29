"""API keys: made random, shown once, stored as a sha256 hash with a short visible prefix."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from engine import logs
from engine.errors import AuthError, ForbiddenError
from engine.storage import ApiKey, Tenant, TenantStore
from engine.storage.cached import CachedStore

KEY_PREFIX = "sbx_"
#: Characters of the key shown in listings (``sbx_`` plus a few of the secret).
VISIBLE_CHARS = 12


@dataclass(frozen=True)
class NewKey:
    """A key just made: ``secret`` is shown to the operator once and never stored."""

    secret: str
    key: ApiKey
    tenant: Tenant


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant and the key it used."""

    tenant: Tenant
    key_id: str | None

    @property
    def tenant_id(self) -> str:
        return self.tenant.id


def hash_key(secret: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(secret.encode()).hexdigest()


def generate_key() -> tuple[str, str, str]:
    """A new key: (secret, visible prefix, hash)."""
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    return secret, secret[:VISIBLE_CHARS], hash_key(secret)


def issue_key(store: TenantStore, tenant_id: str, name: str | None = None) -> NewKey:
    """Make a key for the tenant and store its hash."""
    tenant = store.get_tenant(tenant_id)
    secret, prefix, digest = generate_key()
    key = store.add_key(tenant.id, prefix, digest, name)
    return NewKey(secret, key, tenant)


def create_tenant(store: TenantStore, name: str, quotas: dict[str, int] | None = None) -> NewKey:
    """Create a tenant with its first key."""
    tenant = store.create_tenant(name, quotas)
    return issue_key(store, tenant.id, "initial")


def _bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise AuthError("missing API key: send `Authorization: Bearer <key>`")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthError("malformed Authorization header: use `Authorization: Bearer <key>`")
    return token


def authenticate(store: TenantStore, authorization: str | None) -> Principal:
    """The caller behind an ``Authorization: Bearer <key>`` header, or :class:`AuthError`."""
    found = store.find_key(hash_key(_bearer_token(authorization)))
    if found is None:
        raise AuthError("unknown API key: ask an operator for one (`scorebox tenant create-key`)")
    return _principal(*found)


def authenticate_cached(store: CachedStore, authorization: str | None) -> Principal | None:
    """:func:`authenticate` from the store's key cache alone (no database read, so it may run
    on the event loop); None when the key is not cached. A malformed header, or a cached
    revoked key, raises :class:`AuthError` as :func:`authenticate` would."""
    found = store.cached_key(hash_key(_bearer_token(authorization)))
    return None if found is None else _principal(*found)


def _principal(key: ApiKey, tenant: Tenant) -> Principal:
    if key.revoked_at is not None:
        raise AuthError(f"API key {key.prefix}... was revoked: ask an operator for a new one")
    if tenant.disabled_at is not None:
        raise AuthError(
            f"tenant {tenant.name} is disabled: its keys work again once an operator runs "
            f"`scorebox tenant enable {tenant.name}`"
        )
    logs.annotate(tenant=tenant.id)  # the request's log lines name the tenant from here on
    return Principal(tenant, key.id)


def is_admin(expected: str | None, authorization: str | None) -> bool:
    """Whether the header carries the operator's admin key (constant-time comparison)."""
    if not expected or not authorization:
        return False
    scheme, _, token = authorization.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip(), expected)


def authorize_admin(expected: str | None, authorization: str | None) -> None:
    """Return if the ``Authorization`` header carries the operator's admin key; else
    :class:`AuthError` (no bearer key) or :class:`ForbiddenError` (admin endpoints off,
    or another key)."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("missing admin key: send `Authorization: Bearer <SCOREBOX_ADMIN_KEY>`")
    if expected is None:
        raise ForbiddenError("admin endpoints are off: set SCOREBOX_ADMIN_KEY to turn them on")
    if not is_admin(expected, authorization):
        raise ForbiddenError("this key is not the admin key")
