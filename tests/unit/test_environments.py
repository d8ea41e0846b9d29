"""engine.environments without Docker: the block's key, pip's command line, offline mode,
remembered failures and a pruned image (an in-memory Installer stands in for Docker)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.environments import EnvironmentRecord, Environments, environment_key, read_block
from engine.environments.pip import download_command, platform_tags
from engine.errors import EnvironmentBuildError, PackageIndexError
from engine.settings import Settings


class MemoryInstaller:
    """Environments kept in a dict; counts lookups."""

    def __init__(self) -> None:
        self.images: dict[str, EnvironmentRecord] = {}
        self.finds = 0

    def find_environment(self, key: str) -> EnvironmentRecord | None:
        self.finds += 1
        return self.images.get(key)

    def install_environment(
        self,
        key: str,
        wheels: Path,
        requirements: Sequence[str],
        *,
        timeout: float,
        max_bytes: int,
        log_file: Path,
    ) -> EnvironmentRecord:
        raise AssertionError("no build expected")

    def list_environments(self) -> list[EnvironmentRecord]:
        return list(self.images.values())

    def remove_environment(self, key: str) -> bool:
        return self.images.pop(key, None) is not None


def _pip_fails_with(monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    """Every pip the build runs exits 1, having printed ``output``."""

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", output)

    monkeypatch.setattr(subprocess, "run", fake_run)


def _record(key: str, base: str = "img:1") -> EnvironmentRecord:
    return EnvironmentRecord(
        key, ("textstat==0.7.4",), {"textstat": "0.7.4"}, 10, base, 0, 1, f"scorebox-env:{key}"
    )


def test_the_key_is_the_normalised_set_and_the_base_image() -> None:
    one = read_block('# /// script\n# dependencies = ["TextStat==0.7.4", "Py_Phen"]\n# ///\n')
    two = read_block('# /// script\n# dependencies = ["py-phen", "textstat==0.7.4"]\n# ///\n')
    assert one.requirements == two.requirements == ("py-phen", "textstat==0.7.4")
    assert environment_key(one.requirements, "img:1") == environment_key(two.requirements, "img:1")
    assert environment_key(one.requirements, "img:1") != environment_key(one.requirements, "img:2")


def test_pip_download_is_wheels_only_for_the_sandbox(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        package_index_url="https://mirror.example/simple",
        packages_wheelhouse=tmp_path / "wh",
    )
    command = download_command(["textstat==0.7.4"], tmp_path, settings)
    assert command[1:4] == ["-m", "pip", "download"]
    assert "--only-binary=:all:" in command
    assert command[command.index("--python-version") + 1] == "3.11"
    assert command[command.index("--index-url") + 1] == "https://mirror.example/simple"
    assert command[command.index("--find-links") + 1] == str(tmp_path / "wh")
    assert "manylinux_2_36_x86_64" in platform_tags("x86_64")
    assert "manylinux_2_37_x86_64" not in platform_tags("x86_64")


def test_offline_mode_refuses_to_build(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", packages_offline=True)
    environments = Environments(settings, MemoryInstaller())
    with pytest.raises(EnvironmentBuildError, match=r"SCOREBOX_PACKAGES_OFFLINE.*env build"):
        environments.ensure(["textstat==0.7.4"])


def test_a_failure_is_remembered_until_forgotten(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1")
    environments = Environments(settings, MemoryInstaller())
    key = environments.key(["textstat==0.7.4"])
    environments._remember_failure(key, "environment x failed to build: no wheel")
    with pytest.raises(EnvironmentBuildError, match="no wheel"):
        environments.ensure(["textstat==0.7.4"])  # no second build attempt
    assert environments.state(["textstat==0.7.4"]).state == "failed"
    environments.forget_failure()
    assert environments.state(["textstat==0.7.4"]).state == "missing"


def test_a_pruned_image_is_looked_up_again(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1")
    installer = MemoryInstaller()
    environments = Environments(settings, installer)
    key = environments.key(["textstat==0.7.4"])
    installer.images[key] = _record(key)
    source = '# /// script\n# dependencies = ["textstat==0.7.4"]\n# ///\n'
    assert environments.image_for(source) == f"scorebox-env:{key}"
    assert environments.image_for(source) == f"scorebox-env:{key}"
    assert installer.finds == 1  # cached after the first lookup
    environments.forget_image(f"scorebox-env:{key}")
    environments.image_for(source)
    assert installer.finds == 2


def test_prune_keeps_the_current_images_environments(tmp_path: Path) -> None:
    installer = MemoryInstaller()
    installer.images = {"a": _record("a", "img:1"), "b": _record("b", "img:0")}
    environments = Environments(Settings(data_dir=tmp_path, image="img:1"), installer)
    assert environments.prune() == ["b"]
    assert environments.prune(all_bases=True) == ["a"]


def test_a_download_past_the_build_time_limit_names_the_setting(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", env_build_timeout_seconds=0.01)
    environments = Environments(settings, MemoryInstaller())
    with pytest.raises(EnvironmentBuildError) as caught:
        environments.ensure(["textstat==0.7.4"])
    message = str(caught.value)
    assert "passed SCOREBOX_ENV_BUILD_TIMEOUT_SECONDS=0" in message
    assert "build log:" in message
    assert environments.state(["textstat==0.7.4"]).state == "failed"


def test_a_slow_download_is_a_retryable_failure_with_a_short_window(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path, image="img:1", env_build_timeout_seconds=0.01, env_retry_seconds=60
    )
    environments = Environments(settings, MemoryInstaller())
    with pytest.raises(PackageIndexError, match=r"answered too slowly.*retryable"):
        environments.ensure(["textstat==0.7.4"])
    state = environments.state(["textstat==0.7.4"])
    assert (state.state, state.retryable) == ("failed", True)
    assert state.retry_after_seconds is not None and 55 < state.retry_after_seconds <= 60
    with pytest.raises(PackageIndexError):  # remembered: answered without a download
        environments.ensure(["textstat==0.7.4"])


def test_a_retryable_failure_expires_after_env_retry_seconds(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image="img:1", env_retry_seconds=0)
    environments = Environments(settings, MemoryInstaller())
    key = environments.key(["textstat==0.7.4"])
    environments._remember_failure(key, "index down", retryable=True)
    assert environments.state(["textstat==0.7.4"]).state == "missing"  # may try again now
    environments._remember_failure(key, "no wheel")  # not retryable: kept 300 s
    state = environments.state(["textstat==0.7.4"])
    assert (state.state, state.retryable) == ("failed", False)


@pytest.mark.parametrize(
    ("pip_output", "retryable"),
    [
        (
            "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, "
            "status=None)) after connection broken by 'NewConnectionError(\"...: Failed to "
            "establish a new connection: [Errno 111] Connection refused\")': /simple/x/\n"
            "ERROR: Could not find a version that satisfies the requirement x==1 "
            "(from versions: none)\nERROR: No matching distribution found for x==1\n",
            True,
        ),
        ("ERROR: Could not fetch URL https://idx/simple/x/: HTTP error 503\n", True),
        ("ReadTimeoutError(\"HTTPSConnectionPool(host='idx', port=443): Read timed out.\")", True),
        (
            "ERROR: Could not find a version that satisfies the requirement langdetect==1.0.9 "
            "(from versions: none)\nERROR: No matching distribution found for langdetect==1.0.9\n",
            False,
        ),
    ],
)
def test_pip_output_tells_an_unreachable_index_from_a_missing_wheel(
    tmp_path: Path, pip_output: str, retryable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pip_fails_with(monkeypatch, pip_output)
    environments = Environments(Settings(data_dir=tmp_path, image="img:1"), MemoryInstaller())
    with pytest.raises(EnvironmentBuildError) as caught:
        environments.ensure(["x==1"])
    assert isinstance(caught.value, PackageIndexError) is retryable, str(caught.value)
    assert ("could not reach the package index" in str(caught.value)) is retryable
    assert ("no wheel of" in str(caught.value)) is not retryable


def test_a_build_that_ends_after_close_tells_no_listener(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server shutting down closes its environments: a build still running then ends
    without writing to the audit log (whose store is going away), and is still remembered."""
    _pip_fails_with(monkeypatch, "ERROR: connection broken\n")
    environments = Environments(Settings(data_dir=tmp_path, image="img:1"), MemoryInstaller())
    told: list[object] = []
    environments.listeners["audit"] = told.append
    with pytest.raises(PackageIndexError):
        environments.ensure(["x==1"])
    assert len(told) == 1  # open: every build attempt is told
    environments.forget_failure()
    environments.close()
    with pytest.raises(PackageIndexError):
        environments.ensure(["x==1"])
    assert len(told) == 1
    assert environments.state(["x==1"]).state == "failed"
