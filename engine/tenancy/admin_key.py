"""The operator's admin key (SCOREBOX_ADMIN_KEY) must be hard to guess: the service refuses
to start with a short or repetitive one, naming how to make a good one."""

from __future__ import annotations

from engine.errors import ConfigurationError

#: ``secrets.token_urlsafe(18)`` is 24 characters (144 bits); a tenant key carries 256
MIN_CHARS = 24
#: "aaaaaaaaaaaaaaaaaaaaaaaa" and "abababab..." are long but guessable
MIN_DISTINCT = 8

HOW = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def check_admin_key(secret: str | None) -> None:
    """Raise :class:`ConfigurationError` when ``secret`` is set but too weak (None is fine:
    the admin endpoints are then off)."""
    if secret is None:
        return
    if len(secret) < MIN_CHARS:
        raise ConfigurationError(
            f"SCOREBOX_ADMIN_KEY is too short ({len(secret)} characters, at least {MIN_CHARS}): "
            f"anyone who guesses it manages every tenant. Make one with `{HOW}`"
        )
    if len(set(secret)) < MIN_DISTINCT:
        raise ConfigurationError(
            f"SCOREBOX_ADMIN_KEY repeats too few characters ({len(set(secret))} distinct, at "
            f"least {MIN_DISTINCT}): it is guessable. Make one with `{HOW}`"
        )
