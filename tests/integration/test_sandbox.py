"""Real-Docker tests: one per sandbox guarantee (docs/security.md; docs/architecture.md,
"Sandbox")."""

from __future__ import annotations

import os
import textwrap
import time

import pytest

from engine.contract import Status
from engine.models import Limits, RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.integration.conftest import FAST, RecordingBackend, labelled_containers

pytestmark = pytest.mark.docker


def rows(n: int) -> list[dict[str, object]]:
    return [{"id": i, "model_output": str(i), "scenario_result": str(i)} for i in range(1, n + 1)]


def run(runner: SandboxRunner, source: str, n: int = 3, limits: Limits = FAST) -> list[RowResult]:
    results = runner.run_check(CodeCheck(source=textwrap.dedent(source)), rows(n), limits)
    assert [r.row_id for r in results] == list(range(1, n + 1))
    return results


def statuses(results: list[RowResult]) -> list[Status]:
    return [r.status for r in results]


# -- the forms of the contract ---------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def evaluate(model_output: str) -> bool:\n    return model_output == '2'\n", False),
        ("def evaluate(model_output):\n    return len(model_output)\n", 1),
        ("def evaluate(model_output) -> float:\n    return len(model_output) / 4\n", 0.25),
        ("def evaluate(model_output):\n    return (True, 'because')\n", True),
        (
            "from engine.checks import CheckResponse\n"
            "def evaluate(model_output):\n    return CheckResponse(score=3, explanation='e')\n",
            3,
        ),
        (
            "import numpy as np\ndef evaluate(model_output):\n    return np.float64(0.5)\n",
            0.5,
        ),
    ],
)
def test_forms_and_return_types(runner: SandboxRunner, source: str, expected: object) -> None:
    result = run(runner, source, n=1)[0]
    assert result.status is Status.OK, result.error
    assert result.score == expected
    assert type(result.score) is type(expected)


def test_okareo_style_file_runs_unchanged(runner: SandboxRunner) -> None:
    source = """
    from okareo.checks import CodeBasedCheck, CheckResponse

    class Check(CodeBasedCheck):
        @staticmethod
        def evaluate(model_output: str, scenario_input: str, scenario_result: str) -> CheckResponse:
            return CheckResponse(score=model_output == scenario_result, explanation="compared")
    """
    results = runner.run_check(
        CodeCheck(source=textwrap.dedent(source)),
        [{"model_output": "a", "scenario_input": "q", "scenario_result": "a"}],
        FAST,
    )
    assert results[0].status is Status.OK, results[0].error
    assert results[0].score is True
    assert results[0].explanation == "compared"


def test_missing_required_input_is_skipped(runner: SandboxRunner) -> None:
    source = "def evaluate(model_output, scenario_input):\n    return True\n"
    results = runner.run_check(
        CodeCheck(source=source),
        [{"model_output": "a"}, {"model_output": "b", "scenario_input": "q"}],
        FAST,
    )
    assert statuses(results) == [Status.SKIPPED, Status.OK]
    assert "scenario_input" in (results[0].error or "")


def test_kwargs_takes_the_inputs_a_row_lacks_as_null(runner: SandboxRunner) -> None:
    # ``**fields`` requires nothing beyond what evaluate names: a row without a scenario is
    # scored, with the scenario's inputs passed as None; one it names is still required.
    source = (
        "def evaluate(model_output, **fields):\n"
        "    scenario = ('scenario_input', 'scenario_result')\n"
        "    return all(k in fields and fields[k] is None for k in scenario)\n"
    )
    results = runner.run_check(CodeCheck(source=source), [{"model_output": "a"}], FAST)
    assert (results[0].status, results[0].score) == (Status.OK, True), results[0].error
    named = "def evaluate(model_output, scenario_result, **fields):\n    return True\n"
    results = runner.run_check(CodeCheck(source=named), [{"model_output": "a"}], FAST)
    assert results[0].status is Status.SKIPPED
    assert "scenario_result" in (results[0].error or "")


def test_printed_output_is_returned_with_the_row(runner: SandboxRunner) -> None:
    results = run(
        runner, "def evaluate(model_output):\n    print('saw', model_output)\n    return 1\n"
    )
    assert [r.output for r in results] == ["saw 1\n", "saw 2\n", "saw 3\n"]


# -- user failures are typed statuses ----------------------------------------------


def test_raising_check_is_error_with_type_and_message(runner: SandboxRunner) -> None:
    source = """
    def evaluate(model_output):
        if model_output == "2":
            raise KeyError("missing field")
        return True
    """
    results = run(runner, source)
    assert statuses(results) == [Status.OK, Status.ERROR, Status.OK]
    assert "KeyError" in (results[1].error or "")
    assert "missing field" in (results[1].error or "")
    assert "line 4" in (results[1].error or "")


@pytest.mark.parametrize(
    ("returned", "reason"),
    [("float('nan')", "finite"), ("'yes'", "str"), ("2**70", "64-bit"), ("float('inf')", "finite")],
)
def test_invalid_scores(runner: SandboxRunner, returned: str, reason: str) -> None:
    result = run(runner, f"def evaluate(model_output):\n    return {returned}\n", n=1)[0]
    assert result.status is Status.INVALID_SCORE
    assert reason in (result.error or "")
    assert result.score is None


def test_score_of_another_type_than_the_first_is_invalid(runner: SandboxRunner) -> None:
    source = "def evaluate(model_output):\n    return True if model_output == '1' else 0.5\n"
    assert statuses(run(runner, source)) == [Status.OK, Status.INVALID_SCORE, Status.INVALID_SCORE]


def test_infinite_loop_times_out_and_next_rows_are_scored(runner: SandboxRunner) -> None:
    source = """
    def evaluate(model_output):
        if model_output == "2":
            while True:
                pass
        return True
    """
    results = run(runner, source, n=4)
    assert statuses(results) == [Status.OK, Status.TIMEOUT, Status.OK, Status.OK]


def test_uninterruptible_hang_gets_the_check_killed(
    runner: SandboxRunner, backend: RecordingBackend
) -> None:
    # Swallows every exception, so only the harness parent's watchdog can stop it.
    source = """
    import time
    def evaluate(model_output):
        if model_output == "2":
            while True:
                try:
                    time.sleep(60)
                except BaseException:
                    pass
        return True
    """
    before = len(backend.container_ids)
    started = time.monotonic()
    results = run(runner, source, n=4)
    assert statuses(results) == [Status.OK, Status.TIMEOUT, Status.OK, Status.OK]
    assert time.monotonic() - started < 30
    # The watchdog killed the hung check process; the rows after it ran in a fresh
    # process of the same job, and the container is not trusted with another job.
    assert len(backend.container_ids) - before == 1
    hung_container = backend.container_ids[-1]
    assert statuses(run(runner, source, n=1)) == [Status.OK]
    assert backend.container_ids[-1] != hung_container


def test_job_wall_clock_kills_the_container(runner: SandboxRunner) -> None:
    source = "import time\ndef evaluate(model_output):\n    time.sleep(0.8)\n    return True\n"
    limits = Limits(row_timeout_seconds=1.5, wall_seconds_max=3)
    results = run(runner, source, n=6, limits=limits)
    timed_out = [r for r in results if r.status is Status.TIMEOUT]
    assert timed_out and all("wall clock" in (r.error or "") for r in timed_out)
    assert any(r.status is Status.OK for r in results)


def test_memory_bomb_is_oom(runner: SandboxRunner) -> None:
    source = """
    def evaluate(model_output):
        if model_output == "2":
            hog = []
            while True:
                hog.append(bytearray(8 * 1024 * 1024))
        return True
    """
    results = run(runner, source, limits=Limits(row_timeout_seconds=10, memory_mb=128))
    assert statuses(results) == [Status.OK, Status.OOM, Status.OK]


def test_fork_bomb_is_contained(runner: SandboxRunner) -> None:
    source = """
    import os
    def evaluate(model_output):
        if model_output == "2":
            while True:
                if os.fork() == 0:
                    while True:
                        pass
        return True
    """
    results = run(runner, source)
    assert results[0].status is Status.OK
    assert results[1].status in {Status.ERROR, Status.CRASHED, Status.TIMEOUT}
    assert "Resource temporarily unavailable" in (results[1].error or "") or (
        results[1].status is not Status.ERROR
    )
    assert results[2].status is Status.OK
    # The engine still works afterwards.
    assert run(runner, "def evaluate(model_output):\n    return 1\n", n=1)[0].status is Status.OK


def test_max_pids_counts_the_checks_processes_job_after_job(runner: SandboxRunner) -> None:
    # max_pids bounds what a check may fork, under runc and gVisor alike. Under gVisor the
    # sandbox kernel's own host threads must not count against it: they did, and a warm
    # worker whose checks started processes died with exit code 2 a few jobs later.
    source = """
    import os, subprocess, time
    def evaluate(model_output):
        subprocess.Popen(["sleep", "300"], start_new_session=True)
        children = []
        try:
            while len(children) < 200:
                pid = os.fork()
                if pid == 0:
                    time.sleep(300)
                    os._exit(0)
                children.append(pid)
        except OSError:
            pass
        return len(children)
    """
    limits = FAST.model_copy(update={"max_pids": 16})
    counts = []
    for _ in range(5):
        (result,) = run(runner, source, n=1, limits=limits)
        assert result.status is Status.OK, result.error
        counts.append(result.score)
    # The check's process and its sleep come first (and, under runc, the harness, which
    # shares the check's uid); the rest is forks. (16: 24 sleeping forks of a Python
    # process pass the 256 MiB memory limit under gVisor.)
    assert all(isinstance(c, int) and 10 <= c <= 16 for c in counts), counts
    # Nothing the last job forked is still counted in the next one.
    assert len(set(counts)) == 1, counts


def test_thread_bomb_is_contained(runner: SandboxRunner) -> None:
    source = """
    import threading, time
    def evaluate(model_output):
        if model_output == "2":
            while True:
                threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        return True
    """
    results = run(runner, source)
    assert results[0].status is Status.OK
    assert results[1].status in {Status.ERROR, Status.CRASHED, Status.TIMEOUT}
    assert results[2].status is Status.OK


def test_print_flood_is_output_limit(runner: SandboxRunner) -> None:
    source = """
    def evaluate(model_output):
        if model_output == "2":
            while True:
                print("x" * 10000)
        return True
    """
    results = run(runner, source)
    assert statuses(results)[:2] == [Status.OK, Status.OUTPUT_LIMIT]
    assert 0 < len(results[1].output or "") <= 4096


def test_raw_fd_flood_is_output_limit(runner: SandboxRunner) -> None:
    source = """
    import os
    def evaluate(model_output):
        if model_output == "2":
            while True:
                os.write(1, b"y" * 65536)
                os.write(2, b"z" * 65536)
        return True
    """
    results = run(runner, source)
    assert statuses(results) == [Status.OK, Status.OUTPUT_LIMIT, Status.OK]


def test_os_exit_mid_job_keeps_earlier_rows_and_scores_later_ones(
    runner: SandboxRunner, backend: RecordingBackend
) -> None:
    source = """
    import os
    def evaluate(model_output):
        if model_output == "3":
            os._exit(0)
        return int(model_output)
    """
    before = len(backend.container_ids)
    results = run(runner, source, n=10)
    assert statuses(results) == [Status.OK] * 2 + [Status.CRASHED] + [Status.OK] * 7
    assert [r.score for r in results] == [1, 2, None, 4, 5, 6, 7, 8, 9, 10]
    # The harness's parent outlived its dead child: the job finished in one container.
    assert len(backend.container_ids) - before == 1


def test_a_check_cannot_signal_the_harness_or_anything_outside_its_own_processes(
    runner: SandboxRunner,
) -> None:
    # The harness's parent is the container's PID 1: kill(-1) skips it, SIGKILL and SIGINT
    # from inside do not reach it (no handler; it ignores SIGINT), and under runsc the check
    # runs as another uid. Before, kill(-1) took the parent and the container with it.
    source = """
    import os, signal
    def evaluate(model_output):
        for target, sig in ((-1, signal.SIGKILL), (1, signal.SIGKILL), (1, signal.SIGINT),
                            (os.getppid(), signal.SIGKILL), (os.getppid(), signal.SIGTERM)):
            try:
                os.kill(target, sig)
            except OSError:
                pass
        return os.getppid()
    """
    results = run(runner, source, n=6)
    assert [(r.status, r.score) for r in results] == [(Status.OK, 1)] * 6, results


def test_segfault_is_crashed(runner: SandboxRunner) -> None:
    source = """
    import ctypes
    def evaluate(model_output):
        if model_output == "2":
            ctypes.string_at(0)
        return True
    """
    results = run(runner, source)
    assert statuses(results) == [Status.OK, Status.CRASHED, Status.OK]
    assert "SIGSEGV" in (results[1].error or "") or "Segmentation" in (results[1].error or "")


def test_check_that_cannot_load_errors_every_row(runner: SandboxRunner) -> None:
    results = run(runner, "def evaluate(model_output):\n    return 1\nraise RuntimeError('boom')\n")
    assert statuses(results) == [Status.ERROR] * 3
    assert all("boom" in (r.error or "") for r in results)


# -- isolation ------------------------------------------------------------------------


def test_network_is_unreachable(runner: SandboxRunner) -> None:
    source = """
    import socket, urllib.request
    def evaluate(model_output):
        failures = 0
        for attempt in (
            lambda: socket.create_connection(("1.1.1.1", 53), timeout=1),
            lambda: socket.getaddrinfo("example.com", 80),
            lambda: urllib.request.urlopen("http://example.com", timeout=1),
        ):
            try:
                attempt()
            except OSError:
                failures += 1
        return failures
    """
    result = run(runner, source, n=1)[0]
    assert result.status is Status.OK, result.error
    assert result.score == 3


def test_filesystem_is_read_only_outside_tmp(runner: SandboxRunner) -> None:
    source = """
    import os, subprocess
    def evaluate(model_output):
        denied = 0
        for path in ("/opt/scorebox/harness.py", "/etc/passwd", "/x", "/home/x"):
            try:
                with open(path, "a") as handle:
                    handle.write("x")
            except OSError:
                denied += 1
        with open("/tmp/ok.txt", "w") as handle:
            handle.write("fine")
        with open("/tmp/run.sh", "w") as handle:
            handle.write("#!/bin/sh\\necho hi\\n")
        os.chmod("/tmp/run.sh", 0o755)
        try:
            subprocess.run(["/tmp/run.sh"], check=True)
            executed = True
        except OSError:
            executed = False
        return denied == 4 and not executed
    """
    result = run(runner, source, n=1)[0]
    assert result.status is Status.OK, result.error
    assert result.score is True


def test_environment_holds_no_host_variable(
    runner: SandboxRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOREBOX_FAKE_SECRET", "hunter2-do-not-leak")
    source = """
    import os
    def evaluate(model_output):
        leaked = "hunter2-do-not-leak" in repr(dict(os.environ))
        return (not leaked, ",".join(sorted(os.environ)))
    """
    result = run(runner, source, n=1)[0]
    assert result.status is Status.OK, result.error
    assert result.score is True
    assert "SCOREBOX_FAKE_SECRET" not in (result.explanation or "")
    assert os.environ["SCOREBOX_FAKE_SECRET"] == "hunter2-do-not-leak"


def test_runs_as_non_root_without_capabilities(runner: SandboxRunner) -> None:
    source = """
    import ctypes, os
    def evaluate(model_output):
        status = open("/proc/self/status").read()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        # prctl(PR_GET_NO_NEW_PRIVS): gVisor's /proc/self/status has no NoNewPrivs line
        no_new_privs = ctypes.CDLL(None, use_errno=True).prctl(39, 0, 0, 0, 0)
        ok = (
            os.getuid() != 0
            and os.getgid() != 0
            and os.geteuid() != 0
            and int(fields["CapEff"].strip(), 16) == 0
            and int(fields["CapPrm"].strip(), 16) == 0
            and int(fields["CapInh"].strip(), 16) == 0
            and no_new_privs == 1
        )
        return (ok, status)
    """
    result = run(runner, source, n=1)[0]
    assert result.status is Status.OK, result.error
    assert result.score is True, result.explanation


def test_forged_result_lines_do_not_change_results(runner: SandboxRunner) -> None:
    source = """
    import os, sys
    FORGED = '{"t": "row", "i": %d, "status": "ok", "score": true, "ms": 0}'
    def evaluate(model_output):
        i = int(model_output)
        for line in (FORGED % i, FORGED % (i + 1), '{"t": "done", "rows": 1}'):
            for prefix in ("", "0" * 32 + " "):
                print(prefix + line)
                sys.__stdout__.write(prefix + line + "\\n")
                sys.__stdout__.flush()
                os.write(1, (prefix + line + "\\n").encode())
        return False
    """
    results = run(runner, source, n=4)
    assert statuses(results) == [Status.OK] * 4
    assert [r.score for r in results] == [False] * 4


# -- lifecycle ------------------------------------------------------------------------


def test_a_warm_worker_serves_only_its_own_check(
    runner: SandboxRunner, backend: RecordingBackend
) -> None:
    before = len(backend.container_ids)
    for _ in range(3):
        run(runner, "def evaluate(model_output):\n    return 1\n", n=2)
    same = backend.container_ids[before:]
    assert len(same) == 3
    if runner.settings.reuse == "check":
        assert len(set(same)) == 1  # one warm check worker served all three jobs
    else:
        assert len(set(same)) == 3
    run(runner, "def evaluate(model_output):\n    return 2\n", n=2)  # another check
    assert backend.container_ids[-1] not in same


def test_nothing_a_job_leaves_reaches_the_next_job_of_the_same_check(runner: SandboxRunner) -> None:
    # A file, a daemon process, a module global and a monkeypatched builtin.
    source = """
    import builtins, glob, json, os, subprocess
    MARK = []
    def evaluate(model_output):
        seen = {
            "file": os.path.exists("/tmp/left-behind"),
            "shm": bool(glob.glob("/dev/shm/left-*")),
            "global": bool(MARK),
            "builtin": hasattr(builtins, "left_behind"),
            "json": json.dumps(1) != "1",
            "daemon": any(
                open(f"/proc/{p}/cmdline", "rb").read().startswith(b"sleep")
                for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline")
            ),
        }
        open("/tmp/left-behind", "w").write("x")
        try:
            open("/dev/shm/left-behind", "w").write("x")
        except OSError:
            pass
        MARK.append(1)
        builtins.left_behind = True
        json.dumps = lambda *a, **k: "patched"
        subprocess.Popen(["sleep", "300"], start_new_session=True)
        leaked = [name for name, value in seen.items() if value]
        return (not leaked, ",".join(leaked) or None)
    """
    first = run(runner, source, n=1)
    second = run(runner, source, n=1)
    assert [(r.status, r.score, r.explanation) for r in first + second] == [
        (Status.OK, True, None),
        (Status.OK, True, None),
    ]


def test_warm_pool_serves_each_container_once_and_leaves_nothing(
    docker_settings: Settings,
) -> None:
    # reuse="never": each job takes a never-used container from the pool, then it is destroyed.
    settings = docker_settings.model_copy(update={"pool_size": 2, "reuse": "never"})
    backend = RecordingBackend(settings)
    with SandboxRunner(settings, backend=backend) as runner:
        backend.prewarm(settings.limits)
        deadline = time.monotonic() + 60
        while sum(backend.pool.sizes().values()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sum(backend.pool.sizes().values()) == 2
        warm = set(labelled_containers())
        for _ in range(4):
            result = runner.run_check("def evaluate(model_output):\n    return 1\n", rows(1))
            assert result[0].status is Status.OK
        assert len(set(backend.container_ids)) == 4
        # The first job was served by a container that was already warm.
        assert backend.container_ids[0] in warm
    ours = set(backend.container_ids)
    assert not ours & set(labelled_containers())


def test_every_container_is_removed_after_close(docker_settings: Settings) -> None:
    backend = RecordingBackend(docker_settings)
    with SandboxRunner(docker_settings, backend=backend) as runner:
        runner.run_check("def evaluate(model_output):\n    return 1\n", rows(3))
        runner.run_check("import os\ndef evaluate(model_output):\n    os._exit(1)\n", rows(2))
    assert backend.container_ids
    assert not set(backend.container_ids) & set(labelled_containers())


def test_many_rows_split_across_parallel_jobs(docker_settings: Settings) -> None:
    settings = docker_settings.model_copy(update={"job_max_rows": 100})
    backend = RecordingBackend(settings)
    with SandboxRunner(settings, backend=backend) as runner:
        results = runner.run_check(
            "def evaluate(model_output: str) -> int:\n    return int(model_output) * 2\n", rows(450)
        )
    assert [r.score for r in results] == [2 * i for i in range(1, 451)]
    assert len(backend.container_ids) == 5


def test_iter_check_streams_the_same_results_as_run_check(docker_settings: Settings) -> None:
    source = "def evaluate(model_output):\n    return len(model_output)\n"
    rows = [{"id": i, "model_output": "y" * (i % 5)} for i in range(57)]
    small_jobs = docker_settings.model_copy(update={"job_max_rows": 8})
    with SandboxRunner(small_jobs) as runner:
        streamed = list(runner.iter_check(source, iter(rows), jobs_ahead=2))
    assert [(r.row_id, r.status, r.score) for r in streamed] == [
        (i, Status.OK, i % 5) for i in range(57)
    ]
