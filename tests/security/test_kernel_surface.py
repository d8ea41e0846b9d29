"""io_uring and the harness's descriptors, under both runtimes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.contract import Status
from engine.sandbox.runner import SandboxRunner
from engine.settings import Settings
from tests.security.test_hostile_checks import probe

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    with SandboxRunner(docker_settings) as runner:
        yield runner


def test_io_uring_syscalls_are_denied(runner: SandboxRunner) -> None:
    # io_uring_setup(8, &params), io_uring_enter(-1, ...), io_uring_register(-1, ...): the
    # numbers are 425-427 on every architecture the image is built for (x86_64, aarch64).
    status, _score, detail = probe(
        runner,
        """
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)
        out = []
        calls = {425: (8, params), 426: (-1, 1, 0, 0, None, 0), 427: (-1, 0, None, 0)}
        for number, args in calls.items():
            ctypes.set_errno(0)
            got = libc.syscall(number, *args)
            out.append(f"{number}:{got}:{ctypes.get_errno()}")
            if got >= 0:
                os.close(got)
        return (True, " ".join(out))
        """,
    )
    assert status is Status.OK and detail is not None, detail
    for part in detail.split():
        _number, result, errno = part.split(":")
        assert int(result) == -1, detail  # io_uring_setup must not give an fd
        assert int(errno) in (1, 38), detail  # EPERM or ENOSYS: never EBADF/EINVAL (reachable)


def test_the_harness_descriptors_cannot_be_opened(
    runner: SandboxRunner, sandbox_runtime: str | None
) -> None:
    # Under runsc gVisor's procfs lets another uid list /proc/1/fd (names only);
    # under both runtimes no descriptor of the harness (PID 1) can be opened.
    status, _score, detail = probe(
        runner,
        """
        try:
            names = os.listdir("/proc/1/fd")
            listed = "listed"
        except OSError:
            names, listed = [str(n) for n in range(64)], "unlisted"
        opened = []
        for name in names:
            for mode in (os.O_RDONLY, os.O_WRONLY):
                try:
                    fd = os.open(f"/proc/1/fd/{name}", mode)
                except OSError:
                    continue
                os.close(fd)
                opened.append(name)
        return (not opened, f"{listed} opened={opened}")
        """,
    )
    assert status is Status.OK and detail is not None, detail
    assert detail.endswith("opened=[]"), detail
    if sandbox_runtime != "runsc":
        assert detail.startswith("unlisted"), detail  # runc: non-dumpable hides the directory
