"""The persistent LLM response cache on the ``llm_cache`` table.

:class:`SqlResponseCache` implements :class:`engine.llm.ResponseCache`: keys are
:func:`engine.llm.cache_key` (sha256 of canonical JSON of model, messages and
parameters), so re-running a run costs no LLM calls. A database hiccup never
fails a judgement: a failed read is a miss and a failed write is dropped, both
logged. :class:`ScopedResponseCache` keeps tenants' entries apart.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from engine.llm import Completion, ResponseCache, Usage
from engine.storage.database import session_factory
from engine.storage.tables import LLMCacheRow

log = logging.getLogger(__name__)


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
    """:class:`~engine.llm.ResponseCache` stored in the database (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = session_factory(engine)

    def get(self, key: str) -> Completion | None:
        try:
            with self._sessions() as session:
                data = session.scalar(select(LLMCacheRow.response).where(LLMCacheRow.key == key))
        except SQLAlchemyError as exc:
            log.warning("LLM cache read failed (treated as a miss): %s", exc)
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
            log.warning("LLM cache write failed (reply not cached): %s", exc)


class ScopedResponseCache:
    """Prefixes every key with a scope (e.g. a tenant id) so scopes never share entries."""

    def __init__(self, inner: ResponseCache, scope: str) -> None:
        self._inner = inner
        self._scope = scope

    def _key(self, key: str) -> str:
        return hashlib.sha256(f"{self._scope}\x00{key}".encode()).hexdigest()

    def get(self, key: str) -> Completion | None:
        return self._inner.get(self._key(key))

    def put(self, key: str, completion: Completion) -> None:
        self._inner.put(self._key(key), completion)
