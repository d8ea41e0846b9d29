"""The persistent LLM response cache on the ``llm_cache`` table.

:class:`SqlResponseCache` implements :class:`engine.llm.client.ResponseCache`: keys are
:func:`engine.llm.cache_key` (sha256 of canonical JSON of model, messages and
parameters), so re-running a run costs no LLM calls. A database hiccup never
fails a judgement: a failed read is a miss and a failed write is dropped, both
logged.

The service shares one LLM client between tenants, so its cache is a
:class:`TenantResponseCache`: each entry belongs to the tenant whose work made
it (``with cache_scope(tenant_id):`` around a run's chunk, a ``/v1/score`` batch,
or a route's LLM calls; :func:`scoped_llm` does it for a route). With no scope
set the cache is bypassed, so nothing is ever shared by omission. One tenant
never learns from a cache hit whether another has judged the same text.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from engine.llm.client import Completion, LLMClient, ResponseCache, Usage, WrappedClient
from engine.logs import Repeated
from engine.storage.database import session_factory
from engine.storage.tables import LLMCacheRow

log = logging.getLogger(__name__)
#: the database away fails every cached call alike: one warning per interval each way
_reads = Repeated(log, "LLM cache read (treated as a miss)")
_writes = Repeated(log, "LLM cache write (reply not cached)")


def _to_json(completion: Completion) -> dict[str, object]:
    return {
        "text": completion.text,
        "model": completion.model,
        "finish_reason": completion.finish_reason,
        "usage": {
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
        },
    }


def _from_json(data: dict[str, object]) -> Completion | None:
    text, model = data.get("text"), data.get("model")
    if not isinstance(text, str) or not isinstance(model, str):
        return None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    finish = data.get("finish_reason")
    return Completion(
        text=text,
        model=model,
        usage=Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        ),
        finish_reason=finish if isinstance(finish, str) else None,
    )


class SqlResponseCache:
    """:class:`~engine.llm.client.ResponseCache` stored in the database (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = session_factory(engine)

    def get(self, key: str) -> Completion | None:
        try:
            with self._sessions() as session:
                data = session.scalar(select(LLMCacheRow.response).where(LLMCacheRow.key == key))
        except SQLAlchemyError as exc:
            _reads.failed(exc)
            return None
        return _from_json(data) if isinstance(data, dict) else None

    def put(self, key: str, completion: Completion) -> None:
        row = LLMCacheRow(
            key=key,
            model=completion.model[:200],
            request={"model": completion.model},
            response=_to_json(completion),
            created_at=datetime.now(UTC),
        )
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError:
            pass  # another worker stored the same reply first
        except SQLAlchemyError as exc:
            _writes.failed(exc)


_SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "scorebox_llm_cache_scope", default=None
)


@contextmanager
def cache_scope(scope: str | None) -> Iterator[None]:
    """LLM replies cached in this context belong to ``scope`` (a tenant id) alone."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


class TenantResponseCache:
    """Keys every entry by the current :func:`cache_scope`; without one, a pass-through miss."""

    def __init__(self, inner: ResponseCache) -> None:
        self._inner = inner

    @staticmethod
    def _key(key: str) -> str | None:
        scope = _SCOPE.get()
        if not scope:
            return None
        return hashlib.sha256(f"{scope}\x00{key}".encode()).hexdigest()

    def get(self, key: str) -> Completion | None:
        scoped = self._key(key)
        return None if scoped is None else self._inner.get(scoped)

    def put(self, key: str, completion: Completion) -> None:
        scoped = self._key(key)
        if scoped is not None:
            self._inner.put(scoped, completion)


class _ScopedClient(WrappedClient):
    """An :class:`LLMClient` whose calls run inside ``cache_scope(scope)``."""

    def __init__(self, inner: LLMClient, scope: str) -> None:
        super().__init__(inner)
        self.scope = scope

    def around(self, call: Callable[[], Completion]) -> Completion:
        with cache_scope(self.scope):
            return call()


def scoped_llm(llm: LLMClient, tenant_id: str) -> LLMClient:
    """``llm`` with its cache entries scoped to ``tenant_id`` (for routes that call it)."""
    return _ScopedClient(llm, tenant_id)
