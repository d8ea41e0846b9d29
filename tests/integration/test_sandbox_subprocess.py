"""The development backend (``SCOREBOX_BACKEND=subprocess``): the real harness as a child
process of this one, read under the same job-stream rules as a container. No Docker; it
isolates nothing, which its warning says."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.local import SubprocessBackend
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings

FAST = Limits(row_timeout_seconds=1.5, wall_seconds_max=30, max_output_bytes=20_000)


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner(Settings(backend="subprocess", max_parallel_jobs=2)) as runner:
        yield runner


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (absent, or a zombie waiting for its reaper)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def test_docker_stays_the_default_and_the_subprocess_backend_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert Settings().backend == "docker"
    with caplog.at_level(logging.WARNING, logger="engine.sandbox.local"):
        SubprocessBackend(Settings(backend="subprocess")).close()
    assert "NO isolation" in caplog.text


def test_rows_are_scored_by_the_real_harness(runner: SandboxRunner) -> None:
    source = (
        "def evaluate(model_output):\n"
        "    if model_output == 'boom':\n"
        "        raise ValueError('no')\n"
        "    return len(model_output)\n"
    )
    rows = [{"model_output": o} for o in ("a", "boom", "ccc")]
    results = runner.run_check(CodeCheck(source), rows, FAST)
    assert [(r.status, r.score) for r in results] == [
        (Status.OK, 1),
        (Status.ERROR, None),
        (Status.OK, 3),
    ]
    assert "ValueError: no" in (results[1].error or "")


def test_a_check_sees_none_of_the_hosts_environment(
    runner: SandboxRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOREBOX_TEST_HOST_SECRET", "s3cret")
    source = (
        "import os\n"
        "def evaluate(model_output):\n"
        "    return 'SCOREBOX_TEST_HOST_SECRET' in os.environ\n"
    )
    [result] = runner.run_check(CodeCheck(source), [{"model_output": "x"}], FAST)
    assert (result.status, result.score) == (Status.OK, False)


def test_a_timeout_kills_every_process_the_check_started(runner: SandboxRunner) -> None:
    source = (
        "import os, time\n"
        "def evaluate(model_output):\n"
        "    if model_output == 'fork':\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(120)\n"
        "            os._exit(0)\n"
        "        return pid\n"
        "    while True:\n"
        "        pass\n"
    )
    rows = [{"model_output": "fork"}, {"model_output": "spin"}]
    forked, spun = runner.run_check(CodeCheck(source), rows, FAST)
    assert forked.status is Status.OK and isinstance(forked.score, int)
    assert spun.status is Status.TIMEOUT
    deadline = time.monotonic() + 10
    while not _gone(int(forked.score)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(int(forked.score))


def test_a_crash_and_the_output_cap_end_the_job_as_in_a_container(runner: SandboxRunner) -> None:
    crash = "import os\ndef evaluate(model_output):\n    os._exit(3)\n"
    [crashed] = runner.run_check(CodeCheck(crash), [{"model_output": "x"}], FAST)
    assert crashed.status is Status.CRASHED
    assert "exited with code 3" in (crashed.error or "")
    flood = (
        "import sys\n"
        "def evaluate(model_output):\n"
        "    sys.stderr.write('x' * 200_000)\n"
        "    return True\n"
    )
    [flooded] = runner.run_check(CodeCheck(flood), [{"model_output": "x"}], FAST)
    assert flooded.status is Status.OUTPUT_LIMIT


def test_no_harness_process_outlives_its_job(runner: SandboxRunner) -> None:
    before = _harnesses()
    runner.run_check(
        CodeCheck("def evaluate(model_output):\n    return True\n"), [{"model_output": "x"}]
    )
    deadline = time.monotonic() + 10
    while _harnesses() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _harnesses() - before


def _harnesses() -> set[int]:
    """Live children of this process running the harness."""
    me = str(os.getpid())
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        parent = stat.rsplit(")", 1)[1].split()[1]
        if parent == me and b"engine.harness" in cmdline and not _gone(int(name)):
            found.add(int(name))
    return found
