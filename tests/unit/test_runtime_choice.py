"""SCOREBOX_RUNTIME against the runtimes the Docker engine offers (pure)."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError, RuntimeUnavailableError
from engine.sandbox.docker.containers import require_runtime


@pytest.mark.parametrize(
    ("runtime", "offered"),
    [(None, ("runc",)), ("", ("runc",)), ("runc", ("runc",)), ("runsc", ("runc", "runsc"))],
)
def test_an_offered_or_unset_runtime_is_accepted(
    runtime: str | None, offered: tuple[str, ...]
) -> None:
    require_runtime(runtime, offered, None)


def test_missing_runsc_names_the_fix() -> None:
    with pytest.raises(RuntimeUnavailableError) as caught:
        require_runtime("runsc", ("runc",), "tcp://docker-host:2375")
    message = str(caught.value)
    assert "SCOREBOX_RUNTIME=runsc" in message
    assert "tcp://docker-host:2375" in message
    assert "offers only runc" in message
    assert "scripts/gvisor.sh" in message and "unset SCOREBOX_RUNTIME" in message
    assert isinstance(caught.value, ConfigurationError)


def test_another_missing_runtime_names_daemon_json() -> None:
    with pytest.raises(RuntimeUnavailableError, match="register kata-runtime in the Docker host"):
        require_runtime("kata-runtime", ("runc", "runsc"), None)
