"""The gateway's token ledger: a run's quota is reserved before a call and settled after.

A call reserves its prompt's estimate plus the completion it may get (its ``max_tokens``,
clamped to what is left of the quota; a call that sets none gets at most
:data:`DEFAULT_MAX_TOKENS`) before it goes upstream, so calls in flight at once cannot
together pass the quota; once the model answered, the reservation is replaced by what the
upstream counted (nothing for a cached reply). A call finding nothing left is refused.

The prompt's estimate is one token per :data:`BYTES_PER_TOKEN` bytes of its text plus a
few per message: above what tokenizers count for text in most languages, so the
reservation covers the prompt; an estimate that falls short is corrected at settlement.

:class:`TokenLedger` keeps a process's runs in memory; in distributed mode the workers
share one ledger in Redis (:mod:`engine.gateway.shared_ledger`), so a run's quota is one
quota however many workers score it. Both decide with :func:`decide`.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

#: Runs whose spend is remembered in this process (oldest forgotten first).
MAX_LEDGER_RUNS = 4096
#: The completion a call that sets no ``max_tokens`` may get (less when less is left).
DEFAULT_MAX_TOKENS = 4096
#: The prompt's estimate: one token per this many bytes of UTF-8 text ...
BYTES_PER_TOKEN = 3
#: ... plus this many per message (its role and framing), plus this many per request.
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REQUEST = 3


def estimate_prompt_tokens(messages: Iterable[Mapping[str, str]]) -> int:
    """An upper estimate of the tokens ``messages`` cost as a prompt."""
    total = TOKENS_PER_REQUEST
    for message in messages:
        size = sum(len(str(value).encode()) for value in message.values())
        total += TOKENS_PER_MESSAGE + math.ceil(size / BYTES_PER_TOKEN)
    return total


@dataclass(frozen=True)
class Reservation:
    """Tokens held for one call until it is settled."""

    run: str
    tokens: int
    #: The completion bound the call goes upstream with.
    max_tokens: int


@dataclass(frozen=True)
class Refusal:
    """Why a call got no reservation (the run's quota has no room for it)."""

    message: str
    #: The HTTP status the check's client gets (503: the ledger could not be asked).
    status: int = 403


class Ledger(Protocol):
    """Where a process's gateway keeps per-run spend and reservations."""

    def spent(self, run: str) -> int: ...

    def held(self, run: str) -> int: ...

    def reserve(
        self, run: str, quota: int, prompt_tokens: int, max_tokens: int | None
    ) -> Reservation | Refusal: ...

    def settle(self, reservation: Reservation, used: int) -> None: ...


def decide(
    run: str, quota: int, spent: int, held: int, prompt_tokens: int, max_tokens: int | None
) -> Reservation | Refusal:
    """The reservation for a call of ``run`` given what it has ``spent`` and ``held``:
    ``prompt_tokens`` plus ``max_tokens`` clamped to what is left (:data:`DEFAULT_MAX_TOKENS`
    when None), or a refusal when the quota has no room for the prompt and one more token."""
    used = spent + held
    left = quota - used
    if left <= 0:
        return Refusal(
            f"this run has spent its quota llm_tokens_per_run of {quota} model tokens "
            f"({spent} used, {held} held by calls in flight): an operator "
            "raises it with `scorebox tenant set-quota TENANT llm_tokens_per_run=N`"
        )
    room = left - prompt_tokens
    if room < 1:
        return Refusal(
            f"this request's prompt (about {prompt_tokens} tokens) is over what is left "
            f"of this run's quota llm_tokens_per_run of {quota} model tokens ({left} "
            "left): send a shorter prompt, or an operator raises the quota with "
            "`scorebox tenant set-quota TENANT llm_tokens_per_run=N`"
        )
    wanted = DEFAULT_MAX_TOKENS if max_tokens is None else max(1, max_tokens)
    bound = min(wanted, room)
    return Reservation(run, prompt_tokens + bound, bound)


class TokenLedger:
    """Per-run spend and reservations of one process."""

    def __init__(self, max_runs: int = MAX_LEDGER_RUNS) -> None:
        self.max_runs = max_runs
        self._spent: OrderedDict[str, int] = OrderedDict()
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def spent(self, run: str) -> int:
        """Tokens ``run`` has spent, settled calls only."""
        with self._lock:
            return self._spent.get(run, 0)

    def held(self, run: str) -> int:
        """Tokens reserved by ``run``'s calls in flight."""
        with self._lock:
            return self._held.get(run, 0)

    def reserve(
        self, run: str, quota: int, prompt_tokens: int, max_tokens: int | None
    ) -> Reservation | Refusal:
        """Hold ``prompt_tokens`` plus the completion bound (``max_tokens`` clamped to what
        is left), or refuse when the quota has no room for the prompt and one more token."""
        with self._lock:
            spent = self._spent.get(run, 0)
            held = self._held.get(run, 0)
            decision = decide(run, quota, spent, held, prompt_tokens, max_tokens)
            if isinstance(decision, Reservation):
                self._held[run] = held + decision.tokens
                self._touch(run)
            return decision

    def settle(self, reservation: Reservation, used: int) -> None:
        """Replace ``reservation`` by the ``used`` tokens the upstream counted."""
        with self._lock:
            run = reservation.run
            held = self._held.get(run, 0) - reservation.tokens
            if held > 0:
                self._held[run] = held
            else:
                self._held.pop(run, None)
            self._spent[run] = self._spent.get(run, 0) + max(0, used)
            self._touch(run)

    def _touch(self, run: str) -> None:
        self._spent.setdefault(run, 0)
        self._spent.move_to_end(run)
        while len(self._spent) > self.max_runs:
            old, _ = self._spent.popitem(last=False)
            self._held.pop(old, None)
