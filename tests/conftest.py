"""Shared fixtures. Docker-backed fixtures never skip when CI=true."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence

import pytest

from engine.settings import Settings
from engine.storage import Run, RunCheck, RunStatus, new_id, utcnow

pytest_plugins = ["tests.fake_llm", "pytester"]

TEST_LABEL = "scorebox.test"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


#: The servers a test may stop, restart or flush; one each per parallel worker.
WORKER_SERVICES = ("SCOREBOX_TEST_POSTGRES_URL", "SCOREBOX_TEST_REDIS_URL")


def _take_worker_services() -> None:
    """Give this pytest-xdist worker its own PostgreSQL and Redis.

    Tests restart both servers and flush Redis, which must not reach a test running in
    another worker. ``scripts/dev.sh test`` starts one server per worker and lists their
    URLs, space-separated, in ``SCOREBOX_TEST_POSTGRES_URLS`` and ``SCOREBOX_TEST_REDIS_URLS``;
    worker ``gwN`` takes the N-th. Outside xdist, or with one worker, nothing changes.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    if not worker.startswith("gw") or count < 2:
        return
    index = int(worker.removeprefix("gw"))
    for name in WORKER_SERVICES:
        if not os.environ.get(name):
            continue  # the tests that need it skip (or fail in CI) as they do without xdist
        urls = os.environ.get(f"{name}S", "").split()
        if len(urls) < count:
            raise pytest.UsageError(
                f"{count} parallel workers share {name}: tests restart and flush it. Start one "
                f"server per worker and list their URLs in {name}S (scripts/dev.sh test does), "
                "or run with -n 0"
            )
        os.environ[name] = urls[index]


def pytest_configure(config: pytest.Config) -> None:
    _take_worker_services()


def _docker_ready(image: str) -> str | None:
    """None when the engine answers and the image exists, else why not."""
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker CLI unusable: {exc}"
    if info.returncode != 0:
        return "Docker engine not reachable: run `scripts/dev.sh setup`"
    inspect = subprocess.run(
        ["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False
    )
    if inspect.returncode != 0:
        return f"sandbox image {image} missing: run `scorebox image build`"
    return None


#: OCI runtimes the sandbox suites run under (SCOREBOX_TEST_RUNTIMES=runc narrows it locally).
RUNTIMES = ("runc", "runsc")
#: Tests under these paths (relative to the repository) run once per runtime.
RUNTIME_PARAMETRISED = (
    "tests/security/",
    "tests/integration/test_sandbox.py",
    "tests/integration/test_result_blocks.py",
    "tests/integration/test_policies.py",
    "tests/integration/test_environments.py",
    "tests/integration/test_formats_sandbox.py",
    "tests/integration/test_formats_published.py",
)


def _runtime_available(runtime: str) -> str | None:
    """None when the Docker engine offers ``runtime``, else why not."""
    try:
        out = subprocess.run(
            ["docker", "info", "--format", "{{range $name, $_ := .Runtimes}}{{$name}} {{end}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker CLI unusable: {exc}"
    if runtime not in out.stdout.split():
        return f"the Docker engine does not offer {runtime}: run `sudo scripts/gvisor.sh`"
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the sandbox and hostile-check suites under every runtime in RUNTIMES."""
    if "sandbox_runtime" not in metafunc.fixturenames:
        return
    where = metafunc.definition.path.relative_to(metafunc.config.rootpath).as_posix()
    if not where.startswith(RUNTIME_PARAMETRISED):
        return
    wanted = os.environ.get("SCOREBOX_TEST_RUNTIMES", "")
    runtimes = [r for r in RUNTIMES if not wanted or r in wanted.split(",")]
    if _in_ci() and runtimes != list(RUNTIMES):
        runtimes = list(RUNTIMES)  # CI always covers both
    metafunc.parametrize("sandbox_runtime", runtimes, indirect=True, scope="session")


@pytest.fixture(scope="session")
def sandbox_runtime(request: pytest.FixtureRequest) -> str | None:
    """This test's OCI runtime: a parameter in the sandbox suites, else the default."""
    runtime: str | None = getattr(request, "param", None)
    if runtime in (None, "runc"):
        return runtime
    problem = _runtime_available(runtime)
    if problem is not None:
        if _in_ci() or os.environ.get("SCOREBOX_TEST_DOCKER") == "1":
            pytest.fail(f"{runtime} tests must run here: {problem}", pytrace=False)
        pytest.skip(problem)
    return runtime


@pytest.fixture(scope="session")
def docker_settings(
    tmp_path_factory: pytest.TempPathFactory, sandbox_runtime: str | None
) -> Settings:
    """Settings for tests that need the real Docker engine and the sandbox image."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("scorebox-data"),
        pool_size=0,
        max_parallel_jobs=2,
        container_labels={TEST_LABEL: "1"},
        runtime=sandbox_runtime,
    )
    problem = _docker_ready(settings.image)
    if problem is not None:
        if _in_ci() or os.environ.get("SCOREBOX_TEST_DOCKER") == "1":
            pytest.fail(f"Docker tests must run here: {problem}", pytrace=False)
        pytest.skip(problem)
    return settings


def remove_test_containers(owner: str) -> None:
    """``docker rm -f`` the test-labelled containers whose owner label (host:pid) is ``owner``."""
    from engine.sandbox.docker.containers import LABEL_OWNER

    try:
        ids = subprocess.run(
            [
                "docker",
                "ps",
                "-aq",
                "--filter",
                f"label={TEST_LABEL}",
                "--filter",
                f"label={LABEL_OWNER}={owner}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout.split()
        if ids:
            subprocess.run(
                ["docker", "rm", "-f", *ids], capture_output=True, timeout=120, check=False
            )
    except (OSError, subprocess.TimeoutExpired):
        pass


@pytest.fixture(scope="session", autouse=True)
def _remove_test_containers() -> Iterator[None]:
    """Remove test-labelled containers this pytest process made and left behind.

    Scoped by the owner label (host:pid) so a concurrent test session on the same
    engine keeps its containers.
    """
    yield
    from engine.sandbox.docker.containers import owner_label

    remove_test_containers(owner_label())


def assert_not_behind(during: Sequence[tuple[int, int]], total: int) -> None:
    """Fairness measured in rows, not seconds: each small request (``during``: the big run's
    rows done before and after it) was answered while the big run was still going, and
    while less than half of what the big run had left got done. Queued behind the big
    run (FIFO), a request is answered only after all of it, however fast the machine."""
    assert during, "no request was measured"
    for before, after in during:
        assert after < total, f"answered only after the big run's {total} rows: {during}"
        assert after - before < (total - before) / 2, f"waited for most of the big run: {during}"


def queued_run(tenant_id: str, rows: int, checks: int = 1) -> Run:
    """A queued run (not stored yet) of ``rows`` rows and code checks ``c0``, ``c1``..."""
    return Run(
        id=new_id("run"),
        tenant_id=tenant_id,
        status=RunStatus.QUEUED,
        checks=[RunCheck("code", f"c{i}", 1, f"chk_c{i}") for i in range(checks)],
        limits=None,
        labels={},
        row_count=rows,
        error=None,
        created_at=utcnow(),
        started_at=None,
        finished_at=None,
    )


@pytest.fixture
def silent_index() -> Iterator[str]:
    """A package index that accepts connections and never answers (a stalled proxy or
    mirror): every download from it hangs until its caller gives up."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/simple"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()
