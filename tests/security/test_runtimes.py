"""The sandbox runs under the OCI runtime the suite asks for (runc and runsc in CI)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from engine.contract import Status
from engine.models import Limits
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def runner(docker_settings: Settings) -> Iterator[SandboxRunner]:
    with SandboxRunner(docker_settings) as runner:
        yield runner


def test_checks_run_under_the_requested_runtime(
    runner: SandboxRunner, sandbox_runtime: str | None
) -> None:
    # gVisor's Sentry is its own kernel: it reports a release of its own, never the host's.
    source = "import os\n\ndef evaluate(model_output):\n    return (True, os.uname().release)\n"
    result = runner.run_check(CodeCheck(source), [{"model_output": "x"}], Limits())[0]
    assert result.status is Status.OK, result.error
    if sandbox_runtime == "runsc":
        assert result.explanation != os.uname().release
    else:
        assert result.explanation == os.uname().release
