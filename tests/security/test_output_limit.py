"""The output cap acts on the first bytes past it, not when a large write has been read whole."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings

pytestmark = pytest.mark.docker

LIMITS = Limits(row_timeout_seconds=30, wall_seconds_max=120)


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    with SandboxRunner(docker_settings) as runner:
        yield runner


@pytest.mark.parametrize(
    "write",
    [
        "os.write(1, b'x' * 50_000_000)",  # one write: one attach frame of 50 MB
        "os.write(2, b'x' * 50_000_000)",
    ],
    ids=["fd1", "fd2"],
)
def test_a_single_50_mb_write_is_stopped_at_the_cap(runner: SandboxRunner, write: str) -> None:
    # Holds under runsc too: the check's fd 1 and 2 lead to a pipe the harness parent counts.
    source = f"import os\n\ndef evaluate(model_output):\n    {write}\n    return True\n"
    started = time.monotonic()
    result = runner.run_check(CodeCheck(source), [{"model_output": "x"}], LIMITS)[0]
    elapsed = time.monotonic() - started
    assert result.status is Status.OUTPUT_LIMIT, result
    # Reading all 50 MB before counting took 12.8 s; stopping at the cap about a
    # second. The bound is generous for a loaded machine.
    assert elapsed < 8, f"the output cap acted after {elapsed:.1f} s"
