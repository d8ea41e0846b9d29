"""What a worker does after a chunk's rows are stored, off the chunk's slot.

Settling the chunk in the ledger, finishing the run (when that was its last
chunk) and a dispatch pass (refilling the tenant's slots) take several queries.
Run on the task's thread, they keep the slot from acknowledging the message,
and Celery fetches the next chunk only after the acknowledgement: with one slot
the sandbox idled for all of it. :class:`AfterChunks` runs them on one thread
of its own, in order, batched: chunks settled meanwhile are settled in turn,
their runs looked at once each, then one dispatch pass covers them all. The chunks
handed over meanwhile (a job's, with those it took along) settle in one statement.

Until it is settled a chunk stays in the worker's hands (its lease renewed); a
worker that dies before settling leaves the lease to expire, and the chunk is
sent again and finds its rows stored, as after any crash.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.distributed.chunks import DONE, ChunkKey
from engine.errors import ScoreboxError

log = logging.getLogger("scorebox.worker")

#: How long to wait before looking again at a run that could not be finished.
RETRY_SECONDS = 1.0


@dataclass(frozen=True)
class Settled:
    """A chunk to settle: its key, the epoch it ran under, its end state and its run."""

    key: ChunkKey
    epoch: int
    state: str
    tenant_id: str
    run_id: str


class AfterChunks:
    """A thread that settles chunks, finishes runs and refills the broker."""

    def __init__(
        self,
        settle: Callable[[Sequence[Settled]], set[ChunkKey]],
        complete: Callable[[str, str], None],
        dispatch: Callable[[set[str]], object],
    ) -> None:
        """``settle(chunks)``: settles them all (a batch, in order), and returns the keys of
        those that were still this worker's;
        ``complete(tenant_id, run_id)``: finish the run if its chunks are all done;
        ``dispatch(tenants)``: one dispatch pass after chunks of ``tenants`` settled."""
        self._settle = settle
        self._complete = complete
        self._dispatch = dispatch
        self._chunks: list[Settled] = []
        self._runs: dict[str, str] = {}  # run id -> tenant id, to look at again
        self._busy = False
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="scorebox-after", daemon=True)
        self._thread.start()

    def add(self, chunk: Settled) -> None:
        """Settle ``chunk``, then finish its run if it was the last, then refill."""
        with self._cond:
            self._chunks.append(chunk)
            self._cond.notify_all()

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until everything handed over so far is done; False on timeout."""
        with self._cond:
            return self._cond.wait_for(self._quiet, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Do what is pending, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _quiet(self) -> bool:
        return not (self._chunks or self._runs or self._busy)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._chunks or self._runs or self._closed)
                if not (self._chunks or self._runs):
                    return  # closed, nothing pending
                chunks, self._chunks = self._chunks, []
                runs, self._runs = self._runs, {}
                self._busy = True
            try:
                self._work(chunks, runs)
            except Exception:  # a bug must not stop the thread: later chunks still settle
                log.exception("after-chunk work failed")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _work(self, chunks: list[Settled], runs: dict[str, str]) -> None:
        tenants: set[str] = set()  # whose slots the settled chunks freed
        settled: set[ChunkKey] = set()
        try:
            if chunks:  # none when only runs are looked at again
                settled = self._settle(chunks)
        except ScoreboxError as exc:  # their leases expire: sent again, their rows found stored
            first = chunks[0].key.as_tuple()
            log.warning("could not settle %d chunks (%s:%d:%d...): %s", len(chunks), *first, exc)
            chunks = []
        for chunk in chunks:
            tenants.add(chunk.tenant_id)
            if chunk.key in settled and chunk.state == DONE:
                runs[chunk.run_id] = chunk.tenant_id
        failed = False
        for run_id, tenant_id in runs.items():
            try:
                self._complete(tenant_id, run_id)
            except ScoreboxError as exc:
                # the database may be restarting: nothing else would finish the run, so it
                # is looked at again in a second (until this worker stops)
                log.warning("run %s: could not finish it after its last chunk: %s", run_id, exc)
                failed = True
                with self._cond:
                    self._runs.setdefault(run_id, tenant_id)
        try:
            self._dispatch(tenants)  # refill their slots now, not at the API node's next tick
        except ScoreboxError as exc:  # the API nodes' loops dispatch anyway
            log.warning("dispatch after chunk failed: %s", exc)
        if failed:
            with self._cond:
                self._cond.wait_for(lambda: self._closed, RETRY_SECONDS)
                if self._closed:
                    self._runs.clear()  # stopping: the run stays active, as a crash leaves it
