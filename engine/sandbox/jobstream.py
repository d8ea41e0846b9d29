"""The job protocol's rules, apart from any transport: channel bytes in, job events out.

:class:`JobStream` writes a job into a :class:`~engine.sandbox.channel.Channel` and reads the
harness's answer under the rules that make a job trustworthy:

- **deadlines**: loading, each row (a row that called the model gets the gateway's larger
  bound) and the whole job; past one the harness is killed and the job ends ``timeout``;
- **record sizes**: a result record, or a line still being written, over
  ``max_record_bytes`` is a protocol error; stderr past the output cap is ``output_limit``;
- **row order**: rows (single or in blocks) come in order, and ``done`` only after every row;
- **the skip rule**: a row is ``skipped`` exactly when it lacks an input the check requires
  (or its format skips itself);
- **durations**: no row may claim to have run longer than its job could;
- **exit state**: output that ends without ``done`` becomes ``oom``, ``crashed`` or, when
  the backend cannot tell, the sandbox's failure.

Nothing here does I/O of its own: the channel moves bytes, a clock tells time, so the rules
are tested with byte scripts (tests/unit/test_jobstream.py).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence

import numpy as np

from engine.contract import REQUIRABLE_PARAMETERS, Status, missing_inputs
from engine.contract.formats import SELF_SKIPPING
from engine.gateway.service import GatewaySession

# The harness exits with this code, reading no other job, when the reset after a job it
# said was reusable failed: the job it was then sent is the sandbox's failure, its rows run
# again. One definition, the harness's (stdlib only, a layer below this one).
from engine.harness.reset import UNCLEAN_EXIT_CODE
from engine.models import Limits, Row
from engine.sandbox.backend import JobEnd, JobEvent, Termination
from engine.sandbox.blocks import STATUS_INDEX, BlockRecord, ResultBlock, duration_fault
from engine.sandbox.channel import STDERR, Channel, ChannelBackend, ChannelError
from engine.sandbox.columns import RowColumns
from engine.sandbox.protocol import (
    AnyRecord,
    DoneRecord,
    Job,
    LLMRequestRecord,
    LoadedRecord,
    RowRecord,
    parse_records,
)
from engine.sandbox.relay import GatewayLink

#: Row statuses after which a harness is not trusted with another job.
DIRTY_STATUSES = frozenset({"timeout", "oom", "output_limit", "crashed"})
#: Each status's dirtiness by its index in a block: a block's statuses index it in one step
#: (``np.isin`` sorts both arrays, about ten times the cost for a one-row block).
_DIRTY_INDEX = np.zeros(max(STATUS_INDEX.values()) + 1, dtype=bool)
_DIRTY_INDEX[[STATUS_INDEX[Status(status)] for status in DIRTY_STATUSES]] = True
#: A process killed by SIGKILL exits with this code (128 + 9).
KILLED_EXIT_CODE = 128 + signal.SIGKILL
#: Extra seconds the host allows past the harness's own per-row timer.
ROW_GRACE_SECONDS = 2.0
#: Output the container may write beyond the check's cap (harness messages, tracebacks).
STDERR_SLACK_BYTES = 64 * 1024
STDERR_TAIL_BYTES = 4096
#: What a row that calls the model may run past the gateway's row bound, at most: the
#: grace before the harness is stopped, and clocks that differ a little.
GATEWAY_ROW_SLACK_SECONDS = 10.0
_SKIPPED = STATUS_INDEX[Status.SKIPPED]
_PROTOCOL = "the check broke the result protocol: "


def execute_on(
    backend: ChannelBackend,
    job: Job,
    limits: Limits,
    labels: Mapping[str, str],
    session: GatewaySession | None,
) -> Iterator[JobEvent]:
    """A job's events from a channel backend: open a channel, then :class:`JobStream`."""
    try:
        channel = backend.open(job, limits, labels)
    except ChannelError as exc:
        yield JobEnd(
            Termination.SANDBOX_ERROR,
            str(exc),
            container_id=exc.container_id,
            engine_down=exc.engine_down,
        )
        return
    yield from JobStream(channel, limits, session).events()


class JobStream:
    """One job over one channel; :meth:`events` ends with exactly one :class:`JobEnd`.

    The channel is closed when the events end (or are closed early), kept for reuse only
    if the harness said so, every row was clean and nothing broke a rule.
    """

    def __init__(
        self,
        channel: Channel,
        limits: Limits,
        session: GatewaySession | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.channel = channel
        self.job = job = channel.job
        self.limits = limits
        self.clock = clock
        self.link = GatewayLink(channel.send, session)
        self.reusable = False
        self.dirty = False
        self.expected_row = 0
        self.line = bytearray()
        self.stderr_tail = bytearray()
        self.stderr_total = 0
        self.cap = limits.max_output_bytes + STDERR_SLACK_BYTES
        self.row_allowance = job.row_timeout_seconds + ROW_GRACE_SECONDS
        self.start = self.step_started = 0.0
        self.job_deadline = self.step_deadline = 0.0
        self.called_model = False  # the row in flight called the model: the gateway's bound
        # No row can have run longer than its job, whose end a model call may push back by
        # one row's gateway allowance, plus slack for clocks.
        self.wall_seconds = max(
            limits.job_wall_seconds(len(job.rows)),
            (job.gateway_row_timeout_seconds or 0.0) + GATEWAY_ROW_SLACK_SECONDS,
        )
        self.required: set[str] = set()  # the inputs the check requires (absent: skipped)
        self.self_skips = False  # a format whose None return skips the row (Braintrust's)

    def events(self) -> Generator[JobEvent, None, None]:
        """The job's records as they come, then how it ended."""
        try:
            yield from self._run()
        finally:
            self.link.close()
            self.channel.close(reusable=self.reusable)

    # -- the loop -------------------------------------------------------------------

    def _run(self) -> Iterator[JobEvent]:
        try:
            self.channel.send(self.job.encode())
        except OSError as exc:
            yield self._end(
                Termination.SANDBOX_ERROR,
                f"could not attach to the sandbox: {exc}",
                engine_down=True,  # a dead container or engine: the runner waits a moment
            )
            return
        self.start = self.step_started = self.clock()
        self.job_deadline = self.start + self.limits.job_wall_seconds(len(self.job.rows))
        self.step_deadline = self.start + self.job.load_timeout_seconds + ROW_GRACE_SECONDS
        while True:
            left = min(self.job_deadline, self.step_deadline) - self.clock()
            if left <= 0:
                yield self._kill(Termination.TIMEOUT, self._timeout_detail())
                return
            pieces = self.channel.receive(left)
            if pieces is None:
                break
            for stream, payload in pieces:
                if stream == STDERR:
                    end = self._stderr(payload)
                    if end is not None:
                        yield end
                        return
                    continue
                for event in self._stdout(payload):
                    yield event
                    if isinstance(event, JobEnd):
                        return
        yield self._post_mortem()

    def _timeout_detail(self) -> str:
        if self.job_deadline <= self.step_deadline:
            return f"the job passed its wall clock of {self.job_deadline - self.start:.0f} s"
        if self.called_model:
            return (
                f"evaluate ran longer than {self.job.gateway_row_timeout_seconds} s, the "
                "bound of a row that calls the model (SCOREBOX_GATEWAY_ROW_TIMEOUT_SECONDS)"
            )
        return f"evaluate ran longer than {self.job.row_timeout_seconds} s"

    def _stderr(self, payload: bytes) -> JobEnd | None:
        self.stderr_total += len(payload)
        self.stderr_tail += payload
        del self.stderr_tail[:-STDERR_TAIL_BYTES]
        if self.stderr_total <= self.cap:
            return None
        detail = f"the check wrote more than {self.limits.max_output_bytes} bytes"
        return self._kill(Termination.OUTPUT_LIMIT, detail)

    def _stdout(self, payload: bytes) -> Iterator[JobEvent]:
        line = self.line
        line += payload
        last = line.rfind(b"\n")
        if last >= 0:
            complete = bytes(line[:last]).split(b"\n")
            del line[: last + 1]
            records, error = parse_records(complete, self.job.nonce, self.limits.max_record_bytes)
            for record in records:
                event = self._on_record(record)
                if event is not None:
                    yield event
                    if isinstance(event, JobEnd):
                        return
            if error is not None:
                yield self._kill(Termination.PROTOCOL_ERROR, _PROTOCOL + str(error))
                return
        if len(line) > self.limits.max_record_bytes:
            yield self._kill(Termination.PROTOCOL_ERROR, _PROTOCOL + "result record too large")

    # -- records --------------------------------------------------------------------

    def _on_record(self, record: AnyRecord) -> JobEvent | None:
        if isinstance(record, LLMRequestRecord):
            self._model_call(record)
            return None
        if isinstance(record, DoneRecord):
            if self.expected_row != len(self.job.rows):
                return self._kill(Termination.PROTOCOL_ERROR, _PROTOCOL + "done before every row")
            self.reusable = record.reusable and not self.dirty
            return self._end(Termination.DONE, "")
        if isinstance(record, LoadedRecord):
            self.required = set(REQUIRABLE_PARAMETERS) & set(record.parameters)
            self.self_skips = record.format in SELF_SKIPPING
            self._next_step()
            return record
        if record.i != self.expected_row:
            detail = f"row {record.i} reported where {self.expected_row} was due"
            return self._kill(Termination.PROTOCOL_ERROR, _PROTOCOL + detail)
        fault = self._block(record) if isinstance(record, BlockRecord) else self._row(record)
        if isinstance(fault, str):
            return self._kill(Termination.PROTOCOL_ERROR, _PROTOCOL + fault)
        self._next_step()
        return fault

    def _model_call(self, record: LLMRequestRecord) -> None:
        self.link.request(record, self.expected_row)
        if self.job.gateway_row_timeout_seconds:
            # Model calls count against the row, within a larger bound.
            allowance = self.job.gateway_row_timeout_seconds + ROW_GRACE_SECONDS
            self.step_deadline = max(self.step_deadline, self.step_started + allowance)
            self.job_deadline = max(self.job_deadline, self.clock() + allowance)
            self.called_model = True

    def _row(self, record: RowRecord) -> RowRecord | str:
        """The row as the host knows it, or why it breaks a rule."""
        self.expected_row += 1
        self.dirty = self.dirty or record.status in DIRTY_STATUSES
        record = self.link.outcome(record)
        row = self.job.rows[record.i]
        skipped = record.status is Status.SKIPPED
        fault = skip_fault(skipped, missing(row, self.required), self.self_skips)
        return fault or duration_fault(record.ms, self.wall_seconds) or record

    def _block(self, record: BlockRecord) -> BlockRecord | str:
        self.expected_row += record.n
        self.dirty = self.dirty or bool(_DIRTY_INDEX[record.block.statuses].any())
        self.link.outcome_block(record)
        rows = self.job.rows[record.i : record.i + record.n]
        fault = skips_disagree(record.block, rows, self.required, self.self_skips)
        return fault or duration_fault(record.block.ms, self.wall_seconds) or record

    def _next_step(self) -> None:
        self.step_started = self.clock()
        self.called_model = False
        self.step_deadline = self.step_started + self.row_allowance

    # -- how it ended ---------------------------------------------------------------

    def _end(
        self,
        termination: Termination,
        detail: str,
        *,
        exit_code: int | None = None,
        engine_down: bool = False,
    ) -> JobEnd:
        return JobEnd(
            termination,
            detail,
            exit_code,
            self.channel.id,
            self.stderr_tail.decode(errors="replace"),
            engine_down,
        )

    def _kill(self, termination: Termination, detail: str) -> JobEnd:
        """The job broke a rule: the harness is killed, never reused."""
        self.reusable = False
        self.channel.kill()
        return self._end(termination, detail)

    def _post_mortem(self) -> JobEnd:
        """The output ended without ``done``: the process died; say how."""
        state = self.channel.exit_state()
        if state.exit_code == UNCLEAN_EXIT_CODE and self.expected_row == 0:
            detail = (
                "the sandbox could not be cleaned after its last job (a process outlived "
                "the reset) and served no other; the rows run again in a fresh one"
            )
            return self._end(Termination.SANDBOX_ERROR, detail, exit_code=state.exit_code)
        if state.lost is not None:
            return self._end(Termination.SANDBOX_ERROR, state.lost, engine_down=True)
        if state.oom_killed:
            detail = f"the check passed the memory limit of {self.limits.memory_mb} MiB"
            return self._end(Termination.OOM, detail, exit_code=state.exit_code)
        if state.exit_code == KILLED_EXIT_CODE:
            # Nothing here killed it (a kill of ours ends the job before the output does),
            # so the kernel's OOM killer most likely did: under gVisor the engine misses
            # some of those kills (the exit comes before the OOM event), and says 137 alone.
            detail = (
                "the sandbox was killed (SIGKILL) without a kill from scorebox: most likely "
                f"the check passed the memory limit of {self.limits.memory_mb} MiB"
            )
            return self._end(Termination.OOM, detail, exit_code=state.exit_code)
        tail = self.stderr_tail.decode(errors="replace")
        detail = describe_exit(state.exit_code, tail)
        return self._end(Termination.CRASHED, detail, exit_code=state.exit_code)


def describe_exit(exit_code: int | None, stderr_tail: str) -> str:
    """A human cause for a harness that ended without finishing its job."""
    if exit_code is None:
        cause = "the sandbox process died"
    elif exit_code > 128:
        try:
            name = signal.Signals(exit_code - 128).name
        except ValueError:
            name = f"signal {exit_code - 128}"
        cause = f"the check's process was killed by {name}"
    else:
        cause = f"the check's process exited with code {exit_code} before finishing"
    fatal = [line for line in stderr_tail.splitlines() if line.startswith("Fatal Python error")]
    if fatal:
        cause += f" ({fatal[-1]})"
    return cause


# -- the skip rule ------------------------------------------------------------------


def missing(row: Row, required: set[str]) -> list[str]:
    """The inputs the check requires that ``row`` lacks (it must be ``skipped`` on them)."""
    if not required:
        return []
    return missing_inputs(list(required), {name: getattr(row, name) for name in required})


def skip_fault(skipped: bool, lacks: list[str], self_skips: bool) -> str | None:
    """Why a row reported ``skipped`` or not breaks the protocol (None: it does not): a row
    is skipped exactly when it lacks a required input, or when its format skips itself."""
    if skipped == bool(lacks) or (skipped and self_skips):
        return None
    if lacks:
        return f"a row without {', '.join(lacks)} was reported scored"
    return "a row it could score was reported skipped"


def skips_disagree(
    block: ResultBlock, rows: Sequence[Row], required: set[str], self_skips: bool
) -> str | None:
    """:func:`skip_fault` for a whole block: the first of its rows that breaks the rule."""
    skipped = block.statuses == _SKIPPED
    if isinstance(rows, RowColumns):  # score_table's columns: a column at a time
        lacks = rows.lacking(required)
    elif required:
        lacks = np.fromiter(
            (bool(missing(row, required)) for row in rows), dtype=bool, count=len(rows)
        )
    else:
        lacks = np.zeros(len(rows), dtype=bool)
    wrong = skipped != lacks
    if self_skips:
        wrong &= ~skipped
    if not wrong.any():
        return None
    k = int(np.flatnonzero(wrong)[0])
    return skip_fault(bool(skipped[k]), missing(rows[k], required), self_skips)
