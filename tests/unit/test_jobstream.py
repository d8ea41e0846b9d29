"""The job protocol's rules, driven by byte scripts over a scripted channel (no Docker, no
sockets, no sleeping: a pretend clock moves when the script is silent)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from engine.contract import Status
from engine.harness.blocks import Block
from engine.harness.reset import UNCLEAN_EXIT_CODE
from engine.models import Limits, Row
from engine.sandbox.backend import JobEnd, JobEvent, Termination
from engine.sandbox.blocks import BlockRecord
from engine.sandbox.channel import STDERR, STDOUT, ChannelError, ExitState, Pieces
from engine.sandbox.jobstream import JobStream, execute_on
from engine.sandbox.protocol import Job, LoadedRecord, RowRecord

NONCE = "feedc0de"
LIMITS = Limits(row_timeout_seconds=1, wall_seconds_max=60, max_output_bytes=10_000)


class Clock:
    """Time that passes only when the script says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Silence(float):
    """A script step: this many seconds without output."""


class ScriptedChannel:
    """A channel whose harness plays ``script``: bytes (stdout), ``(STDERR, bytes)``, or
    :class:`Silence`; the output ends with the script (``exit`` says how)."""

    def __init__(
        self, job: Job, script: Sequence[Any], clock: Clock, exit: ExitState | None = None
    ) -> None:
        self.job = job
        self.id: str | None = "c0ffee"
        self.script = list(script)
        self.clock = clock
        self.exit = exit or ExitState(exit_code=0)
        self.sent: list[bytes] = []
        self.killed = False
        self.reusable: bool | None = None
        self.fail_send = False

    def send(self, data: bytes) -> None:
        if self.fail_send:
            raise BrokenPipeError("gone")
        self.sent.append(data)

    def receive(self, timeout: float) -> Pieces | None:
        if self.killed or not self.script:
            return None
        step = self.script.pop(0)
        if isinstance(step, Silence):
            self.clock.now += min(step, timeout)
            if step > timeout:
                self.script.insert(0, Silence(step - timeout))
            return ()
        if isinstance(step, tuple):
            return (step,)
        return ((STDOUT, step),)

    def kill(self) -> None:
        self.killed = True

    def exit_state(self) -> ExitState:
        return self.exit

    def close(self, *, reusable: bool) -> None:
        self.reusable = reusable


def rec(**fields: Any) -> bytes:
    return f"{NONCE} {json.dumps(fields)}\n".encode()


LOADED = rec(t="loaded", ok=True, parameters=["model_output"])


def row(i: int, status: str = "ok", **fields: Any) -> bytes:
    if status == "ok":
        fields.setdefault("score", True)
    elif status != "ok":
        fields.setdefault("error", status)
    return rec(t="row", i=i, status=status, ms=fields.pop("ms", 1.0), **fields)


def done(n: int, **fields: Any) -> bytes:
    return rec(t="done", rows=n, **fields)


def make_job(rows: int = 2, **fields: Any) -> Job:
    rows_list = fields.pop("rows_list", [Row(model_output=f"r{i}") for i in range(rows)])
    return Job(
        nonce=NONCE,
        source="def evaluate(model_output): return True",
        row_timeout_seconds=LIMITS.row_timeout_seconds,
        max_output_bytes=LIMITS.max_output_bytes,
        rows=rows_list,
        **fields,
    )


def play(
    script: Sequence[Any],
    job: Job | None = None,
    limits: Limits = LIMITS,
    exit: ExitState | None = None,
) -> tuple[list[JobEvent], ScriptedChannel]:
    clock = Clock()
    channel = ScriptedChannel(job or make_job(), script, clock, exit)
    return list(JobStream(channel, limits, None, clock=clock).events()), channel


def ending(events: list[JobEvent]) -> JobEnd:
    end = events[-1]
    assert isinstance(end, JobEnd)
    assert sum(isinstance(e, JobEnd) for e in events) == 1
    return end


# -- a job that keeps every rule ------------------------------------------------------


def test_an_honest_job_streams_its_records_and_is_kept_for_reuse() -> None:
    job = make_job()
    events, channel = play([LOADED, row(0), b"a line the check printed\n" + row(1), done(2)], job)
    assert channel.sent == [job.encode()]  # the wire format: the job written once
    assert [type(e) for e in events] == [LoadedRecord, RowRecord, RowRecord, JobEnd]
    assert ending(events).termination is Termination.DONE
    assert ending(events).container_id == "c0ffee"
    assert channel.reusable is True and not channel.killed


def test_records_split_across_reads_are_joined() -> None:
    data = LOADED + row(0) + row(1) + done(2)
    events, _ = play([data[i : i + 7] for i in range(0, len(data), 7)])
    assert ending(events).termination is Termination.DONE
    assert [e.i for e in events if isinstance(e, RowRecord)] == [0, 1]


def test_a_harness_that_says_it_is_not_reusable_is_not_kept() -> None:
    events, channel = play([LOADED, row(0), row(1), done(2, reusable=False)])
    assert ending(events).termination is Termination.DONE
    assert channel.reusable is False


def test_a_row_that_ended_dirty_makes_the_harness_single_use() -> None:
    events, channel = play([LOADED, row(0, "timeout"), row(1), done(2)])
    assert ending(events).termination is Termination.DONE
    assert channel.reusable is False


# -- deadlines ------------------------------------------------------------------------


def test_a_check_that_never_loads_times_out() -> None:
    job = make_job(load_timeout_seconds=5)
    events, channel = play([Silence(7.5), LOADED], job)
    assert [type(e) for e in events] == [JobEnd]  # 5 s plus 2 s of grace: the load is late
    end = ending(events)
    assert end.termination is Termination.TIMEOUT
    assert end.detail == "evaluate ran longer than 1.0 s"
    assert channel.killed and channel.reusable is False


def test_loading_within_its_bound_is_not_a_timeout() -> None:
    job = make_job(load_timeout_seconds=5)
    events, _ = play([Silence(6.5), LOADED, row(0), row(1), done(2)], job)
    assert ending(events).termination is Termination.DONE


def test_a_row_past_its_timeout_and_grace_is_killed() -> None:
    events, channel = play([LOADED, row(0), Silence(3.1), row(1), done(2)])
    end = ending(events)
    assert end.termination is Termination.TIMEOUT
    assert "evaluate ran longer than 1.0 s" in end.detail
    assert [e.i for e in events if isinstance(e, RowRecord)] == [0]
    assert channel.killed


def test_each_row_gets_its_own_allowance() -> None:
    events, _ = play([LOADED, Silence(2.9), row(0), Silence(2.9), row(1), done(2)])
    assert ending(events).termination is Termination.DONE


def test_the_job_wall_clock_bounds_rows_that_are_each_in_time() -> None:
    limits = Limits(row_timeout_seconds=1, wall_seconds_max=5, max_output_bytes=10_000)
    job = make_job(rows=4)
    script: list[Any] = [LOADED]
    for i in range(4):
        script += [Silence(2.5), row(i)]
    events, channel = play([*script, done(4)], job, limits)
    end = ending(events)
    assert end.termination is Termination.TIMEOUT
    assert end.detail == "the job passed its wall clock of 5 s"
    assert channel.killed


def test_a_row_that_calls_the_model_gets_the_gateways_bound() -> None:
    job = make_job(gateway_row_timeout_seconds=30)
    call = rec(t="llm", id=1, method="POST", path="/v1/chat/completions", body="{}")
    events, channel = play([LOADED, call, Silence(20), row(0), row(1), done(2)], job)
    assert ending(events).termination is Termination.DONE
    # No gateway session: the call is answered with a refusal on the harness's stdin.
    assert channel.sent[1].startswith(b"r") and b'"id": 1' in channel.sent[1]


def test_a_row_that_calls_the_model_is_still_bounded() -> None:
    job = make_job(gateway_row_timeout_seconds=30)
    call = rec(t="llm", id=1, method="POST", path="/v1/chat/completions", body="{}")
    events, _ = play([LOADED, Silence(0.5), call, Silence(40), row(0), row(1), done(2)], job)
    end = ending(events)
    assert end.termination is Termination.TIMEOUT
    assert "SCOREBOX_GATEWAY_ROW_TIMEOUT_SECONDS" in end.detail


# -- order ----------------------------------------------------------------------------


def test_a_row_out_of_order_is_a_protocol_error() -> None:
    events, channel = play([LOADED, row(1), row(0), done(2)])
    end = ending(events)
    assert end.termination is Termination.PROTOCOL_ERROR
    assert end.detail.endswith("row 1 reported where 0 was due")
    assert not any(isinstance(e, RowRecord) for e in events)
    assert channel.killed and channel.reusable is False


def test_a_repeated_row_is_a_protocol_error() -> None:
    events, _ = play([LOADED, row(0), row(0), row(1), done(2)])
    assert ending(events).detail.endswith("row 0 reported where 1 was due")


def test_done_before_every_row_is_a_protocol_error() -> None:
    events, channel = play([LOADED, row(0), done(2)])
    end = ending(events)
    assert end.termination is Termination.PROTOCOL_ERROR
    assert end.detail.endswith("done before every row")
    assert channel.killed and channel.reusable is False


# -- sizes ----------------------------------------------------------------------------


def test_a_record_over_the_size_bound_is_a_protocol_error() -> None:
    limits = Limits(row_timeout_seconds=1, max_output_bytes=10_000, max_record_bytes=1024)
    events, channel = play([LOADED, row(0, explanation="x" * 2000), row(1), done(2)], None, limits)
    end = ending(events)
    assert end.termination is Termination.PROTOCOL_ERROR
    assert "exceeds 1024" in end.detail
    assert channel.killed


def test_a_line_growing_past_the_size_bound_is_refused_before_it_ends() -> None:
    limits = Limits(row_timeout_seconds=1, max_output_bytes=10_000, max_record_bytes=1024)
    endless = [NONCE.encode() + b" " + b"x" * 600, b"x" * 600]
    events, channel = play([LOADED, *endless, row(0), row(1), done(2)], None, limits)
    end = ending(events)
    assert end.termination is Termination.PROTOCOL_ERROR
    assert end.detail.endswith("result record too large")
    assert channel.killed


def test_a_malformed_record_is_a_protocol_error_after_the_good_ones() -> None:
    bad = f"{NONCE} {{not json\n".encode()
    events, _ = play([LOADED + row(0) + bad + row(1) + done(2)])
    assert [e.i for e in events if isinstance(e, RowRecord)] == [0]
    assert ending(events).termination is Termination.PROTOCOL_ERROR
    assert "malformed result record" in ending(events).detail


def test_stderr_past_the_output_cap_is_the_output_limit() -> None:
    flood = [(STDERR, b"e" * 40_000)] * 2  # cap: 10 000 bytes plus 64 KiB of slack
    events, channel = play([LOADED, *flood, row(0), row(1), done(2)])
    end = ending(events)
    assert end.termination is Termination.OUTPUT_LIMIT
    assert end.detail == "the check wrote more than 10000 bytes"
    assert end.stderr_tail == "e" * 4096
    assert channel.killed


def test_stderr_within_the_cap_is_kept_as_the_tail() -> None:
    events, _ = play([LOADED, (STDERR, b"warning: x\n"), row(0), row(1), done(2)])
    assert ending(events).termination is Termination.DONE
    assert ending(events).stderr_tail == "warning: x\n"


# -- the skip rule and durations ------------------------------------------------------

NEEDS_INPUT = rec(t="loaded", ok=True, parameters=["model_output", "scenario_input"])


def skip_job() -> Job:
    rows = [Row(model_output="a", scenario_input="q"), Row(model_output="b")]
    return make_job(rows_list=rows)


def test_a_row_lacking_a_required_input_must_be_skipped() -> None:
    events, _ = play([NEEDS_INPUT, row(0), row(1, "skipped"), done(2)], skip_job())
    assert ending(events).termination is Termination.DONE
    events, channel = play([NEEDS_INPUT, row(0), row(1), done(2)], skip_job())
    end = ending(events)
    assert end.termination is Termination.PROTOCOL_ERROR
    assert end.detail.endswith("a row without scenario_input was reported scored")
    assert [e.i for e in events if isinstance(e, RowRecord)] == [0]
    assert channel.killed


def test_a_row_the_check_could_score_may_not_be_skipped() -> None:
    events, _ = play([NEEDS_INPUT, row(0, "skipped"), row(1, "skipped"), done(2)], skip_job())
    assert ending(events).detail.endswith("a row it could score was reported skipped")


def test_a_self_skipping_format_may_skip_any_row() -> None:
    loaded = rec(t="loaded", ok=True, parameters=["model_output"], format="braintrust")
    events, _ = play([loaded, row(0, "skipped"), row(1), done(2)])
    assert ending(events).termination is Termination.DONE


def block(first: int, records: list[dict[str, Any]]) -> bytes:
    """A block record as the harness's parent sends it."""
    built = Block(len(records))
    extras: list[list[Any]] = []

    def emit(extra: dict[str, Any]) -> None:
        k = extra.pop("i")
        extra.pop("t")
        extras.append([k, extra])

    for k, record in enumerate(records):
        built.put(k, {"i": first + k, "t": "row", **record}, emit)
    frame = built.frame(first, 0, len(records), extras)
    built.close()
    return f"{NONCE} {json.dumps(frame)}\n".encode()


OK = {"status": "ok", "score": True, "output_type": "bool", "ms": 1.0}
SKIPPED = {"status": "skipped", "error": "no scenario_input", "ms": 0.0}


def test_the_skip_rule_holds_in_blocks_too() -> None:
    events, _ = play([NEEDS_INPUT, block(0, [OK, SKIPPED]), done(2)], skip_job())
    assert ending(events).termination is Termination.DONE
    assert [type(e) for e in events] == [LoadedRecord, BlockRecord, JobEnd]
    events, _ = play([NEEDS_INPUT, block(0, [OK, OK]), done(2)], skip_job())
    assert ending(events).detail.endswith("a row without scenario_input was reported scored")


def test_blocks_and_rows_keep_one_order() -> None:
    events, _ = play([LOADED, block(0, [OK]), row(1), done(2)])
    assert ending(events).termination is Termination.DONE
    events, _ = play([LOADED, row(0), block(0, [OK]), done(2)])
    assert ending(events).detail.endswith("row 0 reported where 1 was due")


def test_a_duration_longer_than_the_job_could_run_is_forged() -> None:
    # One row's job: 10 s plus one row's 1 s; a row without the gateway: 10 s of slack.
    events, _ = play([LOADED, row(0, ms=9_000.0), row(1, ms=10_999.0), done(2)])
    assert ending(events).termination is Termination.DONE
    events, channel = play([LOADED, row(0, ms=12_001.0), row(1), done(2)])
    end = ending(events)
    assert end.termination is Termination.PROTOCOL_ERROR
    assert "longer than the job's wall time (12 s)" in end.detail
    assert channel.killed


# -- how the output ended -------------------------------------------------------------


@pytest.mark.parametrize(
    ("exit", "termination", "words"),
    [
        (ExitState(exit_code=139), Termination.CRASHED, "killed by SIGSEGV"),
        (ExitState(exit_code=3), Termination.CRASHED, "exited with code 3"),
        (ExitState(exit_code=137, oom_killed=True), Termination.OOM, "memory limit of 256 MiB"),
        # the engine missed the OOM event (gVisor, under load): an unexplained SIGKILL
        (ExitState(exit_code=137), Termination.OOM, "most likely the check passed the memory"),
        (ExitState(lost="the engine went away"), Termination.SANDBOX_ERROR, "engine went away"),
    ],
)
def test_output_that_ends_without_done_is_judged_by_the_exit_state(
    exit: ExitState, termination: Termination, words: str
) -> None:
    events, channel = play([LOADED, row(0)], exit=exit)
    end = ending(events)
    assert end.termination is termination
    assert words in end.detail
    assert end.engine_down is (termination is Termination.SANDBOX_ERROR)
    assert [e.i for e in events if isinstance(e, RowRecord)] == [0]  # kept, not re-run
    assert channel.reusable is False


def test_a_harness_that_could_not_clean_up_after_its_last_job_is_the_sandboxs_failure() -> None:
    # It said its last job's container was reusable, then a process outlived the reset: it
    # exits before reading this job, whose rows run again elsewhere (not the check's fault).
    events, channel = play([], exit=ExitState(exit_code=UNCLEAN_EXIT_CODE))
    end = ending(events)
    assert end.termination is Termination.SANDBOX_ERROR
    assert "could not be cleaned after its last job" in end.detail
    assert end.engine_down is False  # the engine is fine: no wait for it
    assert channel.reusable is False


def test_a_fatal_error_on_stderr_is_named_in_a_crash() -> None:
    fatal = (STDERR, b"Fatal Python error: Segmentation fault\n")
    events, _ = play([LOADED, fatal], exit=ExitState(exit_code=139))
    assert "(Fatal Python error: Segmentation fault)" in ending(events).detail


def test_a_job_that_cannot_be_sent_is_the_sandboxs_failure() -> None:
    clock = Clock()
    channel = ScriptedChannel(make_job(), [LOADED], clock)
    channel.fail_send = True
    [end] = list(JobStream(channel, LIMITS, clock=clock).events())
    assert isinstance(end, JobEnd) and end.termination is Termination.SANDBOX_ERROR
    assert end.engine_down and "could not attach to the sandbox" in end.detail
    assert channel.reusable is False


def test_closing_the_events_early_closes_the_channel_unreused() -> None:
    clock = Clock()
    channel = ScriptedChannel(make_job(), [LOADED, row(0), row(1), done(2)], clock)
    events = JobStream(channel, LIMITS, clock=clock).events()
    assert isinstance(next(events), LoadedRecord)
    events.close()
    assert channel.reusable is False


class _Refusing:
    def open(self, job: Job, limits: Limits, labels: Any) -> ScriptedChannel:
        raise ChannelError("no room", engine_down=True, container_id="abc")

    def health(self) -> Any:
        raise AssertionError

    def close(self) -> None:
        pass


def test_a_channel_that_cannot_open_ends_the_job_as_the_sandboxs_failure() -> None:
    [end] = list(execute_on(_Refusing(), make_job(), LIMITS, {}, None))
    assert isinstance(end, JobEnd)
    assert (end.termination, end.detail, end.engine_down, end.container_id) == (
        Termination.SANDBOX_ERROR,
        "no room",
        True,
        "abc",
    )


def test_an_ok_row_keeps_its_score_and_status() -> None:
    events, _ = play([LOADED, row(0, score=0.25, output_type="float"), row(1), done(2)])
    first = events[1]
    assert isinstance(first, RowRecord)
    assert (first.status, first.score, first.served_by) == (Status.OK, 0.25, None)


@pytest.mark.parametrize("status", ["oom", "output_limit"])  # the dirty ones a block carries
def test_a_dirty_row_in_a_block_makes_the_harness_single_use(status: str) -> None:
    dirty = {"status": status, "error": "it ended badly", "ms": 1.0}
    events, channel = play([LOADED, block(0, [OK, dirty]), done(2)])
    assert ending(events).termination is Termination.DONE
    assert channel.reusable is False
    events, channel = play([LOADED, block(0, [OK, OK]), done(2)])
    assert channel.reusable is True
