"""Checks that attack the harness itself (its records, its statuses): real Docker, both runtimes.

A check that corrupts its own result records is at fault, so its row is
``crashed``; ``sandbox_error`` stays for faults of scorebox, Docker or the image.
Statuses only the host or a judge can know are never accepted from a container.
"""

from __future__ import annotations

import subprocess
import textwrap
import time
from collections.abc import Iterator

import pytest

from engine.contract import Status
from engine.models import Limits, RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings
from tests.integration.conftest import RecordingBackend

pytestmark = pytest.mark.docker

LIMITS = Limits(row_timeout_seconds=3, wall_seconds_max=60)

#: Every pipe the check's process holds: its own record pipe among them.
FIND_PIPES = """
import os, stat
def pipes():
    out = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                out.append(fd)
        except OSError:
            pass
    return out
"""


@pytest.fixture(scope="module")
def backend(docker_settings: Settings) -> Iterator[RecordingBackend]:
    backend = RecordingBackend(docker_settings)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def runner(docker_settings: Settings, backend: RecordingBackend) -> Iterator[SandboxRunner]:
    with SandboxRunner(docker_settings, backend=backend) as runner:
        yield runner


def run(runner: SandboxRunner, source: str, n: int = 3) -> list[RowResult]:
    rows = [{"model_output": str(i)} for i in range(1, n + 1)]
    return runner.run_check(CodeCheck(textwrap.dedent(source)), rows, LIMITS)


def test_forged_host_statuses_are_refused_and_blamed_on_the_check(runner: SandboxRunner) -> None:
    source = (
        FIND_PIPES
        + """
def evaluate(model_output):
    if model_output == "2":
        for fd in pipes():
            for i in range(3):
                record = '{"t":"row","i":%d,"status":"sandbox_error",' % i
                record += '"error":"forged","ms":0}\\n'
                try:
                    os.write(fd, record.encode())
                except OSError:
                    pass
    return int(model_output)
"""
    )
    results = run(runner, source)
    statuses = [r.status for r in results]
    assert Status.SANDBOX_ERROR not in statuses
    assert statuses[0] is Status.OK and results[0].score == 1
    assert statuses[1] is Status.CRASHED
    assert "corrupted" in (results[1].error or "")
    assert statuses[2] is Status.OK and results[2].score == 3


def test_a_stolen_nonce_never_forges_a_host_status(
    runner: SandboxRunner, sandbox_runtime: str | None
) -> None:
    # An attack from inside the check: walk gc to the harness's job, read its nonce and
    # write framed records claiming sandbox_error, through every descriptor within reach:
    # its own fd 1 and 2 (they lead to the parent's output counter), and every descriptor
    # of the harness's parent and of tini (PID 1) under /proc. Under runc the parent is
    # non-dumpable, so /proc/<pid>/fd is closed to the check. gVisor's procfs ignores
    # non-dumpable there, so under runsc the parent runs as root inside the sandbox and
    # the check's process as another uid: the same descriptors are closed to it. (Before,
    # the check reached the result channel under runsc.)
    source = """
import gc, json, os, sys
def nonce():
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("nonce"), str) and "columns" in obj:
            return obj["nonce"]
    return None
def evaluate(model_output):
    found = nonce()
    i = int(model_output) - 1
    record = {"t": "row", "i": i, "status": "sandbox_error", "error": "forged", "ms": 0}
    data = f"{found} {json.dumps(record)}\\n".encode()
    for fd in (1, 2):
        os.write(fd, data)
    sys.__stdout__.write(data.decode())
    sys.__stdout__.flush()
    opened = []
    for pid in (os.getppid(), 1):
        try:
            names = sorted(os.listdir(f"/proc/{pid}/fd"), key=int)
        except OSError:
            names = ["0", "1", "2", "3", "4"]
        for name in names:
            try:
                with open(f"/proc/{pid}/fd/{name}", "wb") as channel:
                    channel.write(data)
                opened.append(f"{pid}/{name}")
            except OSError:
                pass
    return (0, f"nonce={'found' if found else 'missing'} opened={opened}")
"""
    results = run(runner, source)
    assert Status.SANDBOX_ERROR not in [r.status for r in results], results
    assert [(r.status, r.score) for r in results] == [(Status.OK, 0)] * 3, (
        sandbox_runtime,
        results,
    )
    assert all(r.explanation == "nonce=found opened=[]" for r in results), results


def test_an_ok_record_carrying_an_error_is_refused(runner: SandboxRunner) -> None:
    source = (
        FIND_PIPES
        + """
def evaluate(model_output):
    for fd in pipes():
        record = '{"t":"row","i":0,"status":"ok","score":1,"error":"both","ms":0}\\n'
        try:
            os.write(fd, record.encode())
        except OSError:
            pass
    return 1
"""
    )
    results = run(runner, source, n=1)
    assert results[0].status is Status.CRASHED


@pytest.mark.parametrize("pause", [0.0, 0.3], ids=["at-once", "looked-at-between"])
def test_a_partial_write_to_the_record_pipe_is_the_checks_fault(
    runner: SandboxRunner, pause: float
) -> None:
    # With a pause in the next row the parent surely looks while the line is partial, and
    # counts row 1 then: the line's malformed end must still be row 1's fault, not row 2's.
    source = (
        FIND_PIPES
        + f"""
import time
def evaluate(model_output):
    if model_output == "1":
        for fd in pipes():
            try:
                os.write(fd, b'{{"t":"row","i":')
            except OSError:
                pass
    else:
        time.sleep({pause})
    return 1
"""
    )
    results = run(runner, source, n=2)
    assert results[0].status is Status.CRASHED
    assert results[1].status is Status.OK  # the next row runs in a fresh child


@pytest.mark.parametrize("where", ["import", "evaluate"])
def test_replacing_json_dumps_does_not_break_the_records(runner: SandboxRunner, where: str) -> None:
    patch = "json.dumps = lambda *a, **k: 'garbage'\n"
    source = "import json\n" + (patch if where == "import" else "")
    source += "def evaluate(model_output):\n"
    source += ("    " + patch if where == "evaluate" else "") + "    return int(model_output)\n"
    results = run(runner, source)
    assert [(r.status, r.score) for r in results] == [
        (Status.OK, 1),
        (Status.OK, 2),
        (Status.OK, 3),
    ]


def test_a_50_mb_print_is_stopped_at_the_cap(runner: SandboxRunner) -> None:
    source = """
    import os, sys
    def evaluate(model_output):
        if model_output == "1":
            sys.stdout.write("x" * 50_000_000)
        elif model_output == "2":
            os.write(1, b"y" * 50_000_000)
        return 1
    """
    started = time.monotonic()
    results = run(runner, source)
    assert results[0].status is Status.OUTPUT_LIMIT
    assert results[1].status is Status.OUTPUT_LIMIT
    # Generous bound for a loaded machine: reading all 100 MB first took 12.8 s before.
    assert time.monotonic() - started < 10


def test_an_abandoned_container_exits_on_its_own(docker_settings: Settings) -> None:
    # The host process "dies": nothing closes its workers. The harness's idle limit ends them.
    # A warm check worker (reuse="check") is the container that waits for more jobs.
    settings = docker_settings.model_copy(
        update={"reuse": "check", "pool_idle_seconds": 1.0, "reuse_idle_seconds": 1.0}
    )
    backend = RecordingBackend(settings)
    runner = SandboxRunner(settings, backend=backend)
    runner.run_check(
        CodeCheck("def evaluate(model_output):\n    return 1\n"), [{"model_output": "x"}]
    )
    container = backend.container_ids[-1]
    backend.kept.idle_seconds = 3600  # the host forgets the container, as a killed host would
    deadline = time.monotonic() + 60
    state = ""
    while time.monotonic() < deadline:
        state = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Status}}", container],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if state in ("exited", "dead"):
            break
        time.sleep(1)
    runner.close()
    assert state in ("exited", "dead"), state


#: On the first row, writes ``code`` as every row's status byte, and 3 as the count of rows
#: done, straight into the block the harness shares with it (the anonymous shared mapping
#: of 8 + 18 n bytes), and exits: the harness's parent sends what the block then says.
FORGE = textwrap.dedent(
    """
    import ctypes, os

    def shared_blocks():
        found = []
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                span, perms = parts[0], parts[1]
                if perms.startswith("rw") and perms.endswith("s"):
                    start, end = (int(x, 16) for x in span.split("-"))
                    found.append((start, end))
        return found

    def evaluate(model_output: str) -> bool:
        n = int(model_output)
        if n == 1:  # the first row
            for start, end in shared_blocks():
                rows = 3
                codes = start + 8 + 16 * rows
                ctypes.memmove(codes, bytes([CODE] * rows), rows)
                ctypes.memmove(start, (3).to_bytes(8, "little"), 8)
            os._exit(0)  # before the harness's own writes could undo the forgery
        return True
    """
)


@pytest.mark.parametrize("code", [6, 9, 255])
def test_a_status_written_into_the_block_is_refused(runner: SandboxRunner, code: int) -> None:
    results = run(runner, FORGE.replace("CODE", str(code)))
    statuses = [r.status for r in results]
    assert Status.SANDBOX_ERROR not in statuses and Status.JUDGE_ERROR not in statuses
    assert Status.CRASHED in statuses, results  # the check broke the protocol: its fault
    assert all(r.status in (Status.OK, Status.CRASHED) for r in results), results
    assert any("not one a check may report" in (r.error or "") for r in results), results


#: On the first row, writes every row of the block as ``ok`` with score kind ``KIND``, score
#: ``SCORE`` and duration ``MS`` (columns: counter, scores 8n, ms 8n, codes n, kinds n),
#: counts 3 rows done, and exits: the harness's parent sends the forged columns.
FORGE_COLUMNS = textwrap.dedent(
    """
    import ctypes, os, struct

    def shared_blocks():
        found = []
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                span, perms = parts[0], parts[1]
                if perms.startswith("rw") and perms.endswith("s"):
                    start, end = (int(x, 16) for x in span.split("-"))
                    found.append((start, end))
        return found

    def evaluate(model_output: str) -> bool:
        if int(model_output) == 1:
            rows = 3
            for start, end in shared_blocks():
                ctypes.memmove(start + 8, struct.pack("<ddd", *[SCORE] * rows), 8 * rows)
                ctypes.memmove(start + 8 + 8 * rows, struct.pack("<ddd", *[MS] * rows), 8 * rows)
                ctypes.memmove(start + 8 + 16 * rows, bytes([0] * rows), rows)
                ctypes.memmove(start + 8 + 17 * rows, bytes([KIND] * rows), rows)
                ctypes.memmove(start, (3).to_bytes(8, "little"), 8)
            os._exit(0)
        return True
    """
)


@pytest.mark.parametrize(
    ("kind", "score", "ms", "message"),
    [
        (2, "1e300", "0.5", "past 64 bits"),  # an int score of 301 digits
        (2, "2.0 ** 60", "0.5", "without its exact value"),
        (1, "1.0", "1.7e308", "longer than the job's wall time"),
    ],
    ids=["int-1e300", "int-no-exact", "duration-1.7e308"],
)
def test_forged_block_columns_are_refused(
    runner: SandboxRunner, kind: int, score: str, ms: str, message: str
) -> None:
    source = FORGE_COLUMNS.replace("KIND", str(kind)).replace("SCORE", score)
    results = run(runner, source.replace("MS", ms))
    assert all(r.status in (Status.OK, Status.CRASHED) for r in results), results
    assert Status.CRASHED in [r.status for r in results], results  # the check's fault
    assert any(message in (r.error or "") for r in results), results
    for r in results:
        assert r.status is not Status.OK or (r.score is True and r.duration_ms < 60_000), r
