"""A job's ``done`` goes before the reset that cleans up after it, and a reset that fails
after a ``done`` that said reusable ends the harness before it reads another job.

As in test_harness_job.py, the harness's parent is this test's process; the reset is
replaced here (off a container's PID 1 the real one touches nothing), so what matters is
when it runs and what it may do.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from typing import Any

import pytest

from engine.harness import __main__ as harness_main
from engine.harness import ahead, supervise
from engine.harness import reset as reset_module
from engine.harness.ahead import Spare, template_of
from engine.harness.channel import Reader, read_job
from engine.harness.gateway import Gateway
from engine.harness.reset import UNCLEAN_EXIT_CODE, Unclean
from engine.harness.supervise import JobRun
from engine.models import Row
from engine.sandbox.protocol import Job

SOURCE = "def evaluate(model_output):\n    return len(model_output)\n"


def encoded(**extra: Any) -> bytes:
    return Job(
        nonce="n0nce",
        source=SOURCE,
        row_timeout_seconds=5.0,
        max_output_bytes=4096,
        rows=[Row(model_output="abc"), Row(model_output="abcdef")],
        **extra,
    ).encode()


def job_of(**extra: Any) -> dict[str, Any]:
    with tempfile.TemporaryFile() as stdin:
        stdin.write(encoded(**extra))
        stdin.seek(0)
        document = read_job(Reader(stdin.fileno()), idle_exit=5.0)
    assert document is not None
    return document


def unread(fd: int) -> bytes:
    """What the result pipe holds now, without waiting."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    data = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    except BlockingIOError:
        pass
    fcntl.fcntl(fd, fcntl.F_SETFL, flags)
    return data


class Resets:
    """Stands in for the reset: records what the host had received when it ran."""

    def __init__(self, result_read: int, *, fails: bool = False) -> None:
        self.result_read = result_read
        self.fails = fails
        self.seen: list[tuple[str, bytes]] = []

    def promised(self) -> None:
        self.seen.append(("reset_or_raise", unread(self.result_read)))
        if self.fails:
            raise Unclean("a process outlived the reset")

    def plain(self) -> bool:
        self.seen.append(("reset", unread(self.result_read)))
        return True


@pytest.fixture
def as_pid_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent believes it is the container's PID 1 (so it may promise reuse)."""
    monkeypatch.setattr(supervise, "owns_namespace", lambda: True)
    monkeypatch.setattr(supervise, "survey", lambda: None)


@pytest.mark.usefixtures("as_pid_1")
def test_done_reaches_the_host_before_the_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    result_read, result_write = os.pipe()
    resets = Resets(result_read)
    monkeypatch.setattr(supervise, "reset_or_raise", resets.promised)
    monkeypatch.setattr(supervise, "reset", resets.plain)
    run = JobRun(job_of(), result_write, Gateway())
    assert run.run() is True
    os.close(result_write)
    os.close(result_read)
    assert [name for name, _ in resets.seen] == ["reset_or_raise"]
    before_reset = resets.seen[0][1]
    # Every row and the done were written before the reset began...
    assert b'"t": "block"' in before_reset
    assert before_reset.endswith(b'n0nce {"t": "done", "rows": 2, "reusable": true}\n')
    # ...and the last child, killed once its work was in, was reaped by then too.
    assert run.unreaped is None


@pytest.mark.usefixtures("as_pid_1")
def test_a_task_budget_spent_is_said_in_the_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reset_module.Tasks, "created", 5)
    # Off a container, the PIDs between two forks are the machine's: not counted here.
    monkeypatch.setattr(reset_module.Tasks, "saw", classmethod(lambda cls, pid, *, ours: None))
    for budget, reusable in ((5, False), (6, True)):
        result_read, result_write = os.pipe()
        resets = Resets(result_read)
        monkeypatch.setattr(supervise, "reset_or_raise", resets.promised)
        monkeypatch.setattr(supervise, "reset", resets.plain)
        assert JobRun(job_of(task_budget=budget), result_write, Gateway()).run() is reusable
        os.close(result_write)
        os.close(result_read)
        # A container the host will discard is reset all the same, without a promise.
        assert [name for name, _ in resets.seen] == ["reset_or_raise" if reusable else "reset"]
        said = b"true" if reusable else b"false"
        assert resets.seen[0][1].endswith(b'"reusable": ' + said + b"}\n")


@pytest.mark.usefixtures("as_pid_1")
def test_a_failed_reset_after_a_reusable_done_ends_the_harness_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result_read, result_write = os.pipe()
    resets = Resets(result_read, fails=True)
    monkeypatch.setattr(supervise, "reset_or_raise", resets.promised)
    stdin_read, stdin_write = os.pipe()
    os.write(stdin_write, encoded() + encoded())  # a second job waits: it is never read
    stdin = Reader(stdin_read)
    code = harness_main.serve(stdin, 5.0, result_write, Gateway())
    os.close(result_write)
    assert code == UNCLEAN_EXIT_CODE  # the host's one (jobstream imports it from the harness)
    assert len(resets.seen) == 1  # one job served, its done sent, then the failed reset
    assert resets.seen[0][1].endswith(b'"reusable": true}\n')
    assert unread(result_read) == b""
    assert stdin.buffer.startswith(encoded()[:8])  # the second job was left where it was
    for fd in (result_read, stdin_read, stdin_write):
        os.close(fd)


def test_reset_or_raise_raises_only_where_the_harness_owns_the_container(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reset_module, "reset", lambda: False)
    monkeypatch.setattr(reset_module, "owns_namespace", lambda: False)
    reset_module.reset_or_raise()  # a development host: nothing was promised clean
    monkeypatch.setattr(reset_module, "owns_namespace", lambda: True)
    with pytest.raises(Unclean, match="outlived"):
        reset_module.reset_or_raise()


def test_a_child_forked_ahead_whose_reset_fails_raises_unclean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ahead, "reset_or_raise", lambda: (_ for _ in ()).throw(Unclean("x")))
    result_read, result_write = os.pipe()
    spare = Spare.fork(template_of(job_of()), result_write, Gateway())
    with pytest.raises(Unclean):
        spare.discard()
    assert spare.gone
    with pytest.raises(ChildProcessError):
        os.waitpid(spare.forked.pid, os.WNOHANG)  # killed and reaped before the reset
    for fd in (result_read, result_write):
        os.close(fd)
