"""The install container's own bounds, past the host's checks: a zip bomb that reached it
fills a tmpfs of SCOREBOX_ENV_MAX_MB and fails, never the Docker disk; and a committed
environment image says what it is (its check containers are not build containers)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from engine.errors import EnvironmentBuildError
from engine.sandbox.docker.environments import (
    ENV_LABEL,
    ENV_LABEL_IMAGE,
    DockerEnvironments,
    docker_environments,
)
from engine.settings import Settings

pytestmark = pytest.mark.docker


def _bomb(folder: Path) -> None:
    """Eight members of 4 MB of zeros (each under the file-size cap): 32 MB unpacked."""
    path = folder / "bomb-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for i in range(8):
            archive.writestr(f"bomb/{i}.bin", b"\0" * (4 * 1024 * 1024))
        info = "bomb-1.0.dist-info"
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: bomb\nVersion: 1.0\n")
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")


def test_an_install_past_its_size_fills_a_bounded_tmpfs_not_the_disk(
    docker_settings: Settings, tmp_path: Path
) -> None:
    settings = docker_settings.model_copy(update={"data_dir": tmp_path / "data"})
    environments = docker_environments(settings)
    installer = environments.installer
    assert isinstance(installer, DockerEnvironments)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _bomb(wheels)
    log_file = tmp_path / "build.log"
    environments._download_pip(wheels, log_file)  # pip's own wheel, as a build has it
    key = "test-bomb-" + tmp_path.name[-8:].replace("_", "-").lower()
    with pytest.raises(EnvironmentBuildError, match="past SCOREBOX_ENV_MAX_MB=16"):
        installer.install_environment(
            key, wheels, ["bomb==1.0"], timeout=120, max_bytes=16 * 1024 * 1024, log_file=log_file
        )
    assert installer.find_environment(key) is None
    assert "No space left on device" in log_file.read_text()


def test_an_environment_image_is_labelled_as_an_environment(docker_settings: Settings) -> None:
    environments = docker_environments(docker_settings)
    requirements = ["text-unidecode==1.2"]  # built here: no image of an older build
    environments.installer.remove_environment(environments.key(requirements))
    record = environments.ensure(requirements)
    image = environments.installer.client.images.get(record.image)  # type: ignore[attr-defined]
    assert image.labels[ENV_LABEL] == ENV_LABEL_IMAGE  # not the install container's "build"
    assert image.labels[f"{ENV_LABEL}.key"] == record.key
