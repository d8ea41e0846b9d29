"""Result blocks: the child's columns in memory it shares with the parent.

:class:`Block` is both sides' view of the memory (the child writes a row's columns, then
bumps the counter); :class:`BlockWatch` is the parent's reading of it, which sends the
finished rows to the host as block records.
"""

from __future__ import annotations

import base64
import json
import math
import mmap
from typing import Any, Protocol

from engine import contract
from engine.harness.channel import MAX_RECORD_BYTES, Channel, Reader, encode_json

#: A status's byte in a result block, and a score type's (engine/contract/statuses.py).
STATUS_CODE = {status.value: code for code, status in enumerate(contract.CHECK_STATUSES)}
KIND_CODE = {
    (kind.value if kind is not None else None): code
    for code, kind in enumerate(contract.SCORE_KINDS)
}
#: A score type's byte, by the type itself (None: no score).
KIND_OF = {kind: code for code, kind in enumerate(contract.SCORE_KINDS)}
#: What of a row record travels beside its block's columns, when present.
EXTRA_KEYS = ("error", "explanation", "output", "passed", "metadata")
#: Ints beyond this travel exactly in the row's extras (a block's score column is float64).
EXACT_FLOAT_INT = 2**53
#: In block mode, how often the parent looks at the child's progress counter, and how long
#: finished rows may wait there before they travel to the host as one block.
POLL_SECONDS = 0.005
BLOCK_FLUSH_SECONDS = 0.005


class JobSide(Protocol):
    """What a :class:`BlockWatch` needs of the job it watches for (the supervisor's JobRun)."""

    job: dict[str, Any]
    channel: Channel
    pos: int

    def on_loaded(self, raw: bytes) -> bool:
        """Handle the child's load record; False when the check failed to load."""
        ...


def block_bytes(rows: int) -> int:
    """The shared memory a block of ``rows`` rows takes."""
    return 8 + 18 * max(rows, 1)


class Block:
    """A child's results as columns in memory it shares with the parent (block mode).

    The child writes each row's status code, score kind, score and duration into the
    columns, then bumps the progress counter; a row with more to say (an error, an
    explanation, what it printed, a pass flag, metadata, an int too large for a float)
    first writes those extras to its pipe as one JSON line. The parent never parses the
    common row: it reads the counter (its per-row watchdog), and sends the finished rows'
    columns to the host as one block. The child can write anything here (the check runs
    in it), so the host checks every code and score (engine/sandbox/blocks.py); the parent
    only refuses a counter that goes back or past the end.
    """

    def __init__(self, rows: int, memory: mmap.mmap | None = None) -> None:
        self.rows = rows
        # Layout: counter (8 bytes), scores (8n), ms (8n), codes (n), kinds (n).
        if memory is None:
            memory = mmap.mmap(-1, block_bytes(rows))  # MAP_SHARED: survives fork
        elif len(memory) < block_bytes(rows):
            raise ValueError(f"{len(memory)} bytes cannot hold a block of {rows} rows")
        #: Made here, or (a child forked ahead of its job) mapped before the fork, larger.
        self.memory = memory
        view = memoryview(self.memory)
        self.counter = view[0:8].cast("Q")
        self.scores = view[8 : 8 + 8 * rows].cast("d")
        self.ms = view[8 + 8 * rows : 8 + 16 * rows].cast("d")
        self.codes = view[8 + 16 * rows : 8 + 17 * rows]
        self.kinds = view[8 + 17 * rows : 8 + 18 * rows]

    def count(self) -> int:
        """The progress counter: rows whose columns are written."""
        return int(self.counter[0])

    def put(self, k: int, record: dict[str, Any], emit: Any) -> None:
        """Row ``k``'s ``row`` record into the columns; its extras to ``emit``."""
        extras = {key: record[key] for key in EXTRA_KEYS if key in record}
        score = record.get("score")
        kind = KIND_CODE[record.get("output_type")] if score is not None else 0
        value = math.nan
        if score is not None:
            value = float(score)
            if kind == KIND_CODE[contract.OutputType.INT.value] and abs(score) > EXACT_FLOAT_INT:
                extras["score"] = score  # exact, beside the column's approximation
        if extras:
            extras["t"] = "x"
            extras["i"] = k
            emit(extras)
        self.write(k, STATUS_CODE[record["status"]], kind, value, float(record["ms"]))

    def write(self, k: int, code: int, kind: int, score: float, ms: float) -> None:
        """Row ``k``'s columns (its extras already sent), then the counter past it."""
        self.codes[k] = code
        self.kinds[k] = kind
        self.scores[k] = score
        self.ms[k] = ms
        self.counter[0] = k + 1  # last: the parent may send this row from now on

    def frame(self, first: int, start: int, stop: int, extras: list[Any]) -> dict[str, Any]:
        """The block record for rows ``start:stop`` (the job's row ``first + start`` on)."""

        def encode(view: memoryview[Any]) -> str:
            return base64.b64encode(view).decode()

        return {
            "t": "block",
            "i": first + start,
            "n": stop - start,
            "codes": encode(self.codes[start:stop]),
            "kinds": encode(self.kinds[start:stop]),
            "scores": encode(self.scores[start:stop]),
            "ms": encode(self.ms[start:stop]),
            "extras": extras,
        }

    def close(self) -> None:
        """Release the views and unmap the memory."""
        for view in (self.counter, self.scores, self.ms, self.codes, self.kinds):
            view.release()
        self.memory.close()


class BlockWatch:
    """What the parent knows of a block-mode child: its progress, its extras, what was sent."""

    def __init__(self, run: JobSide, block: Block, reader: Reader) -> None:
        self.run = run
        self.block = block
        self.reader = reader
        self.first = run.pos  # the job's index of the block's row 0
        self.sent = 0  # rows already sent to the host
        self.seen = 0  # the progress counter, as last read
        self.extras: dict[int, dict[str, Any]] = {}
        #: Bytes of whole lines taken from the child's pipe so far.
        self.consumed = 0
        #: (where a line still partial starts, the first row counted while it was): rows from
        #: there on stay unsent until that line is whole and good. A check may write part of
        #: a line, finish its row and write the rest later; when the line turns out
        #: malformed, the rows run again one per child from that row, never from a later one.
        self.held: tuple[int, int] | None = None
        self.loaded = False
        self.failed_load = False
        self.ended = False
        limit = int(run.job.get("max_block_bytes") or MAX_RECORD_BYTES)
        self.budget = max(limit, 1024) - 512  # the record's frame and keys
        #: 18 bytes a row in base64 (24 characters)
        self.rows_per_block = self.budget // 24

    def take(self) -> bool:
        """Read the counter, then every line the child wrote before it (its rows' extras come
        before their count); whether rows finished since the last call. ValueError: the
        child broke the block protocol."""
        count = self.block.count()
        drained = self.drain()
        while (raw := self.reader.line()) is not None:
            self.consumed += len(raw) + 1
            if len(raw) > MAX_RECORD_BYTES:
                raise ValueError(f"a result record of {len(raw)} bytes")
            if self.loaded:
                count = self.read_record(raw, count)
            elif not self.read_loaded(raw):
                return False
        if count < self.seen or count > self.block.rows:
            raise ValueError(f"progress {count} after {self.seen}, of {self.block.rows} rows")
        if self.ended and count != self.block.rows:
            raise ValueError(f"the end after {count} of {self.block.rows} rows")
        if not drained and not self.ended:
            return False  # rows count as finished only once every line before them is read
        return self.count_to(count)

    def drain(self) -> bool:
        """Read what the child wrote to its pipe; whether all of it (bounded: a child that
        floods its pipe cannot hold the watchdog)."""
        reader = self.reader
        return any(reader.eof or not reader.fill(0) for _ in range(16))

    def read_loaded(self, raw: bytes) -> bool:
        """The child's load record (the job's, through :meth:`JobSide.on_loaded`); whether
        the check loaded."""
        self.loaded = self.run.on_loaded(raw)
        self.failed_load = not self.loaded
        return self.loaded

    def read_record(self, raw: bytes, count: int) -> int:
        """A record after the load: a row's extras, kept until its row travels, or the end
        (the counter is final then: read again); the counter as it now stands."""
        record = json.loads(raw)
        if not isinstance(record, dict):
            raise ValueError("not a record")
        kind = record.pop("t", None)
        if kind == "end":
            self.ended = True
            return self.block.count()  # written before "end": final
        k = record.pop("i", None)
        if kind != "x" or type(k) is not int or not self.sent <= k < self.block.rows:
            raise ValueError(f"an extras record for row {k!r}")
        self.extras[k] = record
        return count

    def count_to(self, count: int) -> bool:
        """Rows up to ``count`` are finished, every line before them read; whether any is
        new. A line still partial holds the rows counted from here on."""
        if self.held is not None and self.consumed > self.held[0]:
            self.held = None  # the line is whole, and was good
        moved = count > self.seen
        if moved and self.reader.buffer and self.held is None:
            # Counted all the same (a check that prints a lot is often mid-line), but held.
            self.held = (self.consumed, self.seen)
        self.seen = count
        return moved

    def look(self) -> bool:
        """The parent's look (:meth:`take`): whether rows finished since the last; taken
        twice when the child is gone, so its counter is read after its last line."""
        moved = self.take()
        if self.reader.eof and not self.ended:
            moved = self.take() or moved
        return moved

    @property
    def confirmed(self) -> int:
        """Rows that may go to the host: counted, with every line written before them read
        whole and good (a malformed line is blamed on the rows from here on)."""
        return self.held[1] if self.held is not None else self.seen

    def flush(self, upto: int, *, final: bool = False) -> None:
        """Send rows ``sent:upto`` to the host as blocks, each within the record size
        (``final``: the child is done; the blocks travel with what the job sends next, in
        one write: each write is a frame that the runtime, Docker and the host handle)."""
        start = self.sent
        while start < upto:
            stop = min(upto, start + self.rows_per_block)
            parts: list[list[Any]] = []
            if self.extras:
                size = 0
                for k in range(start, stop):
                    extra = self.extras.pop(k, None)
                    cost = 24 + (len(encode_json(extra)) + 16 if extra is not None else 0)
                    if k > start and size + cost > self.budget:
                        if extra is not None:
                            self.extras[k] = extra
                        stop = k
                        break
                    size += cost
                    if extra is not None:
                        parts.append([k - start, extra])
            self.run.channel.send(self.block.frame(self.first, start, stop, parts))
            start = stop
        self.sent = max(self.sent, upto)
        self.run.pos = self.first + self.sent
        if not final:
            self.run.channel.flush()
