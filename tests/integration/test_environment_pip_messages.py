"""A failed environment build, said to a tenant: pip runs for real (a subprocess) against an
index nobody answers, and its output reaches the message and the build log without the
index's token or a host path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.environments.build import Environments
from engine.errors import EnvironmentBuildError
from engine.settings import Settings


def test_a_failed_build_names_no_index_and_no_host_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build error a tenant reads: pip's tail without the index or the data dir."""
    monkeypatch.setenv("PIP_RETRIES", "0")  # nothing listens on port 9: fail at once
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    settings = Settings(
        data_dir=tmp_path,
        image="img:1",
        package_index_url="https://ci:TOKEN123@127.0.0.1:9/simple",
    )

    class NoInstaller:
        def find_environment(self, key: str) -> None:
            return None

    environments = Environments(settings, NoInstaller())  # type: ignore[arg-type]
    with pytest.raises(EnvironmentBuildError) as caught:
        environments.ensure(["textstat==0.7.4"])
    message = str(caught.value)
    assert "TOKEN123" not in message and str(tmp_path) not in message, message
    assert "build log: `scorebox env show" in message
    log = environments.log_path(environments.key(["textstat==0.7.4"])).read_text()
    assert "TOKEN123" not in log and "https://***@127.0.0.1:9/simple" in log
