"""Token usage accounting: a thread-safe meter and an :class:`~engine.llm.client.LLMClient` wrapper.

The service wraps its one LLM client once (``MeteredClient(client)``) and, for
each run, scores inside ``with metering(meter):``; every completion made on that
thread (and on the judges' worker threads, which copy the context) is counted
in ``meter``. A meter can also be passed to the wrapper directly for a
process-wide total.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from engine.llm.client import Completion, LLMClient, WrappedClient


@dataclass(frozen=True)
class UsageSnapshot:
    """Counts at one moment; ``as_dict()`` is what a run stores."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Tokens actually paid for (cache hits excluded)."""
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        """JSON-ready counts, including ``total_tokens``."""
        return {**asdict(self), "total_tokens": self.total_tokens}


class UsageMeter:
    """Counts LLM calls and tokens; cache hits are counted apart (they cost nothing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = UsageSnapshot()

    def record(self, completion: Completion) -> None:
        """Count one completion."""
        usage = completion.usage
        with self._lock:
            c = self._counts
            if completion.cached:
                self._counts = UsageSnapshot(
                    c.calls,
                    c.cached_calls + 1,
                    c.prompt_tokens,
                    c.completion_tokens,
                    c.cached_prompt_tokens + usage.prompt_tokens,
                    c.cached_completion_tokens + usage.completion_tokens,
                )
            else:
                self._counts = UsageSnapshot(
                    c.calls + 1,
                    c.cached_calls,
                    c.prompt_tokens + usage.prompt_tokens,
                    c.completion_tokens + usage.completion_tokens,
                    c.cached_prompt_tokens,
                    c.cached_completion_tokens,
                )

    def snapshot(self) -> UsageSnapshot:
        """The counts so far."""
        with self._lock:
            return self._counts


_CURRENT: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar(
    "scorebox_usage_meter", default=None
)


@contextmanager
def metering(meter: UsageMeter) -> Iterator[UsageMeter]:
    """Count the completions made by :class:`MeteredClient` in this context into ``meter``."""
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


def current_meter() -> UsageMeter | None:
    """The meter of the enclosing :func:`metering` block, if any."""
    return _CURRENT.get()


class MeteredClient(WrappedClient):
    """An :class:`LLMClient` that counts every completion of ``inner``."""

    def __init__(self, inner: LLMClient, meter: UsageMeter | None = None) -> None:
        super().__init__(inner)
        self.meter = meter

    def around(self, call: Callable[[], Completion]) -> Completion:
        completion = call()
        for meter in {id(m): m for m in (self.meter, current_meter()) if m is not None}.values():
            meter.record(completion)
        return completion
